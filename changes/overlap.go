package changes

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/agentmux/agentmux/internal/gitexec"
)

// Bounds of the overlap computation: Run does it on its own goroutine
// after updates, and it must stay short however many files sessions
// change.
const (
	// MaxOverlaps bounds the overlaps reported; past it the list is cut
	// (the pairs and files first in order are kept).
	MaxOverlaps = 500
	// maxHunkPaths bounds the shared paths of one tree whose hunks one
	// look reads (one git diff for all of them); the paths past it are
	// reported as overlapping files with Lines unknown (false).
	maxHunkPaths = 500
)

// Overlap is two sessions, in different work trees of the same
// repository, that both change one file.
type Overlap struct {
	// Sessions are the two sessions' ids, in order.
	Sessions [2]string
	// Path is the file, relative to the trees' top, slash-separated.
	Path string
	// Lines reports that their changes of the file overlap or touch in
	// the file as both count from, where git's merge of the two would
	// conflict. A binary file both change counts as overlapping.
	Lines bool
	// BasesDiffer reports that the two count their changes from
	// different versions of the file, so their lines were not compared
	// (Lines is false): a merge of both is what will tell.
	BasesDiffer bool
	// Hunks are, for each of Sessions, the hunks of its change of Path
	// that overlap one of the other's; empty unless Lines.
	Hunks [2][]Hunk
}

// Hunk is a range of a file's change, as a zero-context diff's hunk
// header gives it: Old counts lines from OldStart in the base, New
// from NewStart in the tree. A range of no lines starts after the line
// before it (git's convention, "-5,0" inserts after line 5).
type Hunk struct {
	OldStart, OldLines, NewStart, NewLines int
}

// span is a hunk's place in the base as a half-open range of line
// numbers; an insertion is the empty range where it goes.
func (h Hunk) span() (from, to int) {
	if h.OldLines == 0 {
		return h.OldStart + 1, h.OldStart + 1
	}
	return h.OldStart, h.OldStart + h.OldLines
}

// meets reports whether two hunks of changes from the same base overlap
// or touch. Touching counts: git's merge takes two changes of adjacent
// lines (or an insertion beside a changed line) for one conflict.
func (h Hunk) meets(o Hunk) bool {
	a0, a1 := h.span()
	b0, b1 := o.span()
	return a0 <= b1 && b0 <= a1
}

// fileHunks is what one tree changed in one file, as overlaps compare
// it: its hunks (nil for a binary file), and the blob the file is at
// its base ("" when the base lacks it).
type fileHunks struct {
	hunks  []Hunk
	binary bool
	blob   string
}

// repoOf returns the real path of the git common directory of the tree
// at top: the trees of one repository (its worktrees) share it.
func repoOf(ctx context.Context, top string) (string, error) {
	out, err := gitexec.Run(ctx, top, "rev-parse", "--path-format=absolute", "--git-common-dir")
	if err != nil {
		return "", fmt.Errorf("find the repository of %s: %w", top, err)
	}
	dir := strings.TrimSpace(out)
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir, nil
}

// overlaps computes the overlaps of the trees' last summaries, reading
// the hunks of the files two trees share that the trees' caches lack.
// Sessions in one tree share its change, so they overlap with nobody
// there; trees of different repositories share nothing.
func (l *Live) overlaps(ctx context.Context, ts *trees) []Overlap {
	byRepo := map[string][]*tree{}
	for _, t := range ts.byKey {
		if t.repo != "" && t.sent.Base != "" && len(t.sent.Files) > 0 && len(t.sessions) > 0 {
			byRepo[t.repo] = append(byRepo[t.repo], t)
		}
	}
	type pair struct {
		a, b  *tree
		paths []string
	}
	var pairs []pair
	shared := map[*tree]map[string]bool{}
	for _, group := range byRepo {
		sort.Slice(group, func(i, j int) bool { return group[i].tracker.Dir() < group[j].tracker.Dir() })
		for i, a := range group {
			for _, b := range group[i+1:] {
				if a.tracker.Dir() == b.tracker.Dir() {
					continue // one tree, counted from two bases: one change set
				}
				paths := samePaths(a.sent.Files, b.sent.Files)
				if len(paths) == 0 {
					continue
				}
				pairs = append(pairs, pair{a, b, paths})
				for _, t := range []*tree{a, b} {
					if shared[t] == nil {
						shared[t] = map[string]bool{}
					}
					for _, p := range paths {
						shared[t][p] = true
					}
				}
			}
		}
	}
	for t, paths := range shared {
		l.readHunks(ctx, t, paths)
	}
	var out []Overlap
	for _, p := range pairs {
		for _, a := range sortedIDs(p.a.sessions) {
			for _, b := range sortedIDs(p.b.sessions) {
				for _, path := range p.paths {
					out = append(out, overlapOf(a, b, path, p.a.hunks[path], p.b.hunks[path]))
				}
			}
		}
	}
	for i := range out {
		if out[i].Sessions[0] > out[i].Sessions[1] {
			o := &out[i]
			o.Sessions[0], o.Sessions[1] = o.Sessions[1], o.Sessions[0]
			o.Hunks[0], o.Hunks[1] = o.Hunks[1], o.Hunks[0]
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Sessions != b.Sessions {
			return a.Sessions[0] < b.Sessions[0] || (a.Sessions[0] == b.Sessions[0] && a.Sessions[1] < b.Sessions[1])
		}
		return a.Path < b.Path
	})
	if len(out) > MaxOverlaps {
		l.log.Warn("more overlaps than are reported", "overlaps", len(out), "reported", MaxOverlaps)
		out = out[:MaxOverlaps]
	}
	return out
}

// overlapOf compares two trees' changes of one file. Lines are compared
// only when both count from the same version of the file (the same
// blob, or none); a, b are nil when their hunks are unknown.
func overlapOf(idA, idB, path string, a, b *fileHunks) Overlap {
	o := Overlap{Sessions: [2]string{idA, idB}, Path: path}
	if a == nil || b == nil {
		return o
	}
	if a.blob != b.blob {
		o.BasesDiffer = true
		return o
	}
	if a.binary || b.binary {
		o.Lines = true
		return o
	}
	for _, ha := range a.hunks {
		for _, hb := range b.hunks {
			if ha.meets(hb) {
				o.Lines = true
				o.Hunks[0] = appendOnce(o.Hunks[0], ha)
				o.Hunks[1] = appendOnce(o.Hunks[1], hb)
			}
		}
	}
	return o
}

func appendOnce(hs []Hunk, h Hunk) []Hunk {
	for _, x := range hs {
		if x == h {
			return hs
		}
	}
	return append(hs, h)
}

// samePaths returns the paths both lists of changed files name, sorted.
func samePaths(a, b []File) []string {
	in := make(map[string]bool, len(a))
	for _, f := range a {
		in[f.Path] = true
	}
	var out []string
	for _, f := range b {
		if in[f.Path] {
			out = append(out, f.Path)
		}
	}
	sort.Strings(out)
	return out
}

func sortedIDs(m map[string]bool) []string {
	ids := make([]string, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}

// readHunks fills the tree's cache with the hunks of paths it lacks: one
// zero-context diff and one listing of the base for all of them. A
// failure leaves them unknown, and is logged.
func (l *Live) readHunks(ctx context.Context, t *tree, paths map[string]bool) {
	if t.hunks == nil {
		t.hunks = map[string]*fileHunks{}
	}
	var missing []string
	for p := range paths {
		if _, ok := t.hunks[p]; !ok {
			missing = append(missing, p)
		}
	}
	if len(missing) == 0 {
		return
	}
	sort.Strings(missing)
	if len(missing) > maxHunkPaths {
		l.log.Warn("too many shared files to compare their lines", "tree", t.tracker.Dir(), "files", len(missing), "compared", maxHunkPaths)
		missing = missing[:maxHunkPaths]
	}
	got, err := hunksOf(ctx, t.tracker.Dir(), t.sent.Base, missing)
	if err != nil {
		if ctx.Err() == nil {
			l.log.Warn("cannot read the hunks of a session's changes", "tree", t.tracker.Dir(), "err", err)
		}
		return
	}
	for _, p := range missing {
		fh := got[p]
		if fh == nil {
			fh = &fileHunks{} // changed back since the summary: no hunk
		}
		t.hunks[p] = fh
	}
}

// hunksOf reads the zero-context hunks of the tree at dir against base
// in paths, with each file's blob at base.
func hunksOf(ctx context.Context, dir, base string, paths []string) (map[string]*fileHunks, error) {
	g, err := prepare(ctx, dir, paths)
	if err != nil {
		return nil, err
	}
	defer g.close()
	// No renames: an overlap is of a path, as both trees name it.
	args := append(clone(g.cfg), "diff", "--no-ext-diff", "--no-textconv", "--no-color", "--no-renames",
		"--ignore-submodules=dirty", "-U0", base, "--")
	out, err := gitexec.RunEnv(ctx, dir, g.env, nil, append(args, paths...)...)
	if err != nil {
		return nil, fmt.Errorf("diff the changed lines against %s: %w", base, err)
	}
	got := parseHunks(out)
	if base == emptyTree {
		return got, nil
	}
	// The blob each file is at in the base: the trees' lines compare
	// only when they count from the same one.
	ls, err := gitexec.RunEnv(ctx, dir, g.env, nil, append([]string{"ls-tree", "-z", base, "--"}, paths...)...)
	if err != nil {
		return nil, fmt.Errorf("list the base %s: %w", base, err)
	}
	for _, rec := range bytes.Split(ls, []byte{0}) {
		meta, path, ok := bytes.Cut(rec, []byte{'\t'})
		if !ok {
			continue
		}
		f := strings.Fields(string(meta))
		if fh := got[string(path)]; fh != nil && len(f) == 3 {
			fh.blob = f[2]
		}
	}
	return got, nil
}

// parseHunks reads a zero-context git diff: each file's hunk headers,
// and whether it is binary.
func parseHunks(out []byte) map[string]*fileHunks {
	got := map[string]*fileHunks{}
	var cur *fileHunks
	var oldPath string
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "diff --git "):
			cur, oldPath = nil, ""
		case strings.HasPrefix(line, "--- "):
			oldPath = diffPath(line[4:], "a/")
		case strings.HasPrefix(line, "+++ "):
			p := diffPath(line[4:], "b/")
			if p == "" {
				p = oldPath // deleted
			}
			cur = &fileHunks{}
			got[p] = cur
		case strings.HasPrefix(line, "Binary files ") && strings.HasSuffix(line, " differ"):
			// "Binary files a/x and b/x differ": no --- and +++ lines.
			if p := binaryPath(line); p != "" {
				got[p] = &fileHunks{binary: true}
			}
		case strings.HasPrefix(line, "@@ ") && cur != nil:
			if h, ok := parseHunkHeader(line); ok {
				cur.hunks = append(cur.hunks, h)
			}
		}
	}
	return got
}

// diffPath reads a --- or +++ line's path: "" for /dev/null, git's
// C-style quoting undone.
func diffPath(s, prefix string) string {
	if s == "/dev/null" {
		return ""
	}
	if strings.HasPrefix(s, `"`) {
		if u, err := strconv.Unquote(s); err == nil {
			s = u
		}
	}
	return strings.TrimPrefix(s, prefix)
}

// binaryPath reads the path of "Binary files a/x and b/x differ".
func binaryPath(line string) string {
	mid := strings.TrimSuffix(strings.TrimPrefix(line, "Binary files "), " differ")
	a, b, ok := strings.Cut(mid, " and ")
	if !ok {
		return ""
	}
	if p := diffPath(b, "b/"); p != "" {
		return p
	}
	return diffPath(a, "a/")
}

// parseHunkHeader reads "@@ -a[,b] +c[,d] @@".
func parseHunkHeader(line string) (Hunk, bool) {
	f := strings.Fields(line)
	if len(f) < 3 || !strings.HasPrefix(f[1], "-") || !strings.HasPrefix(f[2], "+") {
		return Hunk{}, false
	}
	oldStart, oldLines, ok1 := hunkRange(f[1][1:])
	newStart, newLines, ok2 := hunkRange(f[2][1:])
	return Hunk{OldStart: oldStart, OldLines: oldLines, NewStart: newStart, NewLines: newLines}, ok1 && ok2
}

func hunkRange(s string) (start, lines int, ok bool) {
	a, b, has := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	if err != nil {
		return 0, 0, false
	}
	lines = 1
	if has {
		if lines, err = strconv.Atoi(b); err != nil {
			return 0, 0, false
		}
	}
	return start, lines, true
}
