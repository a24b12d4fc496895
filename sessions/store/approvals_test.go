package store

import (
	"path/filepath"
	"testing"
	"time"
)

// An approval is of a text's hash, kept across reopening the file; a
// changed script (another hash) is not approved by it.
func TestApprovalsAreRememberedByHash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agentmux.db")
	st := openTestStore(t, path)
	const a, b, changed = "aaaa", "bbbb", "aaab"
	if st.Approved(a) {
		t.Fatal("approved before Approve")
	}
	if err := st.Approve(a, b); err != nil {
		t.Fatal(err)
	}
	if !st.Approved(a) || !st.Approved(b) || st.Approved(changed) || st.Approved("") {
		t.Fatalf("approved a %v b %v changed %v empty %v", st.Approved(a), st.Approved(b), st.Approved(changed), st.Approved(""))
	}
	if err := st.Approve(""); err == nil {
		t.Fatal("approved an empty hash")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	st = openTestStore(t, path)
	if !st.Approved(a) || !st.Approved(b) || st.Approved(changed) {
		t.Fatal("approvals not remembered across reopening the store")
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// A reader of the file sees them too, and cannot write any.
	ro, err := OpenReadOnly(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if !ro.Approved(a) {
		t.Fatal("a read-only store does not see the approval")
	}
	if err := ro.Approve(changed); err == nil {
		t.Fatal("a read-only store approved a script")
	}
}

// A file written by a build from before approvals has none, and the
// store opened on it can approve.
func TestApprovalsInAFileOfAnEarlierBuild(t *testing.T) {
	path := copyGolden(t)
	ro, err := OpenReadOnly(path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if ro.Approved("aaaa") {
		t.Fatal("approved in a file without approvals")
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	st := openTestStore(t, path)
	defer st.Close()
	if err := st.Approve("aaaa"); err != nil || !st.Approved("aaaa") {
		t.Fatalf("approve in an earlier build's file: %v", err)
	}
}
