package changes

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/internal/testutil"
)

// TestForeignWorkspace: a workspace that belongs to another user, as one
// bind-mounted from a host where it belongs to another uid, is diffed
// once it is trusted, from a subdirectory too; a repository beside it,
// also another user's, is refused with ErrUntrusted, which says why in
// words, not gitexec.ErrNotRepo. Not parallel: the trust is gitexec's, for
// the whole process.
func TestForeignWorkspace(t *testing.T) {
	ws := repo(t, map[string]string{"a.txt": "a\n", "sub/b.txt": "b\n"})
	write(t, ws, "a.txt", "a\nchanged\n")
	write(t, ws, "new.txt", "new\n")
	other := repo(t, map[string]string{"a.txt": "a\n"})
	testutil.GiveAway(t, ws)
	testutil.GiveAway(t, other)
	if err := gitexec.Trust(ws, filepath.Join(ws, ".worktrees")); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { gitexec.Trust("", "") })
	c := ctx(t)

	top, err := Top(c, filepath.Join(ws, "sub"))
	if err != nil {
		t.Fatalf("Top in the trusted workspace: %v", err)
	}
	base, err := Base(c, top, "")
	if err != nil {
		t.Fatalf("Base: %v", err)
	}
	files, err := Summary(c, top, base, nil)
	if err != nil {
		t.Fatalf("Summary: %v", err)
	}
	if got := byPath(files); len(got) != 2 || got["a.txt"].Additions != 1 || got["new.txt"].Status != Added {
		t.Errorf("Summary: %+v", files)
	}
	d, err := Patches(c, top, base, nil, DefaultLimits)
	if err != nil || len(d.Files) != 2 || !strings.Contains(byPatch(d)["a.txt"].Patch, "+changed\n") {
		t.Errorf("Patches: %+v, %v", d, err)
	}
	if s, err := NewTracker(top, "").Update(c, nil); err != nil || len(s.Files) != 2 {
		t.Errorf("Tracker.Update: %+v, %v", s, err)
	}

	_, topErr := Top(c, other)
	_, sumErr := Summary(c, other, emptyTree, nil)
	for _, err := range []error{topErr, sumErr} {
		if !errors.Is(err, gitexec.ErrUntrusted) || errors.Is(err, gitexec.ErrNotRepo) {
			t.Fatalf("git in another user's repository outside the workspace: %v; want ErrUntrusted", err)
		}
		if !strings.Contains(err.Error(), "git refuses to work in "+other+": it belongs to another user (uid 65534") {
			t.Errorf("the refusal says %q", err)
		}
	}
}
