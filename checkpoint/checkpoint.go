// Package checkpoint keeps snapshots of a session's tree, so what an
// agent did can be looked at step by step and undone: each is a commit
// of every file of the tree, tracked and untracked (not ignored), under a
// private ref, refs/agentmux/checkpoints/<session>/<n>, but for the
// untracked files too big to keep (see Options) and what nested
// repositories hold.
//
// Taking, listing and comparing checkpoints touches nothing the user or
// the agent works with: not HEAD, not the index (a temporary one is used,
// through GIT_INDEX_FILE), not the files, not the stash. Restore puts the
// files back as a checkpoint had them, after taking one of how they are,
// so a restore can be undone too; HEAD and the index still stay as they
// are. Refs live in the repository's common directory, so the worktrees
// of one repository share them; the session id in the ref keeps each
// session's apart, and ids are checked so that none can name another
// ref.
//
// A checkpoint's parent is the one before it, or for a session's first,
// the commit its tree had checked out, so each one's change is the
// difference from its parent. A session keeps a bounded number; older
// ones are pruned first. Pruning bounds the list, not the object store:
// the checkpoints kept reach the pruned ones' commits through their
// parents, until Delete removes the session's refs and git's garbage
// collection the rest.
//
// # What a checkpoint leaves out
//
// A checkpoint is taken at every turn, and a big untracked file (a
// build, a dump, a model) changed before each would be stored whole each
// time: the object store grows by its size at every turn, and pruning
// frees nothing while the checkpoints kept reach the pruned ones.
// Untracked files over a size limit, and those past a total for the
// checkpoint, are left out before git add, by a pathspec that excludes
// them, so git never reads them and not one of their bytes reaches the
// object store. The checkpoint names them, with their sizes, in its
// commit message, which List reads back. Tracked files are kept at any
// size: they are the project's, and git holds their committed versions
// anyway.
//
// A repository inside the tree (a submodule, one added with git add, or
// one in an untracked directory) is left out as well, by the same
// pathspec: git add would otherwise run git status inside each gitlink,
// and that status the nested repository's own filters, which
// NeutralConfig does not reach (see gitexec, "Nested repositories").
// A gitlink is kept as the index records it, never updated to what is
// checked out there; an untracked repository is not kept at all; and
// nothing inside either is. Restore leaves them alone.
//
// Every git here is gitexec's, inert, and none runs the repository's
// hooks or filters (gitexec.NeutralConfig): a checkpoint is taken and
// restored without the user asking, and files are stored and written
// back as they are on disk.
package checkpoint

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/agentmux/agentmux/internal/gitexec"
	"github.com/agentmux/agentmux/scripts"
)

// The kinds of error callers map to their answers. Every error returned
// wraps one of them where it applies; the error's message, not the
// sentinel's, is the one to show.
var (
	// ErrNoGit means git is not on PATH; passed on as gitexec says it.
	ErrNoGit = gitexec.ErrNoGit
	// ErrUntrusted means git refused the repository for its owner; the
	// error says which and what to do, and is passed on as it is.
	ErrUntrusted = gitexec.ErrUntrusted
	// ErrInvalidSession means a session id is not one checkpoints can be
	// kept under: 1 to 128 letters, digits, '-' and '_', as a UUID is.
	ErrInvalidSession = errors.New("invalid session id")
	// ErrNotFound means the session has no checkpoint of that id (it was
	// never taken, or was pruned or deleted).
	ErrNotFound = errors.New("no such checkpoint")
)

// The bounds a zero Options stands for.
const (
	// DefaultKeep is how many checkpoints a session keeps.
	DefaultKeep = 100
	// DefaultMaxFileSize is the biggest untracked file a checkpoint keeps.
	DefaultMaxFileSize = 10 << 20
	// DefaultMaxTotalSize is the most bytes of untracked files one
	// checkpoint keeps: five files at DefaultMaxFileSize.
	DefaultMaxTotalSize = 50 << 20
)

// Options bound what checkpoints keep; the zero value is the defaults.
type Options struct {
	// Keep is how many checkpoints a session keeps; beyond it the oldest
	// are pruned. DefaultKeep when < 1.
	Keep int
	// MaxFileSize is the size in bytes above which an untracked file is
	// left out. DefaultMaxFileSize when 0; no limit when < 0.
	MaxFileSize int64
	// MaxTotalSize bounds the bytes of untracked files one checkpoint
	// keeps: they go in smallest first (by path among equals) while the
	// sum stays within it, and the rest are left out, so the small files
	// an agent writes are the last to go. DefaultMaxTotalSize when 0; no
	// limit when < 0.
	MaxTotalSize int64
}

// keep, maxFile and maxTotal are o's bounds, defaults filled in; a
// negative size is no limit.
func (o Options) keep() int {
	if o.Keep < 1 {
		return DefaultKeep
	}
	return o.Keep
}

func (o Options) maxFile() int64  { return orDefault(o.MaxFileSize, DefaultMaxFileSize) }
func (o Options) maxTotal() int64 { return orDefault(o.MaxTotalSize, DefaultMaxTotalSize) }

func orDefault(n, def int64) int64 {
	if n == 0 {
		return def
	}
	return n
}

// refRoot is where the checkpoints' refs live.
const refRoot = "refs/agentmux/checkpoints/"

// casAttempts is how many times Take tries again when another Take of the
// same session made the ref it was about to make.
const casAttempts = 3

// identity is the author and committer of checkpoint commits: the
// user's may not be configured, and a checkpoint is no one's work.
var identity = []string{
	"GIT_AUTHOR_NAME=agentmux", "GIT_AUTHOR_EMAIL=agentmux@localhost",
	"GIT_COMMITTER_NAME=agentmux", "GIT_COMMITTER_EMAIL=agentmux@localhost",
}

var validSession = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Checkpoint is one snapshot of a session's tree.
type Checkpoint struct {
	// ID numbers a session's checkpoints from 1, in the order taken.
	ID   int       `json:"id"`
	Time time.Time `json:"time"`
	// Commit is the snapshot's commit.
	Commit string `json:"commit"`
	// Files, Insertions and Deletions count what changed since the
	// commit's parent: the checkpoint before, or for a session's first,
	// the commit its tree had checked out. A binary file counts as a file
	// without lines.
	Files      int `json:"files"`
	Insertions int `json:"insertions"`
	Deletions  int `json:"deletions"`
	// Skipped are the untracked files the checkpoint left out as too big
	// (see Options), biggest first: at most maxListed of them, and
	// SkippedMore counts the rest.
	Skipped     []Skipped `json:"skipped,omitempty"`
	SkippedMore int       `json:"skippedMore,omitempty"`
	// Check is the check script's run on this checkpoint's tree, the turn
	// it ended being checked (package checks keeps it; this package
	// neither runs nor stores it): absent when none ran.
	Check *scripts.Result `json:"check,omitempty"`
}

// Skipped is an untracked file a checkpoint left out as too big.
type Skipped struct {
	// Path is relative to the tree's top, with forward slashes.
	Path string `json:"path"`
	// Size is its size in bytes when the checkpoint was taken.
	Size int64 `json:"size"`
	// Reason is OverFileLimit or OverTotal.
	Reason string `json:"reason"`
}

// The reasons a file is skipped.
const (
	// OverFileLimit: the file is bigger than Options.MaxFileSize.
	OverFileLimit = "file"
	// OverTotal: the untracked files smaller than it reached
	// Options.MaxTotalSize without it.
	OverTotal = "total"
)

// Take snapshots the tree that holds dir as session's next checkpoint and
// returns it, leaving out the untracked files opts says are too big.
// When the tree is as the session's last checkpoint has it, the same
// files left out, none is made: that one is returned and created is
// false. Beyond opts.Keep checkpoints, the oldest are pruned.
func Take(ctx context.Context, dir, session string, opts Options) (cp Checkpoint, created bool, err error) {
	if err := checkSession(session); err != nil {
		return Checkpoint{}, false, err
	}
	r, err := open(ctx, dir)
	if err != nil {
		return Checkpoint{}, false, err
	}
	return r.take(ctx, session, opts)
}

// List returns session's checkpoints, oldest first; none is no error.
func List(ctx context.Context, dir, session string) ([]Checkpoint, error) {
	if err := checkSession(session); err != nil {
		return nil, err
	}
	r, err := open(ctx, dir)
	if err != nil {
		return nil, err
	}
	refs, err := r.refs(ctx, session)
	if err != nil {
		return nil, err
	}
	return r.checkpoints(ctx, refs)
}

// Delete removes every checkpoint of session; one with none is no error.
func Delete(ctx context.Context, dir, session string) error {
	if err := checkSession(session); err != nil {
		return err
	}
	r, err := open(ctx, dir)
	if err != nil {
		return err
	}
	refs, err := r.refs(ctx, session)
	if err != nil {
		return err
	}
	return r.deleteRefs(ctx, session, refs)
}

// checkSession returns ErrInvalidSession for an id that could name
// another ref than the session's own.
func checkSession(session string) error {
	if !validSession.MatchString(session) {
		return gitexec.Kinded(ErrInvalidSession, nil, "%q is not a session id checkpoints can be kept under: it must be 1 to 128 letters, digits, '-' and '_'", session)
	}
	return nil
}

// repo is the tree checkpoints are taken of.
type repo struct {
	// top is the tree's top directory.
	top string
	// cfg is gitexec.NeutralConfig's options for it.
	cfg []string
}

// open finds the tree that holds dir.
func open(ctx context.Context, dir string) (*repo, error) {
	out, err := gitexec.Run(ctx, dir, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, gitexec.Step(err, gitexec.ErrNotRepo, "%s is not inside a git work tree", dir)
	}
	r := &repo{top: strings.TrimSuffix(out, "\n")}
	if r.cfg, err = gitexec.NeutralConfig(ctx, r.top); err != nil {
		return nil, gitexec.Step(err, nil, "read the config of %s", r.top)
	}
	return r, nil
}

// git runs a passive git in the tree, with none of its hooks or filters
// and env added, and returns its output.
func (r *repo) git(ctx context.Context, env []string, stdin []byte, args ...string) (string, error) {
	out, err := gitexec.RunEnv(ctx, r.top, env, stdin, slices.Concat(r.cfg, args)...)
	return string(out), err
}

// ref is one checkpoint's ref, as for-each-ref lists it.
type ref struct {
	id     int
	commit string
	tree   string
	time   time.Time
	// skipped and skippedMore are what its commit message says it left
	// out.
	skipped     []Skipped
	skippedMore int
}

// refName is the ref of session's checkpoint id.
func refName(session string, id int) string {
	return refRoot + session + "/" + strconv.Itoa(id)
}

// refs lists session's checkpoint refs, by id. Refs under the session's
// prefix whose last part is no id are not checkpoints, and are left out.
func (r *repo) refs(ctx context.Context, session string) ([]ref, error) {
	prefix := refRoot + session + "/"
	// Each ref's fields end in a NUL, and the ref in a newline; a commit
	// message holds no NUL.
	out, err := r.git(ctx, nil, nil, "for-each-ref", "--format=%(refname)%00%(objectname)%00%(tree)%00%(committerdate:unix)%00%(contents:body)%00", prefix)
	if err != nil {
		return nil, gitexec.Step(err, nil, "list the checkpoints of session %s", session)
	}
	var refs []ref
	for rec := range strings.SplitSeq(out, "\x00\n") {
		f := strings.Split(rec, "\x00")
		if len(f) != 5 {
			continue
		}
		id, err := strconv.Atoi(strings.TrimPrefix(f[0], prefix))
		if err != nil || id < 1 || refName(session, id) != f[0] {
			continue
		}
		secs, _ := strconv.ParseInt(f[3], 10, 64)
		skipped, more := parseSkipped(f[4])
		refs = append(refs, ref{id: id, commit: f[1], tree: f[2], time: time.Unix(secs, 0), skipped: skipped, skippedMore: more})
	}
	slices.SortFunc(refs, func(a, b ref) int { return a.id - b.id })
	return refs, nil
}

// take is Take in r.
func (r *repo) take(ctx context.Context, session string, opts Options) (Checkpoint, bool, error) {
	keep := opts.keep()
	tree, skipped, err := r.snapshot(ctx, opts)
	if err != nil {
		return Checkpoint{}, false, err
	}
	listed, more := listSkipped(skipped)
	for range casAttempts {
		refs, err := r.refs(ctx, session)
		if err != nil {
			return Checkpoint{}, false, err
		}
		id, parent := 1, ""
		if n := len(refs); n > 0 {
			last := refs[n-1]
			if last.tree == tree && sameSkipped(last.skipped, last.skippedMore, listed, more) {
				cps, err := r.checkpoints(ctx, refs[n-1:])
				if err != nil {
					return Checkpoint{}, false, err
				}
				return cps[0], false, nil
			}
			id, parent = last.id+1, last.commit
		} else if parent, err = r.head(ctx); err != nil {
			return Checkpoint{}, false, err
		}
		commit, err := r.commit(ctx, tree, parent, fmt.Sprintf("agentmux checkpoint %d of session %s\n", id, session)+skippedMessage(listed, more))
		if err != nil {
			return Checkpoint{}, false, err
		}
		// Made only if no other Take made it first: the empty old value
		// says it must not exist.
		name := refName(session, id)
		_, err = r.git(ctx, nil, nil, "update-ref", "-m", "agentmux checkpoint", name, commit, "")
		if ge := (*gitexec.Error)(nil); errors.As(err, &ge) && ge.Says("already exists", "cannot lock ref") {
			continue
		}
		if err != nil {
			return Checkpoint{}, false, gitexec.Step(err, nil, "record checkpoint %d of session %s", id, session)
		}
		refs, err = r.refs(ctx, session)
		if err != nil {
			return Checkpoint{}, false, err
		}
		if len(refs) > keep {
			if err := r.deleteRefs(ctx, session, refs[:len(refs)-keep]); err != nil {
				return Checkpoint{}, false, fmt.Errorf("checkpoint %d was taken, but pruning the oldest failed: %w", id, err)
			}
		}
		i := slices.IndexFunc(refs, func(f ref) bool { return f.id == id })
		if i < 0 {
			return Checkpoint{}, false, fmt.Errorf("checkpoint %d of session %s was taken, and is gone already", id, session)
		}
		cps, err := r.checkpoints(ctx, refs[i:i+1])
		if err != nil {
			return Checkpoint{}, false, err
		}
		return cps[0], true, nil
	}
	return Checkpoint{}, false, fmt.Errorf("take a checkpoint of session %s: other checkpoints of it kept being taken at the same time", session)
}

// snapshot writes the tree's files, tracked and untracked (not ignored),
// as a tree object and returns it, with the untracked files it left out
// as too big; nested repositories are left out too, gitlinks kept as the
// index has them (see the package doc). It stages the files in a copy of
// the index, which keeps the stat data that spares git reading the files
// it knows unchanged; the real index is never written.
func (r *repo) snapshot(ctx context.Context, opts Options) (string, []Skipped, error) {
	env, done, err := r.tempIndex(ctx, "")
	if err != nil {
		return "", nil, err
	}
	defer done()
	links, err := gitexec.Gitlinks(ctx, r.top, env, r.cfg)
	if err != nil {
		return "", nil, gitexec.Step(err, nil, "list the submodules of %s", r.top)
	}
	files, repos, err := gitexec.Untracked(ctx, r.top, env, r.cfg)
	if err != nil {
		return "", nil, gitexec.Step(err, nil, "list the untracked files of %s", r.top)
	}
	skipped, err := r.tooBig(files, opts)
	if err != nil {
		return "", nil, err
	}
	// Everything, but for what is excluded: literal paths, each with
	// what lies under it.
	var spec strings.Builder
	spec.WriteString(".\x00")
	for _, p := range slices.Concat(links, repos, skippedPaths(skipped)) {
		spec.WriteString(":(exclude,literal)" + p + "\x00")
	}
	if _, err := r.git(ctx, env, []byte(spec.String()), "add", "--all", "--pathspec-from-file=-", "--pathspec-file-nul"); err != nil {
		return "", nil, gitexec.Step(err, nil, "stage the files of %s for a checkpoint", r.top)
	}
	out, err := r.git(ctx, env, nil, "write-tree")
	if err != nil {
		return "", nil, gitexec.Step(err, nil, "write the tree of %s for a checkpoint", r.top)
	}
	return strings.TrimSuffix(out, "\n"), skipped, nil
}

// tempIndex makes a temporary index and returns the environment that
// points git at it, and what removes it. With tree "", it is a copy of
// the tree's index (empty when there is none); else it is tree read in.
func (r *repo) tempIndex(ctx context.Context, tree string) (env []string, done func(), err error) {
	tmp, err := os.MkdirTemp("", "agentmux-checkpoint-")
	if err != nil {
		return nil, nil, fmt.Errorf("make a temporary index: %w", err)
	}
	done = func() { _ = os.RemoveAll(tmp) }
	index := filepath.Join(tmp, "index")
	env = []string{"GIT_INDEX_FILE=" + index}
	if tree != "" {
		if _, err := r.git(ctx, env, nil, "read-tree", tree); err != nil {
			done()
			return nil, nil, gitexec.Step(err, nil, "read tree %s into a temporary index", short(tree))
		}
		return env, done, nil
	}
	out, err := r.git(ctx, nil, nil, "rev-parse", "--path-format=absolute", "--git-path", "index")
	if err != nil {
		done()
		return nil, nil, gitexec.Step(err, nil, "find the index of %s", r.top)
	}
	// Git writes an index whole, by renaming a new one over it, so the
	// copy is one whole index even while the agent's git writes.
	b, err := os.ReadFile(strings.TrimSuffix(out, "\n"))
	switch {
	case errors.Is(err, os.ErrNotExist): // git starts an empty one
	case err != nil:
		done()
		return nil, nil, fmt.Errorf("copy the index of %s: %w", r.top, err)
	default:
		if err := os.WriteFile(index, b, 0o600); err != nil {
			done()
			return nil, nil, fmt.Errorf("copy the index of %s: %w", r.top, err)
		}
	}
	return env, done, nil
}

// head returns the commit the tree has checked out; "" when it has none
// yet.
func (r *repo) head(ctx context.Context) (string, error) {
	out, err := r.git(ctx, nil, nil, "rev-parse", "--verify", "--quiet", "HEAD^{commit}")
	if ge := (*gitexec.Error)(nil); errors.As(err, &ge) && ge.Code == 1 {
		return "", nil
	}
	if err != nil {
		return "", gitexec.Step(err, nil, "resolve HEAD of %s", r.top)
	}
	return strings.TrimSuffix(out, "\n"), nil
}

// commit makes a checkpoint commit of tree on parent ("" for none).
func (r *repo) commit(ctx context.Context, tree, parent, message string) (string, error) {
	args := []string{"commit-tree", "--no-gpg-sign"}
	if parent != "" {
		args = append(args, "-p", parent)
	}
	out, err := r.git(ctx, identity, []byte(message), append(args, tree)...)
	if err != nil {
		return "", gitexec.Step(err, nil, "make the checkpoint commit of tree %s", short(tree))
	}
	return strings.TrimSuffix(out, "\n"), nil
}

// deleteRefs deletes refs, each only if it is still where it was listed,
// all at once.
func (r *repo) deleteRefs(ctx context.Context, session string, refs []ref) error {
	if len(refs) == 0 {
		return nil
	}
	var b strings.Builder
	for _, f := range refs {
		fmt.Fprintf(&b, "delete %s %s\n", refName(session, f.id), f.commit)
	}
	if _, err := r.git(ctx, nil, []byte(b.String()), "update-ref", "--stdin"); err != nil {
		return gitexec.Step(err, nil, "delete %d checkpoints of session %s", len(refs), session)
	}
	return nil
}

// checkpoints returns the checkpoints of refs, with what changed in each
// counted against its parent, in one git for all.
func (r *repo) checkpoints(ctx context.Context, refs []ref) ([]Checkpoint, error) {
	cps := make([]Checkpoint, len(refs))
	if len(refs) == 0 {
		return cps, nil
	}
	var in strings.Builder
	for _, f := range refs {
		in.WriteString(f.commit + "\n")
	}
	// Each commit's id, then its numstat records: "adds\tdels\tpath", or
	// for a rename "adds\tdels\t" and the two paths; "-" counts for a
	// binary file. A commit without changes is not named at all.
	out, err := r.git(ctx, nil, []byte(in.String()), "diff-tree", "--stdin", "--root", "-r", "-M", "--numstat", "-z")
	if err != nil {
		return nil, gitexec.Step(err, nil, "count the changes of %d checkpoints", len(refs))
	}
	type stat struct{ files, ins, del int }
	stats := map[string]*stat{}
	var cur *stat
	tok := strings.Split(out, "\x00")
	for i := 0; i < len(tok); i++ {
		f := strings.SplitN(tok[i], "\t", 3)
		if len(f) != 3 {
			if tok[i] != "" {
				cur = &stat{}
				stats[tok[i]] = cur
			}
			continue
		}
		if f[2] == "" {
			i += 2 // a rename: the two paths follow
		}
		if cur == nil {
			continue
		}
		cur.files++
		a, _ := strconv.Atoi(f[0])
		d, _ := strconv.Atoi(f[1])
		cur.ins += a
		cur.del += d
	}
	for i, f := range refs {
		cps[i] = Checkpoint{ID: f.id, Time: f.time, Commit: f.commit, Skipped: f.skipped, SkippedMore: f.skippedMore}
		if s := stats[f.commit]; s != nil {
			cps[i].Files, cps[i].Insertions, cps[i].Deletions = s.files, s.ins, s.del
		}
	}
	return cps, nil
}

// find returns session's checkpoint id.
func (r *repo) find(ctx context.Context, session string, id int) (ref, error) {
	refs, err := r.refs(ctx, session)
	if err != nil {
		return ref{}, err
	}
	i := slices.IndexFunc(refs, func(f ref) bool { return f.id == id })
	if i < 0 {
		return ref{}, gitexec.Kinded(ErrNotFound, nil, "session %s has no checkpoint %d", session, id)
	}
	return refs[i], nil
}

// short is an object id cut for messages.
func short(id string) string { return id[:min(len(id), 12)] }
