package changes

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/testutil"
)

// TestNestedRepositoriesNeverEntered: a tree holding a submodule, a
// repository added with git add and one in an untracked directory, each
// with a filter, a textconv, a file-system monitor and hooks of its own
// and its tracked file changed (same size, new time) before every step:
// the summary, the patches, a tracker's updates (whole and of paths
// inside them) and Live's summaries run nothing from any of them. A
// gitlink whose commit did not move is no change.
func TestNestedRepositoriesNeverEntered(t *testing.T) {
	dir := repo(t, map[string]string{"a.txt": "a\n"})
	script, marker := testutil.MarkerScript(t)
	nested := testutil.AddNestedRepos(t, dir, script)
	write(t, dir, "a.txt", "a\nchanged\n")
	inside := []string{nested.Submodule + "/f.txt", nested.Added + "/f.txt", nested.Loose + "/f.txt"}
	c := ctx(t)
	base, err := Base(c, dir, "")
	if err != nil {
		t.Fatal(err)
	}
	// The untracked repository shows as a new gitlink, as git diff shows it.
	want := []string{"a.txt", nested.Loose}
	names := func(files []File) []string {
		var out []string
		for _, f := range files {
			out = append(out, f.Path)
		}
		slices.Sort(out)
		return out
	}

	nested.Stir()
	files, err := Summary(c, dir, base, nil)
	if err != nil || !slices.Equal(names(files), want) {
		t.Errorf("Summary: %q, %v; want %q", names(files), err, want)
	}
	testutil.NotRun(t, "Summary", marker)
	nested.Stir()
	if _, err := Summary(c, dir, base, inside); err != nil {
		t.Error(err)
	}
	testutil.NotRun(t, "Summary of paths inside them", marker)

	nested.Stir()
	d, err := Patches(c, dir, base, nil, DefaultLimits)
	if err != nil || len(d.Files) != 2 {
		t.Errorf("Patches: %+v, %v; want a.txt and %s", d, err, nested.Loose)
	}
	testutil.NotRun(t, "Patches", marker)

	tr := NewTracker(dir, "")
	nested.Stir()
	if s, err := tr.Update(c, nil); err != nil || !slices.Equal(names(s.Files), want) {
		t.Errorf("Tracker.Update: %+v, %v", s, err)
	}
	testutil.NotRun(t, "Tracker.Update", marker)
	nested.Stir()
	if _, err := tr.Update(c, inside); err != nil {
		t.Error(err)
	}
	testutil.NotRun(t, "Tracker.Update of paths inside them", marker)

	e := startLive(t, LiveOptions{})
	nested.Stir()
	e.live.Follow("a", dir, "")
	e.rec.await(t, "a", 0, "the first summary", func(s Summarized) bool { return slices.Equal(names(s.Files), want) })
	testutil.NotRun(t, "Live's first summary", marker)
	for i, p := range inside {
		nested.Stir()
		e.live.Changed(filepath.Join(dir, p))
		// A line more each time, for a summary unlike the last (a.txt's
		// lines and the untracked repository's one).
		write(t, dir, "a.txt", "a\n"+strings.Repeat("more\n", i+2))
		e.live.Changed(filepath.Join(dir, "a.txt"))
		e.rec.await(t, "a", 0, "the summary after a write in "+p, func(s Summarized) bool { return s.Additions == i+3 })
		testutil.NotRun(t, "Live's summary after a write in "+p, marker)
	}
}
