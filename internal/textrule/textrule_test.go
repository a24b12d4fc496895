package textrule

import (
	"strings"
	"testing"
	"unicode"
)

func TestInvisible(t *testing.T) {
	for _, tc := range []struct {
		r          rune
		text, want bool
	}{
		{'a', false, false},
		{'é', false, false},
		{'\u202e', true, true}, // right-to-left override
		{'\u200b', true, true}, // zero-width space
		{'\u2028', true, true}, // line separator
		{'\u034f', true, true}, // combining grapheme joiner
		{'\u180b', true, true}, // Mongolian variation selector
		{'\u3164', true, true}, // Hangul filler
		{'\u200d', true, false},
		{'\u200d', false, true},
	} {
		if got := Invisible(tc.r, tc.text); got != tc.want {
			t.Errorf("Invisible(%U, %v) = %v, want %v", tc.r, tc.text, got, tc.want)
		}
	}
	if r, ok := FirstInvisible("ok\u2066x", false); !ok || r != '\u2066' {
		t.Errorf("FirstInvisible = %U, %v; want U+2066", r, ok)
	}
}

func TestFirstNotText(t *testing.T) {
	for _, tc := range []struct {
		s       string
		r       rune
		control bool
		ok      bool
	}{
		{"plain text\n\twith a tab", 0, false, false},
		{"emoji \U0001F469\u200D\U0001F4BB joined", 0, false, false},
		{"ansi \x1b[31mred", '\x1b', true, true},
		{"a bell\a", '\a', true, true},
		{"a carriage return\r", '\r', true, true},
		{"C1 \u009b31m", '\u009b', true, true},
		{"bidi \u202egnp.exe", '\u202e', false, true},
		{"isolate \u2066x", '\u2066', false, true},
	} {
		r, control, ok := FirstNotText(tc.s)
		if r != tc.r || control != tc.control || ok != tc.ok {
			t.Errorf("FirstNotText(%q) = %U, %v, %v; want %U, %v, %v", tc.s, r, control, ok, tc.r, tc.control, tc.ok)
		}
	}
}

func TestShown(t *testing.T) {
	for in, want := range map[string]string{
		"src/main.go":           "src/main.go",
		"docs/café ✓.md":        "docs/café ✓.md",
		`a "quoted" name`:       `a "quoted" name`,
		"evil\x1b[2Jname":       `"evil\x1b[2Jname"`,
		"with\nnewline":         `"with\nnewline"`,
		"tab\there":             `"tab\there"`,
		"csi\u009bm":            `"csi\u009bm"`,
		"txt.\u202eexe.sh":      `"txt.\u202eexe.sh"`,
		"filler\u3164":          `"filler\u3164"`,
		"bad\xffbyte":           `"bad\xffbyte"`,
		"esc\x1b and \"quote\"": `"esc\x1b and \"quote\""`,
		"back\\slash\x07":       `"back\\slash\x07"`,
	} {
		got := Shown(in)
		if got != want {
			t.Errorf("Shown(%q) = %s, want %s", in, got, want)
		}
		if strings.ContainsFunc(got, func(r rune) bool { return unicode.IsControl(r) || Invisible(r, false) }) {
			t.Errorf("Shown(%q) = %q still holds a control or invisible character", in, got)
		}
	}
}

func TestPlain(t *testing.T) {
	for in, want := range map[string]string{
		"ok 1 - adds\n": "ok 1 - adds\n",
		"\x1b[31mnot ok\x1b[0m 2 - subtracts\r\n":       "not ok 2 - subtracts\n",
		"\x1b]0;npm test\x07# tests 3\n":                "# tests 3\n",
		"\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\ text": "link text",
		"50%\r100%\n":                       "50%100%\n",
		"tab\there\u202e and \x00nul \x1bc": "tab\there and nul ",
		"bad \xff byte":                     "bad \uFFFD byte",
	} {
		got := Plain(in)
		if got != want {
			t.Errorf("Plain(%q) = %q, want %q", in, got, want)
		}
		if r, _, bad := FirstNotText(got); bad {
			t.Errorf("Plain(%q) holds %U", in, r)
		}
	}
}

func TestFirstNotLine(t *testing.T) {
	for s, want := range map[string]rune{
		"yes, go on":   0,
		"a\nb":         '\n',
		"tab\there":    '\t',
		"esc\x1b[2J":   '\x1b',
		"rtl\u202egpj": '\u202e',
		"👩\u200d💻 ok":  0,
	} {
		got, bad := FirstNotLine(s)
		if bad != (want != 0) || got != want {
			t.Errorf("FirstNotLine(%q) = %q, %v; want %q", s, got, bad, want)
		}
	}
}
