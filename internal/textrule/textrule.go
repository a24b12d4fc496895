// Package textrule holds the rules for text that people show one another
// through agentmux (session names, prompts, review comments): what may
// not be in it because it would make what is shown differ from what is
// meant.
package textrule

import (
	"slices"
	"unicode"
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
