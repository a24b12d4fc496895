package procfs

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// tail is what follows field 6 in a real stat line; the parser must not
// care about it.
const tail = " 34816 100 4194304 0 0 0 0 0 0 0 0 0 20 0 1 0 100 1000000 250 18446744073709551615 0 0"

func TestParseStat(t *testing.T) {
	tests := []struct {
		name, line string
		want       Stat
	}{
		{"plain", "42 (sh) S 1 42 42" + tail, Stat{PID: 42, Comm: "sh", State: 'S', PPID: 1, PGRP: 42, Session: 42}},
		{"spaces", "7 (a b  c) R 2 3 4" + tail, Stat{PID: 7, Comm: "a b  c", State: 'R', PPID: 2, PGRP: 3, Session: 4}},
		{"parens", "100 ((weird ) name)) S 1 100 100" + tail, Stat{PID: 100, Comm: "(weird ) name)", State: 'S', PPID: 1, PGRP: 100, Session: 100}},
		// A name dressed as fields: read naively, this process's parent
		// would be 100 and its session 9.
		{"fake fields", "200 (x) S 100 7 9 (y) S 1 200 300" + tail, Stat{PID: 200, Comm: "x) S 100 7 9 (y", State: 'S', PPID: 1, PGRP: 200, Session: 300}},
		{"only a paren", "5 ()) Z 4 5 6" + tail, Stat{PID: 5, Comm: ")", State: 'Z', PPID: 4, PGRP: 5, Session: 6}},
		{"empty name", "6 () I 2 0 0", Stat{PID: 6, Comm: "", State: 'I', PPID: 2, PGRP: 0, Session: 0}},
		{"newline in name", "8 (a\nb) S 1 8 8\n", Stat{PID: 8, Comm: "a\nb", State: 'S', PPID: 1, PGRP: 8, Session: 8}},
		{"no parent", "1 (init) S 0 1 1" + tail, Stat{PID: 1, Comm: "init", State: 'S', PPID: 0, PGRP: 1, Session: 1}},
		{"no controlling group", "9 (kworker/0:1) I 2 -1 0", Stat{PID: 9, Comm: "kworker/0:1", State: 'I', PPID: 2, PGRP: -1, Session: 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseStat([]byte(tc.line))
			if err != nil || got != tc.want {
				t.Errorf("ParseStat(%q) = %+v, %v; want %+v", tc.line, got, err, tc.want)
			}
		})
	}
}

func TestParseStatRefuses(t *testing.T) {
	for _, line := range []string{
		"",
		"42 sh S 1 42 42",      // no parentheses
		"42 )sh( S 1 42 42",    // the wrong way round
		"(sh) S 1 42 42",       // no pid
		"x (sh) S 1 42 42",     // a pid that is no number
		"42 (sh) S 1 42",       // cut short
		"42 (sh)",              // nothing after the name
		"42 (sh) SS 1 42 42",   // a state of two letters
		"42 (sh) S one 42 42",  // a parent that is no number
		"42 (sh) S 1 42 42x",   // a session that is no number
		"42 (a) b) S 1 2 3 4)", // fields only inside the name
	} {
		if st, err := ParseStat([]byte(line)); err == nil {
			t.Errorf("ParseStat(%q) = %+v, want an error", line, st)
		}
	}
}

// writeProc lays out a fixture process table: stat lines by directory.
func writeProc(t *testing.T, stats map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for dir, line := range stats {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		if line == "" {
			continue // a process gone before its stat was read
		}
		if err := os.WriteFile(filepath.Join(root, dir, "stat"), []byte(line), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestProcessesFixture(t *testing.T) {
	root := writeProc(t, map[string]string{
		"1":    "1 (init) S 0 1 1" + tail,
		"10":   "10 (x) S 1 7 9 (y) S 1 10 10" + tail,
		"11":   "",                 // vanished
		"12":   "12 (broken",       // unreadable line
		"self": "1 (init) S 0 1 1", // not a pid
		"0":    "0 (zero) S 0 0 0", // not a process
	})
	if err := os.WriteFile(filepath.Join(root, "meminfo"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Processes(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []Stat{
		{PID: 1, Comm: "init", State: 'S', PPID: 0, PGRP: 1, Session: 1},
		{PID: 10, Comm: "x) S 1 7 9 (y", State: 'S', PPID: 1, PGRP: 10, Session: 10},
	}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("Processes = %+v, want %+v", got, want)
	}

	if _, err := ReadStat(root, 12); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "12", "stat")) {
		t.Errorf("ReadStat of a broken line: error %v, want one naming the file", err)
	}
	if _, err := ReadStat(root, 11); err == nil || !strings.Contains(err.Error(), filepath.Join(root, "11", "stat")) {
		t.Errorf("ReadStat of a vanished process: error %v, want one naming the file", err)
	}
	if _, err := Processes(filepath.Join(root, "nope")); err == nil {
		t.Error("Processes of a missing root: no error")
	}
}

// The real table holds this process, with the ids the kernel gives it.
func TestProcessesReal(t *testing.T) {
	st, err := ReadStat(Root, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	sid, err := unix.Getsid(0)
	if err != nil {
		t.Fatal(err)
	}
	// The state is the main thread's, which may be running or asleep.
	want := Stat{PID: os.Getpid(), Comm: st.Comm, State: st.State, PPID: os.Getppid(), PGRP: unix.Getpgrp(), Session: sid}
	if st.Comm == "" || !strings.ContainsRune("RSD", rune(st.State)) || st != want {
		t.Errorf("ReadStat(self) = %+v, want %+v", st, want)
	}
	all, err := Processes(Root)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range all {
		found = found || p.PID == os.Getpid()
	}
	if !found {
		t.Errorf("Processes(%s) has %d processes but not this one", Root, len(all))
	}
}

func TestDescendants(t *testing.T) {
	list := []Stat{
		{PID: 1, PPID: 0},
		{PID: 10, PPID: 1},
		{PID: 11, PPID: 10, Session: 11}, // left 10's session: still its child
		{PID: 12, PPID: 11},
		{PID: 13, PPID: 10},
		{PID: 20, PPID: 1}, // a sibling's tree
		{PID: 21, PPID: 20},
		{PID: 30, PPID: 30}, // a table read mid-change cannot make a loop
	}
	got := Descendants(list, 10)
	want := []int{11, 13, 12}
	if !slices.Equal(got, want) {
		t.Errorf("Descendants(10) = %v, want %v (parents first)", got, want)
	}
	if got := Descendants(list, 12); len(got) != 0 {
		t.Errorf("Descendants of a leaf = %v, want none", got)
	}
	if got := Descendants(list, 30); len(got) != 0 {
		t.Errorf("Descendants of its own parent = %v, want none", got)
	}
}
