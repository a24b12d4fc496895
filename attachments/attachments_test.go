package attachments

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/testutil"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const gitWait = 30 * time.Second

// Real files of each kind, as their first bytes make them.
var (
	pngBytes  = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{0, 1, 2}, 100)...)
	jpegBytes = append([]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00"), bytes.Repeat([]byte{0xff, 0}, 50)...)
	gifBytes  = append([]byte("GIF89a\x01\x00\x01\x00"), 0, 0, 0, ';')
	webpBytes = append([]byte("RIFF\x24\x00\x00\x00WEBPVP8 "), bytes.Repeat([]byte{0}, 30)...)
	pdfBytes  = []byte("%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\n%%EOF\n")
	elfBytes  = append([]byte("\x7fELF\x02\x01\x01\x00"), bytes.Repeat([]byte{0}, 40)...)
)

func newStore(t *testing.T, opts Options) *Store {
	t.Helper()
	return New(opts)
}

func save(t *testing.T, s *Store, id, tree, name string, content []byte) (Saved, error) {
	t.Helper()
	return s.Save(testutil.Context(t, gitWait), id, tree, name, bytes.NewReader(content))
}

// TestKindsByContent: each kind taken is stored byte for byte under a
// name whose extension is its content's, whatever the name said.
func TestKindsByContent(t *testing.T) {
	tree := testutil.TempDir(t)
	s := newStore(t, Options{})
	for _, c := range []struct {
		name    string
		content []byte
		kind    Kind
		want    string
	}{
		{"shot.png", pngBytes, PNG, "shot.png"},
		{"photo.JPEG", jpegBytes, JPEG, "photo.jpg"},
		{"anim.gif", gifBytes, GIF, "anim.gif"},
		{"pic.webp", webpBytes, WebP, "pic.webp"},
		{"paper.pdf", pdfBytes, PDF, "paper.pdf"},
		{"notes.md", []byte("# Notes\nnaïve café ✓\n"), Text, "notes.md"},
		// The name lies; the content tells.
		{"really-a-png.txt", pngBytes, PNG, "really-a-png.png"},
		{"image.png", []byte("just words\n"), Text, "image.txt"},
		{"Makefile", []byte("all:\n\ttrue\n"), Text, "Makefile.txt"},
	} {
		got, err := save(t, s, "sess-1", tree, c.name, c.content)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got.Kind != c.kind || got.Path != Dir+"/sess-1/"+c.want || got.Size != int64(len(c.content)) {
			t.Errorf("%s: got %+v, want kind %s, path %s/sess-1/%s", c.name, got, c.kind, Dir, c.want)
		}
		b, err := os.ReadFile(filepath.Join(tree, got.Path))
		if err != nil || !bytes.Equal(b, c.content) {
			t.Errorf("%s: stored bytes differ (%v)", c.name, err)
		}
	}
	// Nothing left behind by the uploads.
	entries, _ := os.ReadDir(filepath.Join(tree, Dir, "sess-1"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			t.Errorf("temporary file %s left", e.Name())
		}
	}
}

// TestTypeByContentNotName: a program named like an image is refused,
// and so is text that is not UTF-8; the error says what is taken and
// that the name does not count. Nothing is stored.
func TestTypeByContentNotName(t *testing.T) {
	tree := testutil.TempDir(t)
	s := newStore(t, Options{})
	for name, content := range map[string][]byte{
		"cat.png":     elfBytes,
		"notes.txt":   []byte("caf\xe9 latin-1\n"),
		"utf16.txt":   []byte("\xff\xfeh\x00i\x00"),
		"cut.txt":     []byte("ends in half a character \xe2\x9c"),
		"archive.pdf": []byte("PK\x03\x04\x14\x00"),
	} {
		_, err := save(t, s, "sess-1", tree, name, content)
		testutil.ErrorKind(t, err, ErrType, "PNG, JPEG, GIF, WebP", "name does not count")
	}
	if n := countFiles(t, filepath.Join(tree, Dir, "sess-1")); n != 0 {
		t.Errorf("%d files stored by refused uploads", n)
	}
}

// TestTextAcrossWrites: the text check holds when a character is split
// between two reads, and finds a NUL or bad byte however deep in.
func TestTextAcrossWrites(t *testing.T) {
	text := strings.Repeat("✓ é 日本 ", 5000)
	for _, c := range []struct {
		content string
		ok      bool
	}{
		{text, true},
		{text + "\x00", false},
		{text + "\xc3(" + text, false},
	} {
		var sn sniffer
		if _, err := io.CopyBuffer(&sn, strings.NewReader(c.content), make([]byte, 7)); err != nil {
			t.Fatal(err)
		}
		k, err := sn.kind()
		if (err == nil) != c.ok || c.ok && k != Text {
			t.Errorf("content of %d bytes: %s, %v; want ok %v", len(c.content), k, err, c.ok)
		}
	}
}

// TestSizeBounds: a file over the bound is refused while it streams (the
// reader is not drained past the bound), one of exactly the bound is
// taken, and the session's total is kept, another session's apart.
func TestSizeBounds(t *testing.T) {
	tree := testutil.TempDir(t)
	s := newStore(t, Options{MaxFile: 1000, MaxPerSession: 2500})
	big := &countingReader{r: bytes.NewReader(bytes.Repeat([]byte("a"), 1<<20))}
	_, err := s.Save(testutil.Context(t, gitWait), "sess-1", tree, "big.txt", big)
	testutil.ErrorKind(t, err, ErrTooLarge, "1000 bytes", "--attachment-max")
	if big.n > 64<<10 {
		t.Errorf("read %d bytes of a 1 MiB file refused at 1000", big.n)
	}
	for i := range 2 {
		if _, err := save(t, s, "sess-1", tree, "a.txt", bytes.Repeat([]byte("a"), 1000)); err != nil {
			t.Fatalf("file %d of exactly the bound: %v", i, err)
		}
	}
	_, err = save(t, s, "sess-1", tree, "a.txt", bytes.Repeat([]byte("a"), 501))
	testutil.ErrorKind(t, err, ErrFull, "--attachments-per-session", "deleted")
	if _, err := save(t, s, "sess-1", tree, "a.txt", bytes.Repeat([]byte("a"), 500)); err != nil {
		t.Fatalf("a file that fits the total: %v", err)
	}
	_, err = save(t, s, "sess-1", tree, "a.txt", []byte("a"))
	testutil.ErrorKind(t, err, ErrFull)
	if _, err := save(t, s, "sess-2", tree, "a.txt", bytes.Repeat([]byte("a"), 1000)); err != nil {
		t.Fatalf("another session's total is its own: %v", err)
	}
	_, err = save(t, s, "sess-2", tree, "empty.txt", nil)
	testutil.ErrorKind(t, err, ErrName, "empty")
}

// TestTotalUnderConcurrency: uploads at once cannot pass the total
// together.
func TestTotalUnderConcurrency(t *testing.T) {
	tree := testutil.TempDir(t)
	s := newStore(t, Options{MaxFile: 1000, MaxPerSession: 3000})
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	for range 10 {
		wg.Go(func() {
			_, err := s.Save(context.Background(), "sess-1", tree, "x.txt", bytes.NewReader(bytes.Repeat([]byte("x"), 1000)))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	ok := 0
	for err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrFull):
			t.Errorf("unexpected error %v", err)
		}
	}
	if ok != 3 || countFiles(t, filepath.Join(tree, Dir, "sess-1")) != 3 {
		t.Errorf("%d uploads stored, %d files; want 3 of 3000 bytes", ok, countFiles(t, filepath.Join(tree, Dir, "sess-1")))
	}
}

// TestNamesCleaned: a name is reduced to what is safe to type at a
// prompt and in a shell; a path is refused, so traversal cannot escape;
// names never collide.
func TestNamesCleaned(t *testing.T) {
	for name, want := range map[string]string{
		"Screenshot 2026-01-02 at 10.00.00.png": "Screenshot 2026-01-02 at 10.00.00.png",
		"$(rm -rf ~);`id`|x&y>z.png":            "_rm -rf _id_x_y_z.png",
		"a\x1b[31mred\x07.png":                  "a_31mred.png",
		"\u202egnp.exe":                         "gnp.png",
		"-rf.png":                               "rf.png",
		"..png":                                 "attachment.png",
		".hidden.png":                           "hidden.png",
		"tab\there  and\nnewline.png":           "tab here and newline.png",
		"日本語の画像.png":                            "日本語の画像.png",
		"bad\xffutf8.png":                       "badutf8.png",
		"'quoted' \"name\".png":                 "_quoted_ _name_.png",
		strings.Repeat("x", 300) + ".png":       strings.Repeat("x", MaxNameLen) + ".png",
		"":                                      "attachment.png",
	} {
		if got := cleanName(name, PNG); got != want {
			t.Errorf("cleanName(%q) = %q, want %q", name, got, want)
		}
	}

	tree := testutil.TempDir(t)
	outside := testutil.TempDir(t)
	s := newStore(t, Options{})
	for _, name := range []string{"../../escape.png", "..", ".", "a/b.png", `..\..\escape.png`, "/etc/passwd", "x/../../escape.png"} {
		_, err := save(t, s, "sess-1", tree, name, pngBytes)
		testutil.ErrorKind(t, err, ErrName, "is a path")
	}
	for _, id := range []string{"../x", "..", "", "a/b"} {
		_, err := save(t, s, id, tree, "x.png", pngBytes)
		testutil.ErrorKind(t, err, ErrName, "session id")
	}
	if err := filepath.WalkDir(filepath.Dir(tree), func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), "escape") {
			t.Errorf("a traversal wrote %s", p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	// A link at .agentmux cannot lead the write elsewhere.
	if err := os.Symlink(outside, filepath.Join(tree, ".agentmux")); err != nil {
		t.Fatal(err)
	}
	if _, err := save(t, s, "sess-1", tree, "x.png", pngBytes); err == nil {
		t.Error("an upload through a symbolic link out of the tree was stored")
	}
	if n := countFiles(t, outside); n != 0 {
		t.Errorf("%d files written outside the tree", n)
	}
	if err := os.Remove(filepath.Join(tree, ".agentmux")); err != nil {
		t.Fatal(err)
	}

	// The same name twice: two files.
	a, err := save(t, s, "sess-1", tree, "same.png", pngBytes)
	if err != nil {
		t.Fatal(err)
	}
	b, err := save(t, s, "sess-1", tree, "same.png", pngBytes)
	if err != nil {
		t.Fatal(err)
	}
	if a.Path == b.Path || !strings.HasSuffix(b.Path, "/same-2.png") {
		t.Errorf("same name twice: %s and %s", a.Path, b.Path)
	}
}

// TestExcludeFile: in a repository, the attachments are kept out of git
// by one anchored line in .git/info/exclude, added once however many
// uploads, whatever the exclude file held; .gitignore is not touched. A
// worktree's line goes to the exclude file its repository shares; a tree
// inside the repository anchors its own folder. A tree in no repository
// is just stored.
func TestExcludeFile(t *testing.T) {
	repo := testutil.NewRepo(t, "Ann", map[string]string{".gitignore": "node_modules/\n", "sub/a.txt": "a\n"})
	exclude := filepath.Join(repo, ".git", "info", "exclude")
	if err := os.WriteFile(exclude, []byte("# user's own\n*.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, Options{})
	for range 3 {
		if _, err := save(t, s, "sess-1", repo, "shot.png", pngBytes); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := save(t, s, "sess-2", repo, "shot.png", pngBytes); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(exclude)
	if got, want := string(b), "# user's own\n*.log\n/.agentmux/attachments/\n"; got != want {
		t.Errorf("exclude file:\n%q\nwant\n%q", got, want)
	}
	if got := testutil.Git(t, repo, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("git status shows the attachments:\n%s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(repo, ".gitignore")); string(b) != "node_modules/\n" {
		t.Errorf(".gitignore changed: %q", b)
	}

	// A worktree: the exclude file is the common one.
	wt := filepath.Join(testutil.TempDir(t), "wt")
	testutil.Git(t, repo, "worktree", "add", "-q", "-b", "feat", wt)
	if _, err := save(t, s, "sess-3", wt, "shot.png", pngBytes); err != nil {
		t.Fatal(err)
	}
	if got := testutil.Git(t, wt, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("git status in the worktree shows the attachments:\n%s", got)
	}
	if b, _ := os.ReadFile(exclude); strings.Count(string(b), "/.agentmux/attachments/") != 1 {
		t.Errorf("the worktree's line was added again:\n%s", b)
	}

	// A session in a folder of the repository.
	if _, err := save(t, s, "sess-4", filepath.Join(repo, "sub"), "shot.png", pngBytes); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(exclude); !strings.Contains(string(b), "\n/sub/.agentmux/attachments/\n") {
		t.Errorf("no line for the folder:\n%s", b)
	}
	if got := testutil.Git(t, repo, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("git status shows the folder's attachments:\n%s", got)
	}

	// No repository, no git run on it, the file stored all the same.
	plain := testutil.TempDir(t)
	if _, err := save(t, s, "sess-5", plain, "shot.png", pngBytes); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(plain, ".git")); err == nil {
		t.Error("a .git was made in a tree that had none")
	}
}

// TestDrop: a session's attachments go, its folder with them, and the
// folders above once no other session has files there; another
// session's in the same tree stay.
func TestDrop(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	tree := testutil.TempDir(t)
	s := newStore(t, Options{})
	for _, id := range []string{"sess-1", "sess-2"} {
		if _, err := save(t, s, id, tree, "shot.png", pngBytes); err != nil {
			t.Fatal(err)
		}
	}
	s.Drop("sess-1", tree)
	if _, err := os.Stat(filepath.Join(tree, Dir, "sess-1")); !os.IsNotExist(err) {
		t.Errorf("sess-1's folder: %v, want gone", err)
	}
	if countFiles(t, filepath.Join(tree, Dir, "sess-2")) != 1 {
		t.Error("sess-2's file went with sess-1's")
	}
	s.Drop("sess-2", tree)
	if _, err := os.Stat(filepath.Join(tree, ".agentmux")); !os.IsNotExist(err) {
		t.Errorf(".agentmux: %v, want gone once empty", err)
	}
	// Dropping what is not there, or a tree that is gone, is nothing.
	s.Drop("sess-3", tree)
	s.Drop("sess-3", filepath.Join(tree, "gone"))
	s.Drop("..", tree)
	if _, err := os.Stat(tree); err != nil {
		t.Fatal(err)
	}
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	_ = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return nil
	})
	return n
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}
