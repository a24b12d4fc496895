// Package changes tells what an agent changed in its working tree: the
// files that differ from a base commit (staged, unstaged and untracked
// alike, renames found, binary files and mode changes told), with their
// line counts, and their patches on demand. It runs the git binary.
//
// A repository is the agent's to write, config and attributes included, so
// nothing it says may run a command. Every git here is gitexec's, inert:
// no network, no lazy fetch of a partial clone's missing objects, no
// file-system monitor, no pager, editor or password prompt. On top of
// that, diffs run without external diff drivers or textconv, without
// hooks, and with every clean or process filter the config names turned
// off (gitexec.NeutralConfig). Untracked files are diffed as git does
// new ones, by marking them intent-to-add in a copy of the index that git
// then reads instead of the real one, which it never writes.
//
// A repository inside the tree (a submodule, one added with git add, or
// one in an untracked directory) has a config of its own, which
// NeutralConfig does not reach, so no git looks inside it (see gitexec,
// "Nested repositories"): a gitlink is compared by the commit it records
// and the one checked out there (--ignore-submodules=dirty), never by
// its files, and an untracked repository shows as a new gitlink.
//
// A Tracker keeps one tree's summary up to date, diffing only the paths
// that changed. Live keeps the summaries of every session's tree as the
// file watchers report writes, and tells them to whoever wires it (the
// WebSocket hub): it knows sessions only by their ids, so this package
// stays below the ones that own sessions and connections.
package changes

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/agentmux/agentmux/internal/bytesize"
	"github.com/agentmux/agentmux/internal/gitexec"
)

// Status says how a file changed.
type Status string

// The statuses of a changed file.
const (
	Added    Status = "added"
	Modified Status = "modified"
	Deleted  Status = "deleted"
	Renamed  Status = "renamed"
)

// File is one changed file.
type File struct {
	// Path is relative to the tree's top, with forward slashes; OldPath
	// is where a renamed file was.
	Path    string `json:"path"`
	OldPath string `json:"oldPath,omitempty"`
	Status  Status `json:"status"`
	// Additions and Deletions count lines; both are 0 for a binary file.
	Additions int  `json:"additions"`
	Deletions int  `json:"deletions"`
	Binary    bool `json:"binary"`
	// OldMode and NewMode are set when the file's mode changed (an
	// executable bit, a file that became a link).
	OldMode string `json:"oldMode,omitempty"`
	NewMode string `json:"newMode,omitempty"`
}

// emptyTree is git's id of the empty tree: the base of a repository with
// no commit yet, against which every file is new.
const emptyTree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

// Top returns the top of the work tree that holds dir, or gitexec.ErrNotRepo.
func Top(ctx context.Context, dir string) (string, error) {
	out, err := gitexec.Run(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		if ge := (*gitexec.Error)(nil); errors.As(err, &ge) && ge.Says("not a git repository") {
			return "", fmt.Errorf("%s: %w", dir, gitexec.ErrNotRepo)
		}
		return "", err
	}
	return strings.TrimSpace(out), nil
}

// Base returns the commit the tree at dir is compared with: the newest of
// the merge-bases of its HEAD with each of from (branches or commits;
// empty ones are none), or with none, HEAD itself; the empty tree when
// HEAD has no commit yet. Several serve a branch that was merged by a
// squash or a rebase: its base has copies of its commits, so the
// merge-base with the base is where the branch began, and the branch's
// merged tip (a second from) is where what it still adds begins.
func Base(ctx context.Context, dir string, from ...string) (string, error) {
	head, err := gitexec.Run(ctx, dir, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if err != nil {
		if ge := (*gitexec.Error)(nil); errors.As(err, &ge) && ge.Code == 1 {
			return emptyTree, nil // no commit yet
		}
		return "", fmt.Errorf("resolve HEAD: %w", err)
	}
	head = strings.TrimSpace(head)
	var best string
	for _, f := range from {
		if f == "" {
			continue
		}
		out, err := gitexec.Run(ctx, dir, "merge-base", "--", f, head)
		if err != nil {
			// The base branch is gone, or shares no history: it says
			// nothing.
			continue
		}
		mb := strings.TrimSpace(out)
		if best == "" || (mb != best && isAncestor(ctx, dir, best, mb)) {
			best = mb
		}
	}
	if best == "" {
		return head, nil // nothing to count from but HEAD itself
	}
	return best, nil
}

// isAncestor reports whether commit a is an ancestor of commit b; an
// error says no.
func isAncestor(ctx context.Context, dir, a, b string) bool {
	_, err := gitexec.Run(ctx, dir, "merge-base", "--is-ancestor", a, b)
	return err == nil
}

// Summary lists the files of the tree at dir that differ from base; with
// paths (relative to the top, slash-separated), only those, or what lies
// under them.
func Summary(ctx context.Context, dir, base string, paths []string) ([]File, error) {
	g, err := prepare(ctx, dir, paths)
	if err != nil {
		return nil, err
	}
	defer g.close()
	return g.summary(ctx, dir, base)
}

func (g *git) summary(ctx context.Context, dir, base string) ([]File, error) {
	out, err := gitexec.RunEnv(ctx, dir, g.env, nil, g.diffArgs(base, "--raw", "--numstat", "-z")...)
	if err != nil {
		return nil, fmt.Errorf("diff the tree against %s: %w", base, err)
	}
	return ParseRawNumstat(out)
}

// git is what a diff of one tree runs with: gitexec.NeutralConfig's
// options, and a copy of the index with the untracked files marked
// intent-to-add.
type git struct {
	env   []string
	cfg   []string
	paths []string
	index string // the copy, removed by close; "" when none was needed
}

// prepare finds the tree's untracked files (among paths, when given) and
// makes a copy of its index that holds them, so they diff as new files.
func prepare(ctx context.Context, dir string, paths []string) (*git, error) {
	g := &git{env: []string{"GIT_LITERAL_PATHSPECS=1"}, paths: paths}
	cfg, err := gitexec.NeutralConfig(ctx, dir)
	if err != nil {
		return nil, notRepo(dir, err)
	}
	g.cfg = cfg
	args := append(append(clone(cfg), "ls-files", "--others", "--exclude-standard", "-z", "--"), paths...)
	out, err := gitexec.RunEnv(ctx, dir, g.env, nil, args...)
	if err != nil {
		return nil, notRepo(dir, fmt.Errorf("list untracked files: %w", err))
	}
	if len(out) == 0 {
		return g, nil
	}
	index, err := copyIndex(ctx, dir)
	if err != nil {
		return nil, err
	}
	g.index = index
	g.env = append(g.env, "GIT_INDEX_FILE="+index)
	addArgs := append(clone(cfg), "add", "--intent-to-add", "--pathspec-from-file=-", "--pathspec-file-nul")
	if _, err := gitexec.RunEnv(ctx, dir, g.env, out, addArgs...); err != nil {
		g.close()
		return nil, fmt.Errorf("mark untracked files: %w", err)
	}
	return g, nil
}

func (g *git) close() {
	if g.index != "" {
		_ = os.Remove(g.index)
	}
}

// diffArgs are the arguments of a diff of the tree against base, in g's
// paths, with extra options.
func (g *git) diffArgs(base string, extra ...string) []string {
	// Dirty, not none: none runs git status inside each submodule, and
	// with it that repository's own filters.
	args := append(clone(g.cfg), "diff", "--no-ext-diff", "--no-textconv", "--no-color", "-M", "--ignore-submodules=dirty")
	args = append(append(args, extra...), base, "--")
	return append(args, g.paths...)
}

func clone(s []string) []string { return append([]string(nil), s...) }

// notRepo gives gitexec.ErrNotRepo for git's way of saying so.
func notRepo(dir string, err error) error {
	if ge := (*gitexec.Error)(nil); errors.As(err, &ge) && ge.Says("not a git repository") {
		return fmt.Errorf("%s: %w", dir, gitexec.ErrNotRepo)
	}
	return err
}

// copyIndex copies the tree's index to a temporary file and returns its
// name.
func copyIndex(ctx context.Context, dir string) (string, error) {
	out, err := gitexec.Run(ctx, dir, "rev-parse", "--git-path", "index")
	if err != nil {
		return "", fmt.Errorf("find the index: %w", err)
	}
	src := strings.TrimSpace(out)
	if !filepath.IsAbs(src) {
		src = filepath.Join(dir, src)
	}
	tmp, err := os.CreateTemp("", "agentmux-index-*")
	if err != nil {
		return "", fmt.Errorf("copy the index: %w", err)
	}
	defer tmp.Close()
	in, err := os.Open(src)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return tmp.Name(), nil // no index yet: git starts an empty one
	case err != nil:
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("copy the index: %w", err)
	}
	defer in.Close()
	if _, err := io.Copy(tmp, in); err != nil {
		_ = os.Remove(tmp.Name())
		return "", fmt.Errorf("copy the index: %w", err)
	}
	return tmp.Name(), nil
}

// ParseRawNumstat reads git diff --raw --numstat -z (or diff-tree's,
// which is the same): the raw records
// (":old new oldsha newsha status\0path\0", and a second path for a
// rename), then as many numstat records ("adds\tdels\tpath\0", or
// "adds\tdels\t\0old\0new\0"), in the same order. No files is an empty
// list, not nil: the API sends it as [], which clients can take the length
// of (a checkpoint of a turn that changed nothing showed "Cannot read
// properties of null").
func ParseRawNumstat(out []byte) ([]File, error) {
	tok := bytes.Split(out, []byte{0})
	files := []File{}
	i := 0
	for ; i < len(tok) && len(tok[i]) > 0 && tok[i][0] == ':'; i++ {
		f, n, err := parseRaw(tok[i:])
		if err != nil {
			return nil, err
		}
		files = append(files, f)
		i += n
	}
	for k := range files {
		if i >= len(tok) {
			return nil, fmt.Errorf("git diff: %d numstat records for %d files", k, len(files))
		}
		fields := bytes.SplitN(tok[i], []byte{'\t'}, 3)
		if len(fields) != 3 {
			return nil, fmt.Errorf("git diff: bad numstat record %q", tok[i])
		}
		if len(fields[2]) == 0 {
			i += 2 // a rename: the two paths follow
		}
		i++
		if string(fields[0]) == "-" {
			files[k].Binary = true
			continue
		}
		files[k].Additions, _ = strconv.Atoi(string(fields[0]))
		files[k].Deletions, _ = strconv.Atoi(string(fields[1]))
	}
	return files, nil
}

// parseRaw reads one raw record starting at tok[0]; it returns how many
// path tokens followed the header.
func parseRaw(tok [][]byte) (File, int, error) {
	h := strings.Fields(string(tok[0][1:]))
	if len(h) != 5 || len(tok) < 2 {
		return File{}, 0, fmt.Errorf("git diff: bad raw record %q", tok[0])
	}
	f := File{Path: string(tok[1])}
	n := 1
	switch h[4][0] {
	case 'A', 'C':
		f.Status = Added
	case 'D':
		f.Status = Deleted
	case 'R':
		if len(tok) < 3 {
			return File{}, 0, fmt.Errorf("git diff: rename without its new path")
		}
		f.Status, f.OldPath, f.Path = Renamed, string(tok[1]), string(tok[2])
		n = 2
	default: // M, T (type), U (unmerged)
		f.Status = Modified
	}
	if h[0] != h[1] && h[0] != "000000" && h[1] != "000000" {
		f.OldMode, f.NewMode = h[0], h[1]
	}
	return f, n, nil
}

// Patch is one file's change as a unified diff.
type Patch struct {
	File
	Patch string `json:"patch"`
	// Note says what was left out, when something was.
	Note string `json:"note,omitempty"`
}

// Limits bound a Diff: a file's patch over File bytes, and everything
// after Total bytes, are cut with a note.
type Limits struct {
	File, Total int
}

// DefaultLimits are the API's: 256 KiB a file, 4 MiB in all.
var DefaultLimits = Limits{File: 256 << 10, Total: 4 << 20}

// Diff is the tree's change against Base, patches included.
type Diff struct {
	Base  string  `json:"base"`
	Files []Patch `json:"files"`
	// Truncated reports that a limit cut a patch or left patches out.
	Truncated bool `json:"truncated"`
}

// TreeDiff returns the change of the work tree that holds dir against
// the newest merge-base of its HEAD with from (see Base), patches
// included, cut to limits: what a session changed. It returns
// gitexec.ErrNotRepo when dir is in no repository.
func TreeDiff(ctx context.Context, dir string, from []string, paths []string, limits Limits) (*Diff, error) {
	top, err := Top(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("find the tree of %s: %w", dir, err)
	}
	base, err := Base(ctx, top, from...)
	if err != nil {
		return nil, fmt.Errorf("find the base of %s: %w", top, err)
	}
	d, err := Patches(ctx, top, base, paths, limits)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", top, err)
	}
	return d, nil
}

// Patches returns the diff of the tree at dir against base, in paths (all
// of it when none), cut to limits.
func Patches(ctx context.Context, dir, base string, paths []string, limits Limits) (*Diff, error) {
	g, err := prepare(ctx, dir, paths)
	if err != nil {
		return nil, err
	}
	defer g.close()
	files, err := g.summary(ctx, dir, base)
	if err != nil {
		return nil, err
	}
	d := &Diff{Base: base, Files: make([]Patch, len(files))}
	for i, f := range files {
		d.Files[i].File = f
	}
	if len(files) == 0 {
		return d, nil
	}
	// The patches come in the order of the summary; stop reading once the
	// total is reached, and let the context kill the rest.
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := gitexec.Command(pctx, dir, g.env, g.diffArgs(base, "-p", "--full-index")...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("diff the tree: %w", err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, gitexec.Check(ctx, cmd, err, "")
	}
	total, k := 0, -1
	var (
		cur    bytes.Buffer // the current patch, up to its limit
		curLen int          // its whole length
	)
	flush := func() {
		if k < 0 || k >= len(d.Files) {
			return
		}
		p := &d.Files[k]
		switch {
		case total >= limits.Total:
			p.Note = fmt.Sprintf("patch left out: the diff reached its limit of %s", bytesize.Format(int64(limits.Total)))
			d.Truncated = true
		case curLen > limits.File:
			p.Patch = string(CutLine(cur.Bytes(), limits.File))
			p.Note = fmt.Sprintf("patch cut at %s of %s", bytesize.Format(int64(limits.File)), bytesize.Format(int64(curLen)))
			d.Truncated = true
		default:
			p.Patch = cur.String()
		}
		total += len(p.Patch)
	}
	rd := bufio.NewReaderSize(stdout, 64<<10)
	for total < limits.Total {
		line, err := rd.ReadSlice('\n')
		if bytes.HasPrefix(line, []byte("diff --git ")) {
			flush()
			k++
			cur.Reset()
			curLen = 0
		}
		// A patch's bytes past its limit are counted, not kept.
		curLen += len(line)
		if room := limits.File + 1 - cur.Len(); room > 0 {
			cur.Write(line[:min(len(line), room)])
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil {
			break
		}
	}
	flush()
	for i := k + 1; i < len(d.Files); i++ { // left out once the total was reached
		d.Files[i].Note = fmt.Sprintf("patch left out: the diff reached its limit of %s", bytesize.Format(int64(limits.Total)))
		d.Truncated = true
	}
	cancel() // whatever is left is not wanted
	if err := cmd.Wait(); err != nil && ctx.Err() == nil && total < limits.Total && k+1 == len(d.Files) {
		if cerr := gitexec.Check(ctx, cmd, err, stderr.String()); cerr != nil && !errors.Is(cerr, context.Canceled) {
			return nil, fmt.Errorf("diff the tree: %w", cerr)
		}
	}
	return d, nil
}

// CutLine returns b cut to at most n bytes, at the end of a line when one
// ends in them.
func CutLine(b []byte, n int) []byte {
	b = b[:n]
	if i := bytes.LastIndexByte(b, '\n'); i > 0 {
		return b[:i+1]
	}
	return b
}

// Summarized is a tree's change against its base, as the live events
// carry it: the files with their counts, and the totals.
type Summarized struct {
	Base      string `json:"base"`
	Files     []File `json:"files"`
	Additions int    `json:"additions"`
	Deletions int    `json:"deletions"`
}

// maxIncremental is how many changed paths an update diffs on their own;
// more, and it diffs the whole tree.
const maxIncremental = 500

// Tracker keeps the summary of one tree's change up to date as its files
// change, diffing only the paths that did: a repository of 50,000 files
// is not walked for each write. It is safe for concurrent use, though one
// goroutine normally drives it.
type Tracker struct {
	dir  string
	from []string

	// mu guards the fields below.
	mu    sync.Mutex
	base  string
	files map[string]File // by path; nil until the first update
}

// NewTracker follows the tree whose top is dir, against Base's commit for
// from.
func NewTracker(dir string, from ...string) *Tracker { return &Tracker{dir: dir, from: from} }

// Dir returns the tree's top.
func (t *Tracker) Dir() string { return t.dir }

// Update brings the summary up to date after changes to paths (relative
// to the top, slash-separated) and returns it. With no paths, or when the
// base moved (a commit, a merge), the whole tree is diffed again.
func (t *Tracker) Update(ctx context.Context, paths []string) (Summarized, error) {
	base, err := Base(ctx, t.dir, t.from...)
	if err != nil {
		return Summarized{}, err
	}
	t.mu.Lock()
	full := t.files == nil || base != t.base || len(paths) == 0 || len(paths) > maxIncremental
	t.mu.Unlock()
	if full {
		paths = nil
	}
	files, err := Summary(ctx, t.dir, base, paths)
	if err != nil {
		return Summarized{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if full {
		t.files = make(map[string]File, len(files))
	} else {
		for p, f := range t.files {
			if slicesContainsUnder(paths, f.Path) || (f.OldPath != "" && slicesContainsUnder(paths, f.OldPath)) {
				delete(t.files, p)
			}
		}
	}
	for _, f := range files {
		t.files[f.Path] = f
	}
	t.base = base
	return t.summaryLocked(), nil
}

// BaseMoved reports whether the base commit differs from the one the
// summary was made against: a commit or a checkout changes it without a
// write to any file the watcher sees.
func (t *Tracker) BaseMoved(ctx context.Context) (bool, error) {
	base, err := Base(ctx, t.dir, t.from...)
	if err != nil {
		return false, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.files != nil && base != t.base, nil
}

// Base returns the base commit of the last update, or "".
func (t *Tracker) Base() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.base
}

func (t *Tracker) summaryLocked() Summarized {
	s := Summarized{Base: t.base, Files: make([]File, 0, len(t.files))}
	for _, f := range t.files {
		s.Files = append(s.Files, f)
		s.Additions += f.Additions
		s.Deletions += f.Deletions
	}
	sort.Slice(s.Files, func(i, j int) bool { return s.Files[i].Path < s.Files[j].Path })
	return s
}

// slicesContainsUnder reports whether path is one of paths or lies under
// one of them.
func slicesContainsUnder(paths []string, path string) bool {
	for _, p := range paths {
		if path == p || strings.HasPrefix(path, p+"/") {
			return true
		}
	}
	return false
}
