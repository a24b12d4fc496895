// Package textrule holds the rules for text that people show one another
// through agentmux (session names, prompts, review comments, commit
// messages): what may not be in it because it would make what is shown
// differ from what is meant, or act on a terminal it is typed into; and
// how a name that holds such characters (a file's, which anyone can
// choose) is shown without them acting.
package textrule

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// hangulFillers draw nothing, yet are letters (Lo), so no category test
// catches them: a name of fillers looks empty, or like another name.
var hangulFillers = []rune{'\u115F', '\u1160', '\u3164', '\uFFA0'}

// Invisible reports whether r draws nothing or reorders what follows:
// format characters (bidi overrides and isolates, zero-width spaces and
// joiners), line and paragraph separators, the combining grapheme joiner,
// Mongolian variation selectors and the Hangul fillers. With text set,
// the zero-width joiner is allowed: prose uses it inside emoji.
func Invisible(r rune, text bool) bool {
	switch {
	case text && r == '\u200D':
		return false
	case unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp),
		r == '\u034F', r >= '\u180B' && r <= '\u180F',
		slices.Contains(hangulFillers, r):
		return true
	}
	return false
}

// FirstInvisible returns the first character of s that is Invisible.
func FirstInvisible(s string, text bool) (rune, bool) {
	for _, r := range s {
		if Invisible(r, text) {
			return r, true
		}
	}
	return 0, false
}

// FirstNotText returns the first character of s that text typed or shown
// may not hold: a control character but a tab or a line feed (control
// true: typed into an agent it is a key, and an escape can end a
// bracketed paste early), or an Invisible one (control false: it makes
// what is shown differ from what is read).
func FirstNotText(s string) (r rune, control, ok bool) {
	for _, r := range s {
		switch {
		case unicode.IsControl(r) && r != '\n' && r != '\t':
			return r, true, true
		case Invisible(r, true):
			return r, false, true
		}
	}
	return 0, false, false
}

// FirstNotLine returns the first character of s that one line of text
// may not hold: any control character, a tab and a line feed included
// (typed into an agent, a line feed submits what came before it), or an
// Invisible one.
func FirstNotLine(s string) (rune, bool) {
	for _, r := range s {
		if unicode.IsControl(r) || Invisible(r, true) {
			return r, true
		}
	}
	return 0, false
}

// Shown returns name, a file's or a branch's, as it may be shown to a
// person or typed into an agent: as it is when it holds only text, else
// quoted as Go quotes a string, with every control character, Invisible
// character and byte that is not UTF-8 escaped (\x1b, \u202e, \xff), so
// that none acts on a terminal or reorders what follows; a quote or a
// backslash in a quoted name is escaped too, so a name cannot pass for
// another's escapes.
func Shown(name string) string {
	if utf8.ValidString(name) && !strings.ContainsFunc(name, func(r rune) bool { return unicode.IsControl(r) || Invisible(r, false) }) {
		return name
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(name); {
		r, size := utf8.DecodeRuneInString(name[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, name[i])
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x80 && unicode.IsControl(r):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unicode.IsControl(r), Invisible(r, false):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
		i += size
	}
	b.WriteByte('"')
	return b.String()
}

// escapes matches a terminal's escape sequences: CSI (colours, cursor
// moves), OSC (titles, links) ended by BEL or ST, and the two-character
// ones (a reset, a saved cursor).
var escapes = regexp.MustCompile(`\x1b(?:\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[0-~])`)

// Plain returns a program's output as text a prompt may hold: its escape
// sequences removed, a carriage return that ends a line dropped, and
// every other character FirstNotText refuses (a lone carriage return
// among them) removed, so that what a person reads is what an agent is
// given.
func Plain(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = escapes.ReplaceAllString(s, "")
	s = strings.ReplaceAll(s, "\r\n", "\n")
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' || Invisible(r, true) {
			return -1
		}
		return r
	}, s)
}
