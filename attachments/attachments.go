// Package attachments keeps the files people hand to an agent: an image
// pasted onto a session's terminal, a PDF dropped on it, a text file
// picked on a phone. Each is stored in the session's own tree, under
// Dir/<session id>/, where the agent can open it by a relative path, and
// kept out of git through the repository's .git/info/exclude (never the
// user's .gitignore, which is theirs and versioned).
//
// What is stored is bounded and checked: a file is at most
// Options.MaxFile bytes and a session's files at most
// Options.MaxPerSession in all; its type is read from its content, never
// from its name or the type the client claims (images in PNG, JPEG, GIF
// or WebP, PDF, or text: UTF-8 without NUL), and its stored name keeps an
// extension that matches that content; the name is cleaned of what would
// act on a terminal or a shell. A file is streamed to a temporary file in
// the session's folder and renamed once it passed every check, so a
// refused upload leaves nothing and none is held in memory.
//
// Every write goes through an os.Root opened on the session's tree: a
// symbolic link an agent (or a cloned repository) put at .agentmux cannot
// lead a write outside the tree.
//
// The files go with their session: Drop removes a session's folder, and
// only its own, so sessions sharing a tree (the workspace's root) keep
// theirs.
package attachments

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/agentmux/agentmux/internal/bytesize"
)

// Dir is where a session's attachments live, relative to its tree: each
// session has a folder of its own in it, named by its id.
const Dir = ".agentmux/attachments"

// Defaults of Options.
const (
	DefaultMaxFile       = 20 << 20
	DefaultMaxPerSession = 200 << 20
	// MaxFiles bounds how many files one session keeps, whatever their
	// size: Drop runs under the session manager's locks (see Drop), so
	// its work must stay small.
	MaxFiles = 500
)

// Errors Save returns, wrapped with what was refused; callers map them to
// codes at the edge.
var (
	// ErrTooLarge: the file is over Options.MaxFile.
	ErrTooLarge = errors.New("attachment too large")
	// ErrFull: the session's files would be over Options.MaxPerSession,
	// or MaxFiles.
	ErrFull = errors.New("session's attachments full")
	// ErrType: the content is none of the types taken.
	ErrType = errors.New("attachment type not accepted")
	// ErrName: the name is refused (a path, not a name), or the file is
	// empty.
	ErrName = errors.New("attachment refused")
	// ErrCut: the file did not arrive whole (the client stopped sending,
	// or its body was malformed); nothing was stored.
	ErrCut = errors.New("attachment not received whole")
)

// Options configure a Store. The zero value is the defaults.
type Options struct {
	// MaxFile bounds one file, in bytes; 0 means DefaultMaxFile.
	MaxFile int64
	// MaxPerSession bounds the bytes of one session's files together;
	// 0 means DefaultMaxPerSession.
	MaxPerSession int64
	// GitTimeout bounds the git that finds the exclude file; 0 means 10 s.
	GitTimeout time.Duration
	// Logger receives what the store did; nil discards it.
	Logger *slog.Logger
}

// Store saves and drops sessions' attachments. It is safe for concurrent
// use.
type Store struct {
	opts Options
	log  *slog.Logger

	// mu serialises the last step of a save (the session's total, the
	// unique name, the rename) and the exclude file's edit, so that two
	// uploads at once can neither pass the total together nor take one
	// name. Streams are written outside it.
	mu sync.Mutex
}

// New returns a Store with opts.
func New(opts Options) *Store {
	opts.MaxFile = cmp.Or(opts.MaxFile, DefaultMaxFile)
	opts.MaxPerSession = cmp.Or(opts.MaxPerSession, DefaultMaxPerSession)
	opts.GitTimeout = cmp.Or(opts.GitTimeout, 10*time.Second)
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Store{opts: opts, log: log}
}

// MaxFile returns the bound of one file, in bytes.
func (s *Store) MaxFile() int64 { return s.opts.MaxFile }

// Saved is a stored attachment.
type Saved struct {
	// Path is relative to the session's tree, with slashes: the
	// session's agent, which starts there, opens it by this path.
	Path string
	// Kind is what its content is.
	Kind Kind
	// Size is its length in bytes.
	Size int64
}

// tempPrefix starts the name of a file being received; such files are
// not counted, listed or kept.
const tempPrefix = ".upload-"

// Save stores what r holds as an attachment of session id, whose tree is
// the directory tree, under a name made from name. It reads r to its end
// or to the first byte over the bound. See the package doc for what it
// checks; a refusal is one of the package's errors, wrapped with why.
func (s *Store) Save(ctx context.Context, id, tree, name string, r io.Reader) (Saved, error) {
	if err := checkID(id); err != nil {
		return Saved{}, err
	}
	if err := checkName(name); err != nil {
		return Saved{}, err
	}
	log := s.log.With("session", id)
	root, err := os.OpenRoot(tree)
	if err != nil {
		return Saved{}, fmt.Errorf("open the session's tree: %w", err)
	}
	defer root.Close()
	dir := path.Join(Dir, id)
	// Kept out of git before the first byte lands, so no status ever
	// shows the file.
	s.exclude(ctx, tree, log)
	if err := root.MkdirAll(dir, 0o755); err != nil {
		return Saved{}, fmt.Errorf("make the session's attachments folder: %w", err)
	}
	if used, n, err := usage(root, dir); err != nil {
		return Saved{}, err
	} else if used >= s.opts.MaxPerSession || n >= MaxFiles {
		return Saved{}, s.fullError(used, n)
	}

	tmp, tmpName, err := createTemp(root, dir)
	if err != nil {
		return Saved{}, err
	}
	kept := false
	defer func() {
		if !kept {
			_ = tmp.Close()
			_ = root.Remove(tmpName)
		}
	}()
	kind, size, err := s.receive(tmp, r)
	if err != nil {
		return Saved{}, err
	}
	if err := tmp.Close(); err != nil {
		return Saved{}, fmt.Errorf("write the attachment: %w", err)
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	used, n, err := usage(root, dir)
	if err != nil {
		return Saved{}, err
	}
	if used+size > s.opts.MaxPerSession || n >= MaxFiles {
		return Saved{}, s.fullError(used, n)
	}
	final, err := unique(root, dir, cleanName(name, kind))
	if err != nil {
		return Saved{}, err
	}
	if err := root.Rename(tmpName, path.Join(dir, final)); err != nil {
		return Saved{}, fmt.Errorf("store the attachment: %w", err)
	}
	kept = true
	saved := Saved{Path: path.Join(dir, final), Kind: kind, Size: size}
	log.Info("attachment stored", "path", saved.Path, "kind", kind, "bytes", size)
	return saved, nil
}

// receive copies r into f, at most MaxFile bytes, and tells what the
// content is from its first bytes (and, for text, from all of them).
func (s *Store) receive(f io.Writer, r io.Reader) (Kind, int64, error) {
	var sn sniffer
	// One byte over the bound tells a file of exactly MaxFile bytes from
	// a larger one.
	n, err := io.Copy(io.MultiWriter(f, &sn), io.LimitReader(readErrors{r}, s.opts.MaxFile+1))
	var re readError
	if errors.As(err, &re) {
		return "", n, fmt.Errorf("%w after %d bytes: %w", ErrCut, n, re.err)
	}
	if err != nil {
		return "", n, fmt.Errorf("write the attachment: %w", err)
	}
	if n > s.opts.MaxFile {
		return "", n, fmt.Errorf("%w: a file may have at most %s (--attachment-max)", ErrTooLarge, bytesize.Format(s.opts.MaxFile))
	}
	if n == 0 {
		return "", 0, fmt.Errorf("%w: the file is empty", ErrName)
	}
	kind, err := sn.kind()
	return kind, n, err
}

// readErrors marks the errors of reading r, which are the sender's, from
// those of writing the file, which are the server's.
type readErrors struct{ r io.Reader }

func (r readErrors) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF {
		err = readError{err}
	}
	return n, err
}

// readError is an error of reading what was sent.
type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }
func (e readError) Unwrap() error { return e.err }

func (s *Store) fullError(used int64, n int) error {
	if n >= MaxFiles {
		return fmt.Errorf("%w: the session keeps %d files already, the most it may; they go when the session is deleted", ErrFull, n)
	}
	return fmt.Errorf("%w: the session's files take %s of the %s a session may keep (--attachments-per-session); they go when the session is deleted",
		ErrFull, bytesize.Format(used), bytesize.Format(s.opts.MaxPerSession))
}

// Drop removes session id's attachments from its tree, and the folders
// above them once empty; another session's stay. It is called with the
// session manager's events, under its locks, and so does little: at most
// MaxFiles files in one folder, removed before git is asked to remove a
// worktree (which follows the event), so the two never race.
func (s *Store) Drop(id, tree string) {
	if checkID(id) != nil || tree == "" {
		return
	}
	log := s.log.With("session", id)
	root, err := os.OpenRoot(tree)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			log.Warn("cannot drop the session's attachments", "tree", tree, "err", err)
		}
		return
	}
	defer root.Close()
	dir := path.Join(Dir, id)
	if _, err := root.Lstat(dir); errors.Is(err, fs.ErrNotExist) {
		return
	}
	if err := root.RemoveAll(dir); err != nil {
		log.Warn("cannot drop the session's attachments", "dir", dir, "err", err)
		return
	}
	// Folders other sessions still use are not empty, and stay.
	_ = root.Remove(Dir)
	_ = root.Remove(path.Dir(Dir))
	log.Info("attachments dropped", "dir", dir)
}

// checkID refuses an id that is not one path element: ids are the
// server's UUIDs, so this never refuses one of them.
func checkID(id string) error {
	if id == "" || id == "." || id == ".." || strings.ContainsAny(id, `/\`) || len(id) > 64 {
		return fmt.Errorf("%w: session id %q is not one", ErrName, id)
	}
	return nil
}

// usage returns the bytes and the number of the files in dir, those
// being received left out.
func usage(root *os.Root, dir string) (int64, int, error) {
	d, err := root.Open(dir)
	if err != nil {
		return 0, 0, fmt.Errorf("read the session's attachments folder: %w", err)
	}
	defer d.Close()
	entries, err := d.ReadDir(-1)
	if err != nil {
		return 0, 0, fmt.Errorf("read the session's attachments folder: %w", err)
	}
	var total int64
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		if info, err := e.Info(); err == nil {
			total += info.Size()
			n++
		}
	}
	return total, n, nil
}

// createTemp creates a new file in dir to receive an upload into; its
// name is random, so uploads at once never share one.
func createTemp(root *os.Root, dir string) (*os.File, string, error) {
	for range 100 {
		name := path.Join(dir, tempPrefix+strconv.FormatInt(time.Now().UnixNano(), 36)+strconv.Itoa(os.Getpid()))
		f, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return nil, "", fmt.Errorf("create the attachment: %w", err)
		}
		return f, name, nil
	}
	return nil, "", errors.New("create the attachment: no free temporary name")
}

// unique returns name, or name with -2, -3... before its extension, so
// that it names no file in dir yet. mu must be held.
func unique(root *os.Root, dir, name string) (string, error) {
	ext := path.Ext(name)
	stem := strings.TrimSuffix(name, ext)
	for i := 1; i <= MaxFiles+1; i++ {
		try := name
		if i > 1 {
			try = stem + "-" + strconv.Itoa(i) + ext
		}
		if _, err := root.Lstat(path.Join(dir, try)); errors.Is(err, fs.ErrNotExist) {
			return try, nil
		} else if err != nil {
			return "", fmt.Errorf("name the attachment: %w", err)
		}
	}
	return "", fmt.Errorf("%w: no free name for %q", ErrFull, name)
}
