package textrule

import "testing"

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
