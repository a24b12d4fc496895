package review

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"unicode"

	"github.com/agentmux/agentmux/internal/clip"
	"github.com/agentmux/agentmux/internal/textrule"
)

// Quoting bounds: a comment on a long range quotes its start, and a long
// line is clipped; the agent can open the file for the rest.
const (
	maxQuoteLines     = 20
	shortQuoteLines   = 3
	maxQuoteLineBytes = 300
	// maxQuotedFile is how far into a file lines are looked for: a
	// comment is on a diff a person reads, not deep in a huge file.
	maxQuotedFile = 8 << 20
)

// CommentBlock turns a prompt into shell comments, each line behind "# ",
// for a session whose program is a shell: pasted at its prompt, the
// review reads as a note and runs nothing. Tabs become spaces and other
// control characters go, since a shell's line editor acts on them (a tab
// completes).
func CommentBlock(prompt string) string {
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimRight(prompt, "\n"), "\n") {
		if i > 0 {
			b.WriteByte('\n')
		}
		line = strings.Map(func(r rune) rune {
			switch {
			case r == '\t':
				return ' '
			case unicode.IsControl(r):
				return -1
			}
			return r
		}, line)
		b.WriteString(strings.TrimRight("# "+line, " "))
	}
	return b.String()
}

// ErrTooLong means the comments make a prompt longer than allowed even
// without quoting the lines.
var ErrTooLong = errors.New("review comments too long for one prompt")

// Prompt renders comments as the one prompt that tells the agent about
// them: each names its path and lines, quotes the lines from the files
// under root as they are now, and gives the comment. A file that cannot
// be read (deleted since, not a regular file, outside root through a
// link) is named without a quote. The prompt fits in max bytes: quotes
// shrink, then go, before ErrTooLong.
func Prompt(root string, comments []Comment, max int) (string, error) {
	if len(comments) == 0 {
		return "", ErrEmpty
	}
	quotes := readQuotes(root, comments)
	for _, lines := range []int{maxQuoteLines, shortQuoteLines, 0} {
		if p := render(comments, quotes, lines); len(p) <= max {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %d comments; send fewer at a time", ErrTooLong, len(comments))
}

// render writes the prompt quoting at most lines lines per comment.
func render(comments []Comment, quotes [][]string, lines int) string {
	var b strings.Builder
	if len(comments) == 1 {
		b.WriteString("A reviewer left a comment on your changes. Please address it:\n")
	} else {
		fmt.Fprintf(&b, "A reviewer left %d comments on your changes. Please address them:\n", len(comments))
	}
	for i, c := range comments {
		b.WriteString("\n")
		fmt.Fprintf(&b, "%d. %s\n", i+1, location(c))
		q := quotes[i]
		for _, l := range q[:min(len(q), lines)] {
			b.WriteString("   > ")
			b.WriteString(l)
			b.WriteString("\n")
		}
		if n := len(q) - lines; lines > 0 && n > 0 {
			fmt.Fprintf(&b, "   > ... (%d more lines)\n", n)
		}
		for l := range strings.SplitSeq(strings.TrimRight(c.Text, "\n"), "\n") {
			b.WriteString("   ")
			b.WriteString(l)
			b.WriteString("\n")
		}
	}
	return b.String()
}

// location is path:line, or path:line-end for a range, the path shown
// as textrule.Shown shows it: a file's name is anyone's choice.
func location(c Comment) string {
	path := textrule.Shown(c.Path)
	if c.EndLine > c.Line {
		return path + ":" + strconv.Itoa(c.Line) + "-" + strconv.Itoa(c.EndLine)
	}
	return path + ":" + strconv.Itoa(c.Line)
}

// readQuotes returns each comment's lines as they are now, or nil for a
// file that cannot be read.
func readQuotes(root string, comments []Comment) [][]string {
	quotes := make([][]string, len(comments))
	r, err := os.OpenRoot(root)
	if err != nil {
		return quotes
	}
	defer r.Close()
	for i, c := range comments {
		quotes[i] = quoteLines(r, c)
	}
	return quotes
}

// quoteLines reads lines Line to EndLine of c's file through r, which
// keeps the read inside the tree whatever links it holds.
func quoteLines(r *os.Root, c Comment) []string {
	// O_NONBLOCK: a FIFO in the file's place must not block the send.
	f, err := r.OpenFile(c.Path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil
	}
	sc := bufio.NewScanner(io.LimitReader(f, maxQuotedFile))
	sc.Buffer(make([]byte, 0, 64<<10), maxQuotedFile)
	var lines []string
	for n := 1; n <= c.EndLine && sc.Scan(); n++ {
		if n >= c.Line {
			lines = append(lines, quoteLine(sc.Text()))
		}
	}
	return lines
}

// quoteLine makes one line of a file safe to type into the agent and
// honest to show: no control characters (a tab stays), and a character
// that draws nothing or reorders what follows shows as U+FFFD; clipped.
func quoteLine(l string) string {
	l = strings.Map(func(r rune) rune {
		switch {
		case r == '\t':
			return r
		case unicode.IsControl(r):
			return -1
		case textrule.Invisible(r, true):
			return '\uFFFD'
		}
		return r
	}, strings.ToValidUTF8(l, "\uFFFD"))
	return clip.String(l, maxQuoteLineBytes, "...")
}
