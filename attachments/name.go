package attachments

import (
	"fmt"
	"path"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/agentmux/agentmux/internal/textrule"
)

// MaxNameLen bounds a stored name's stem, in bytes: long enough for a
// screenshot's name with its date, short enough to type at a prompt.
const MaxNameLen = 80

// checkName refuses a name that is a path rather than a file's name: one
// with a slash or a backslash, or that is "." or "..". Browsers send base
// names; anything else is a client trying to write elsewhere, and is told
// so rather than quietly cut down.
func checkName(name string) error {
	if strings.ContainsAny(name, `/\`) || name == "." || name == ".." {
		return fmt.Errorf("%w: the name %s is a path; send the file's name only", ErrName, textrule.Shown(clipName(name)))
	}
	if len(name) > 4096 {
		return fmt.Errorf("%w: the name is over 4096 bytes", ErrName)
	}
	return nil
}

// clipName bounds a name quoted in an error.
func clipName(name string) string {
	if len(name) <= 120 {
		return name
	}
	return strings.ToValidUTF8(name[:120], "") + "..."
}

// keptInName reports whether r may stay in a stored name: letters, digits
// and marks of any script, a space (the typed path is quoted), and the
// few punctuation marks no shell gives a meaning to.
func keptInName(r rune) bool {
	switch {
	case r == ' ', r == '.', r == '-', r == '_', r == '+', r == ',', r == '@', r == '=':
		return true
	case textrule.Invisible(r, false):
		return false
	}
	return unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r)
}

// cleanName returns the name a file called name whose content is kind is
// stored under: its characters that are not keptInName become "_" (runs
// of them one), bytes that are not UTF-8 and invisible characters go,
// blanks, dots and dashes are trimmed from its start (no hidden file, no
// option) and blanks and dots from its end, its stem is bounded to
// MaxNameLen bytes, and its extension is kind's, or, for text, its own
// when that is plain and names no binary kind. An empty stem becomes
// "attachment". The result is one path element, never "." or "..".
func cleanName(name string, kind Kind) string {
	name = strings.ToValidUTF8(name, "")
	ext := strings.ToLower(path.Ext(name))
	stem := strings.TrimSuffix(name, path.Ext(name))

	var b strings.Builder
	for _, r := range stem {
		switch {
		case unicode.IsSpace(r) && !textrule.Invisible(r, false):
			// A tab or a line break too: one space, never a key.
			if !strings.HasSuffix(b.String(), " ") {
				b.WriteByte(' ')
			}
		case unicode.IsControl(r) || textrule.Invisible(r, false):
			// Nothing: it draws nothing, so nobody meant it.
		case keptInName(r):
			b.WriteRune(r)
		default:
			if !strings.HasSuffix(b.String(), "_") {
				b.WriteByte('_')
			}
		}
	}
	s := strings.TrimLeft(b.String(), " .-")
	s = strings.TrimRight(s, " .")
	for len(s) > MaxNameLen {
		_, size := utf8.DecodeLastRuneInString(s)
		s = strings.TrimRight(s[:len(s)-size], " .")
	}
	if s == "" {
		s = "attachment"
	}
	return s + extFor(ext, kind)
}

// extFor is the extension a file of kind whose name ended in ext gets.
func extFor(ext string, kind Kind) string {
	if kind != Text {
		return kind.ext()
	}
	plain := len(ext) >= 2 && len(ext) <= 12 && strings.IndexFunc(ext[1:], func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) < 0
	switch ext {
	case ".png", ".jpg", ".jpeg", ".gif", ".webp", ".pdf":
		// Text under an image's name would be opened as one.
		plain = false
	}
	if plain {
		return ext
	}
	return Text.ext()
}
