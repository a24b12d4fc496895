package review

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var (
	alice = Author{ID: "a1", Name: "alice"}
	bob   = Author{ID: "b2", Name: "bob"}
)

// TestDraftKeepsCommentsUntilSent: comments collect with their authors;
// only an author takes one back; anyone sends or discards the draft; a
// failed send puts them back; every change moves the revision on, even
// one that empties the draft.
func TestDraftKeepsCommentsUntilSent(t *testing.T) {
	d := NewDrafts()
	c1, dr, err := d.Add("s", Comment{Path: "a.txt", Line: 3, Text: "rename this", Author: alice})
	if err != nil {
		t.Fatal(err)
	}
	if c1.ID == "" || c1.At.IsZero() || c1.EndLine != 3 || dr.Rev != 1 || len(dr.Comments) != 1 {
		t.Fatalf("added %+v, draft %+v", c1, dr)
	}
	c2, _, err := d.Add("s", Comment{Path: "b.go", Line: 10, EndLine: 12, Text: "extract", Author: bob})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.Get("other"); len(got.Comments) != 0 {
		t.Errorf("another session's draft holds %d comments", len(got.Comments))
	}

	if _, err := d.Remove("s", alice.ID, c2.ID); !errors.Is(err, ErrNotAuthor) {
		t.Errorf("alice removing bob's comment: %v, want ErrNotAuthor", err)
	}
	if _, err := d.Remove("s", alice.ID, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("removing an unknown comment: %v, want ErrNotFound", err)
	}
	dr, err = d.Remove("s", bob.ID, c2.ID)
	if err != nil || len(dr.Comments) != 1 || dr.Comments[0].ID != c1.ID {
		t.Fatalf("bob removing his comment: %+v, %v", dr, err)
	}
	d.Add("s", Comment{Path: "c", Line: 1, Text: "x", Author: bob})

	taken, dr, err := d.Take("s")
	if err != nil || len(taken) != 2 || len(dr.Comments) != 0 {
		t.Fatalf("take: %d comments, draft %+v, %v", len(taken), dr, err)
	}
	rev := dr.Rev
	if _, _, err := d.Take("s"); !errors.Is(err, ErrEmpty) {
		t.Errorf("taking an empty draft: %v, want ErrEmpty", err)
	}
	d.Add("s", Comment{Path: "late", Line: 1, Text: "written meanwhile", Author: alice})
	dr = d.Restore("s", taken)
	if len(dr.Comments) != 3 || dr.Comments[0].ID != c1.ID || dr.Comments[2].Path != "late" || dr.Rev <= rev {
		t.Fatalf("after a failed send the draft is %+v; want the taken comments back in front, rev past %d", dr, rev)
	}
	dr = d.Discard("s")
	if len(dr.Comments) != 0 || dr.Rev <= rev+2 {
		t.Errorf("discarded draft %+v", dr)
	}
}

func TestDraftIsBounded(t *testing.T) {
	d := NewDrafts()
	for i := range MaxComments {
		if _, _, err := d.Add("s", Comment{Path: "a", Line: i + 1, Text: "x", Author: alice}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := d.Add("s", Comment{Path: "a", Line: 1, Text: "x", Author: alice}); !errors.Is(err, ErrFull) {
		t.Fatalf("comment past the bound: %v, want ErrFull", err)
	}
	if got := len(d.Get("s").Comments); got != MaxComments {
		t.Errorf("draft holds %d comments, want %d", got, MaxComments)
	}
}

func TestCleanRefusesWhatCannotBeTyped(t *testing.T) {
	ok := Comment{Path: "dir/a.txt", Line: 2, Text: "fine\r\nsecond line"}
	got, err := Clean(ok)
	if err != nil || got.Text != "fine\nsecond line" || got.EndLine != 2 {
		t.Fatalf("Clean(%+v) = %+v, %v", ok, got, err)
	}
	for name, c := range map[string]Comment{
		"no path":          {Line: 1, Text: "x"},
		"absolute":         {Path: "/etc/passwd", Line: 1, Text: "x"},
		"escapes":          {Path: "a/../../b", Line: 1, Text: "x"},
		"dot dot":          {Path: "..", Line: 1, Text: "x"},
		"control in path":  {Path: "a\x1bb", Line: 1, Text: "x"},
		"line 0":           {Path: "a", Line: 0, Text: "x"},
		"backwards range":  {Path: "a", Line: 5, EndLine: 4, Text: "x"},
		"too many lines":   {Path: "a", Line: 1, EndLine: MaxLines + 1, Text: "x"},
		"blank":            {Path: "a", Line: 1, Text: " \n "},
		"escape key":       {Path: "a", Line: 1, Text: "ok\x1b[201~rm -rf /"},
		"bidi override":    {Path: "a", Line: 1, Text: "looks \u202efine"},
		"not UTF-8":        {Path: "a", Line: 1, Text: "\xff"},
		"too long":         {Path: "a", Line: 1, Text: strings.Repeat("x", MaxCommentBytes+1)},
		"path too long":    {Path: strings.Repeat("a", MaxPathBytes+1), Line: 1, Text: "x"},
		"path not UTF-8":   {Path: "a\xff", Line: 1, Text: "x"},
		"trailing dot dot": {Path: "a/..", Line: 1, Text: "x"},
	} {
		if _, err := Clean(c); !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: Clean = %v, want ErrInvalid", name, err)
		}
	}
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// TestPromptQuotesTheLines: each comment names path:line, quotes the
// lines as they are in the tree now, and gives the comment.
func TestPromptQuotesTheLines(t *testing.T) {
	root := writeTree(t, map[string]string{
		"a.txt":    "one\ntwo\nthree\nfour\n",
		"src/x.go": "package x\n\nfunc F() {\n\treturn\n}\n",
	})
	p, err := Prompt(root, []Comment{
		{Path: "a.txt", Line: 3, EndLine: 3, Text: "Say 3 instead."},
		{Path: "src/x.go", Line: 3, EndLine: 5, Text: "Document F.\nAnd test it."},
		{Path: "gone.txt", Line: 1, EndLine: 1, Text: "This file was deleted."},
	}, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	want := `A reviewer left 3 comments on your changes. Please address them:

1. a.txt:3
   > three
   Say 3 instead.

2. src/x.go:3-5
   > func F() {
   > 	return
   > }
   Document F.
   And test it.

3. gone.txt:1
   This file was deleted.
`
	if p != want {
		t.Errorf("prompt:\n%s\nwant:\n%s", p, want)
	}
}

// TestPromptQuotesOnlyTheTree: a link out of the tree, a FIFO and a
// directory are named without a quote, and the send does not block.
func TestPromptQuotesOnlyTheTree(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret": "s3cret\n"})
	root := writeTree(t, map[string]string{"ok": "fine\n"})
	if err := os.Symlink(filepath.Join(outside, "secret"), filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "dir"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := Prompt(root, []Comment{
		{Path: "link", Line: 1, EndLine: 1, Text: "a"},
		{Path: "fifo", Line: 1, EndLine: 1, Text: "b"},
		{Path: "dir", Line: 1, EndLine: 1, Text: "c"},
		{Path: "ok", Line: 1, EndLine: 1, Text: "d"},
	}, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(p, "s3cret") {
		t.Errorf("the prompt quotes a file outside the tree:\n%s", p)
	}
	if strings.Count(p, "   > ") != 1 || !strings.Contains(p, "   > fine\n") {
		t.Errorf("want exactly the regular file quoted:\n%s", p)
	}
}

// TestPromptQuotesSafely: a quoted line cannot type keys into the agent
// or show something other than what it reads, and is clipped.
func TestPromptQuotesSafely(t *testing.T) {
	root := writeTree(t, map[string]string{
		"a": "x\x1b[201~\x07y\tz \u202eevil\n" + strings.Repeat("w", 1000) + "\n",
	})
	p, err := Prompt(root, []Comment{{Path: "a", Line: 1, EndLine: 2, Text: "look"}}, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p, "   > x[201~y\tz \uFFFDevil\n") {
		t.Errorf("first line not cleaned as expected:\n%q", p)
	}
	if strings.ContainsAny(p, "\x1b\x07\u202e") {
		t.Errorf("the prompt holds a control or bidi character: %q", p)
	}
	if strings.Contains(p, strings.Repeat("w", maxQuoteLineBytes+1)) {
		t.Errorf("a long line was not clipped")
	}
}

// TestPromptNamesFilesSafely: a file's name is anyone's choice; one that
// holds a bidi control is named escaped, so the prompt still queues and
// shows what it says.
func TestPromptNamesFilesSafely(t *testing.T) {
	name := "txt.\u202eexe.md"
	root := writeTree(t, map[string]string{name: "line\n"})
	c, err := Clean(Comment{Path: name, Line: 1, Text: "rename this"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := Prompt(root, []Comment{c}, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(p, `1. "txt.\u202eexe.md":1`+"\n   > line\n") {
		t.Errorf("the file is not named escaped, with its line quoted:\n%q", p)
	}
	if strings.ContainsAny(p, "\u202e") {
		t.Errorf("the prompt holds a bidi control: %q", p)
	}
}

// TestPromptFitsItsBound: long ranges quote their start; a prompt over
// the bound quotes fewer lines, then none, then is refused.
func TestPromptFitsItsBound(t *testing.T) {
	var body strings.Builder
	for range 100 {
		body.WriteString("a line of the file\n")
	}
	root := writeTree(t, map[string]string{"f": body.String()})
	c := Comment{Path: "f", Line: 1, EndLine: 100, Text: "all of it"}
	p, err := Prompt(root, []Comment{c}, 64<<10)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(p, "   > a line"); n != maxQuoteLines || !strings.Contains(p, "(80 more lines)") {
		t.Errorf("quoted %d lines of a 100-line range, want %d and a count of the rest:\n%s", n, maxQuoteLines, p)
	}
	full := len(p)
	p, err = Prompt(root, []Comment{c}, full-1)
	if err != nil || strings.Count(p, "   > a line") != shortQuoteLines {
		t.Errorf("under a tighter bound: %v, prompt:\n%s", err, p)
	}
	p, err = Prompt(root, []Comment{c}, 120)
	if err != nil || strings.Contains(p, "   > ") || !strings.Contains(p, "f:1-100") {
		t.Errorf("under a bound that fits no quote: %v, prompt:\n%s", err, p)
	}
	if _, err := Prompt(root, []Comment{c}, 20); !errors.Is(err, ErrTooLong) {
		t.Errorf("under a bound nothing fits: %v, want ErrTooLong", err)
	}
	if _, err := Prompt(root, nil, 1000); !errors.Is(err, ErrEmpty) {
		t.Errorf("no comments: %v, want ErrEmpty", err)
	}
}

// TestCommentBlock: every line of a prompt goes behind "# ", tabs become
// spaces and other control characters go, so a shell's line editor
// neither completes nor acts on anything in it.
func TestCommentBlock(t *testing.T) {
	got := CommentBlock("Fix this:\n\n\tif x {\x1b[31m\n$(touch pwned)\n")
	want := "# Fix this:\n#\n#  if x {[31m\n# $(touch pwned)"
	if got != want {
		t.Errorf("CommentBlock = %q, want %q", got, want)
	}
}
