// Package procfs reads Linux's process table from /proc: the leading
// fields of /proc/<pid>/stat, and a walk over every process. It is the one
// parser of stat lines, so that a command name crafted to look like more
// fields fools none of its users.
package procfs

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Root is where the kernel mounts the process table; tests pass a fixture
// directory laid out the same way instead.
const Root = "/proc"

// Stat holds the leading fields of a /proc/<pid>/stat line, numbered as in
// proc(5).
type Stat struct {
	// PID is field 1, the process id.
	PID int
	// Comm is field 2, the command name, without its parentheses. The
	// process chooses it: it may hold spaces, parentheses and digits.
	Comm string
	// State is field 3, a letter such as 'R', 'S' or 'Z'.
	State byte
	// PPID is field 4, the parent's process id.
	PPID int
	// PGRP is field 5, the process group id.
	PGRP int
	// Session is field 6, the session id.
	Session int
}

// ParseStat parses a /proc/<pid>/stat line. The command name comes in
// parentheses and may itself hold spaces and parentheses (a process can
// name itself "x) S 1 1 1 (y"), and the kernel does not escape it, so the
// name runs from the first '(' to the last ')' and the other fields are
// counted from there.
func ParseStat(line []byte) (Stat, error) {
	open := bytes.IndexByte(line, '(')
	end := bytes.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return Stat{}, fmt.Errorf("no command name in parentheses")
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(line[:open])))
	if err != nil {
		return Stat{}, fmt.Errorf("bad process id %q", line[:open])
	}
	fields := strings.Fields(string(line[end+1:]))
	if len(fields) < 4 {
		return Stat{}, fmt.Errorf("too few fields after the command name")
	}
	if len(fields[0]) != 1 {
		return Stat{}, fmt.Errorf("bad state %q", fields[0])
	}
	st := Stat{PID: pid, Comm: string(line[open+1 : end]), State: fields[0][0]}
	for i, dst := range []*int{&st.PPID, &st.PGRP, &st.Session} {
		n, err := strconv.Atoi(fields[i+1])
		if err != nil {
			return Stat{}, fmt.Errorf("bad field %d %q", i+4, fields[i+1])
		}
		*dst = n
	}
	return st, nil
}

// ReadStat reads and parses <root>/<pid>/stat; its errors name the file.
func ReadStat(root string, pid int) (Stat, error) {
	file := filepath.Join(root, strconv.Itoa(pid), "stat")
	b, err := os.ReadFile(file)
	if err != nil {
		return Stat{}, err // names the file already
	}
	st, err := ParseStat(b)
	if err != nil {
		return Stat{}, fmt.Errorf("%s: %w", file, err)
	}
	return st, nil
}

// Processes returns the stat of every process under root (Root outside
// tests), in directory order. A process that ends during the walk, or
// whose stat cannot be read or parsed, is left out: the table changes as
// it is read, so only an unreadable root is an error.
func Processes(root string) ([]Stat, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	list := make([]Stat, 0, len(entries))
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid <= 0 {
			continue // not a process: meminfo, self, sys...
		}
		st, err := ReadStat(root, pid)
		if err != nil {
			continue // gone meanwhile
		}
		list = append(list, st)
	}
	return list, nil
}

// Descendants returns the pids in list that descend from pid through the
// parent chain, pid itself left out, each parent before its children. The
// parent link is the one tie a process cannot cut on its own: setsid
// leaves the session, env -i drops any tag in the environment, but a
// process stays its parent's child until that parent exits, and then, under
// a child subreaper, it becomes the subreaper's.
func Descendants(list []Stat, pid int) []int {
	children := make(map[int][]int, len(list))
	for _, st := range list {
		if st.PID != st.PPID { // no loops, whatever a fixture says
			children[st.PPID] = append(children[st.PPID], st.PID)
		}
	}
	var out []int
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		for _, c := range children[p] {
			if !seen[c] {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}
