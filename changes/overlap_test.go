package changes

import (
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentmux/agentmux/internal/testutil"
)

// overlapRecorder keeps the overlap lists a Live told, in order.
type overlapRecorder struct {
	mu  sync.Mutex
	got [][]Overlap
}

func (r *overlapRecorder) tell(o []Overlap) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, o)
}

// await waits until the last list told satisfies ok, and returns it.
func (r *overlapRecorder) await(t *testing.T, what string, ok func([]Overlap) bool) []Overlap {
	t.Helper()
	var last []Overlap
	testutil.Eventually(t, testTimeout, what, func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.got) == 0 {
			return false
		}
		last = r.got[len(r.got)-1]
		return ok(last)
	})
	return last
}

// numbered is n lines, "line 1" to "line n", with line k replaced by
// what repl says for it.
func numbered(n int, repl map[int]string) string {
	var b strings.Builder
	for k := 1; k <= n; k++ {
		if r, ok := repl[k]; ok {
			b.WriteString(r + "\n")
			continue
		}
		fmt.Fprintf(&b, "line %d\n", k)
	}
	return b.String()
}

// overlapKey names an overlap for comparison: the pair, the path and
// whether lines overlap.
func overlapKey(o Overlap) string {
	return fmt.Sprintf("%s+%s %s lines=%v differ=%v", o.Sessions[0], o.Sessions[1], o.Path, o.Lines, o.BasesDiffer)
}

func overlapKeys(os []Overlap) []string {
	var out []string
	for _, o := range os {
		out = append(out, overlapKey(o))
	}
	return out
}

// TestLiveOverlaps: sessions in two real worktrees of one repository
// that change the same file overlap, and their lines do when their hunks
// overlap or touch; two sessions in the very same tree share one change
// and overlap with nobody there; a repository of its own is nobody's
// overlap; a session that goes takes its overlaps with it.
func TestLiveOverlaps(t *testing.T) {
	main := repo(t, map[string]string{"a.txt": numbered(20, nil), "b.txt": numbered(10, nil), "c.txt": "c\n"})
	wt1 := filepath.Join(t.TempDir(), "one")
	wt2 := filepath.Join(t.TempDir(), "two")
	gitT(t, main, "worktree", "add", "-q", "-b", "one", wt1)
	gitT(t, main, "worktree", "add", "-q", "-b", "two", wt2)
	other := repo(t, map[string]string{"a.txt": numbered(20, nil)})

	rec := &overlapRecorder{}
	e := startLive(t, LiveOptions{Overlaps: rec.tell, Quiet: 20 * time.Millisecond, MaxWait: 100 * time.Millisecond})
	for id, dir := range map[string]string{"s1": wt1, "s1b": wt1, "s2": wt2, "s3": other} {
		e.live.Follow(id, dir, "main")
	}
	edit := func(dir, rel, content string) {
		write(t, dir, rel, content)
		e.live.Changed(filepath.Join(dir, rel))
	}
	edit(wt1, "a.txt", numbered(20, map[int]string{3: "one's line 3"}))
	edit(wt1, "b.txt", numbered(10, map[int]string{2: "one's line 2"}))
	edit(wt1, "new.txt", "one's new file\n")
	edit(wt2, "a.txt", numbered(20, map[int]string{15: "two's line 15"}))
	edit(wt2, "b.txt", numbered(10, map[int]string{3: "two's line 3"})) // touches line 2
	edit(wt2, "new.txt", "two's new file\n")                            // both add it
	edit(wt2, "c.txt", "two's c\n")                                     // one side only
	edit(other, "a.txt", numbered(20, map[int]string{3: "other's line 3"}))

	want := []string{
		"s1+s2 a.txt lines=false differ=false",
		"s1+s2 b.txt lines=true differ=false",
		"s1+s2 new.txt lines=true differ=false",
		"s1b+s2 a.txt lines=false differ=false",
		"s1b+s2 b.txt lines=true differ=false",
		"s1b+s2 new.txt lines=true differ=false",
	}
	got := rec.await(t, "the overlaps of the two worktrees", func(o []Overlap) bool {
		return reflect.DeepEqual(overlapKeys(o), want)
	})
	b := got[1]
	if !reflect.DeepEqual(b.Hunks, [2][]Hunk{{{2, 1, 2, 1}}, {{3, 1, 3, 1}}}) {
		t.Errorf("b.txt's overlapping hunks are %+v; want line 2 of s1's and line 3 of s2's", b.Hunks)
	}

	// Moving two's change next to one's makes their lines meet; an edit
	// that keeps the counts still counts.
	edit(wt2, "a.txt", numbered(20, map[int]string{4: "two's line 4"}))
	got = rec.await(t, "a.txt's lines overlapping", func(o []Overlap) bool {
		return len(o) == 6 && o[0].Path == "a.txt" && o[0].Lines
	})
	if !reflect.DeepEqual(got[0].Hunks, [2][]Hunk{{{3, 1, 3, 1}}, {{4, 1, 4, 1}}}) {
		t.Errorf("a.txt's overlapping hunks are %+v", got[0].Hunks)
	}

	e.live.Forget("s1b")
	e.live.Forget("s2")
	rec.await(t, "no overlap once two is gone", func(o []Overlap) bool { return len(o) == 0 })
}

// TestOverlapBasesDiffer: when two trees count a file's change from
// different versions of it, their lines are not compared.
func TestOverlapBasesDiffer(t *testing.T) {
	main := repo(t, map[string]string{"a.txt": numbered(10, nil)})
	wt1 := filepath.Join(t.TempDir(), "one")
	gitT(t, main, "worktree", "add", "-q", "-b", "one", wt1)
	commitFile(t, main, "a.txt", numbered(10, map[int]string{9: "main's line 9"}), "main moves")
	wt2 := filepath.Join(t.TempDir(), "two")
	gitT(t, main, "worktree", "add", "-q", "-b", "two", wt2)

	rec := &overlapRecorder{}
	e := startLive(t, LiveOptions{Overlaps: rec.tell, Quiet: 20 * time.Millisecond})
	e.live.Follow("s1", wt1, "main")
	e.live.Follow("s2", wt2, "main")
	write(t, wt1, "a.txt", numbered(10, map[int]string{2: "one's"}))
	write(t, wt2, "a.txt", numbered(10, map[int]string{2: "two's", 9: "main's line 9"}))
	e.live.Changed(filepath.Join(wt1, "a.txt"))
	e.live.Changed(filepath.Join(wt2, "a.txt"))
	rec.await(t, "a.txt overlapping from different bases", func(o []Overlap) bool {
		return reflect.DeepEqual(overlapKeys(o), []string{"s1+s2 a.txt lines=false differ=true"})
	})
}

func TestHunkMeets(t *testing.T) {
	for _, c := range []struct {
		a, b Hunk
		want bool
	}{
		{Hunk{5, 1, 5, 1}, Hunk{5, 1, 5, 1}, true},  // the same line
		{Hunk{5, 1, 5, 1}, Hunk{6, 1, 6, 1}, true},  // adjacent lines
		{Hunk{5, 1, 5, 1}, Hunk{7, 1, 7, 1}, false}, // a line between
		{Hunk{5, 0, 6, 2}, Hunk{5, 0, 6, 1}, true},  // insertions at one place
		{Hunk{5, 0, 6, 2}, Hunk{6, 1, 6, 1}, true},  // an insertion beside a change
		{Hunk{5, 0, 6, 2}, Hunk{7, 1, 7, 1}, false},
		{Hunk{1, 10, 0, 0}, Hunk{4, 2, 4, 3}, true}, // a deletion around a change
	} {
		if got := c.a.meets(c.b); got != c.want || c.b.meets(c.a) != c.want {
			t.Errorf("%+v meets %+v: %v, want %v both ways", c.a, c.b, got, c.want)
		}
	}
}

func TestParseHunks(t *testing.T) {
	out := "diff --git a/x b/x\nindex 1..2 100644\n--- a/x\n+++ b/x\n@@ -3 +3 @@ ctx\n-a\n+b\n@@ -9,0 +10,2 @@\n+c\n+d\n" +
		"diff --git a/gone b/gone\ndeleted file mode 100644\n--- a/gone\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-x\n-y\n" +
		"diff --git a/bin b/bin\nindex 1..2 100644\nBinary files a/bin and b/bin differ\n" +
		"diff --git \"a/sp\\303\\251c\" \"b/sp\\303\\251c\"\n--- \"a/sp\\303\\251c\"\n+++ \"b/sp\\303\\251c\"\n@@ -1 +1 @@\n-1\n+2\n"
	got := parseHunks([]byte(out))
	want := map[string]*fileHunks{
		"x":    {hunks: []Hunk{{3, 1, 3, 1}, {9, 0, 10, 2}}},
		"gone": {hunks: []Hunk{{1, 2, 0, 0}}},
		"bin":  {binary: true},
		"spéc": {hunks: []Hunk{{1, 1, 1, 1}}},
	}
	if !reflect.DeepEqual(got, want) {
		for k, v := range got {
			t.Logf("%q: %+v", k, v)
		}
		t.Errorf("parseHunks read the wrong hunks")
	}
}
