package clip

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestString(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"eleven char", 10, "eleven cha..."},
		{"héllo", 2, "h..."},               // é is two bytes: not cut in half
		{"日本語", 4, "日..."},                 // three-byte characters
		{"\xff\xfeabc", 3, "\xff\xfea..."}, // bytes that start no character are kept as they are
	} {
		got := String(tc.s, tc.max, "...")
		if got != tc.want {
			t.Errorf("String(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
		if utf8.ValidString(tc.s) && !utf8.ValidString(got) {
			t.Errorf("String(%q, %d) = %q is not valid UTF-8", tc.s, tc.max, got)
		}
	}
}

func TestQuoteBoundsWhatItQuotes(t *testing.T) {
	long := strings.Repeat("<\"", 1<<19) // 1 MiB that %q and JSON both grow
	got := Quote(long)
	if len(got) > 2*Quoted+16 {
		t.Fatalf("Quote of 1 MiB is %d bytes; want at most about %d", len(got), 2*Quoted)
	}
	if !strings.HasPrefix(got, `"<\"<\"`) || !strings.HasSuffix(got, `..."`) {
		t.Fatalf("Quote = %.40q..., want the value's start, quoted, then ...", got)
	}
	if Quote("docs/a b.md") != `"docs/a b.md"` {
		t.Fatalf("Quote of a short value = %s, want it whole", Quote("docs/a b.md"))
	}
	if n := len(Message(long)); n > Reply+32 {
		t.Fatalf("Message of 1 MiB is %d bytes; want at most %d", n, Reply)
	}
}

func TestList(t *testing.T) {
	var many []string
	for i := range 13 {
		many = append(many, fmt.Sprintf("f%d", i))
	}
	for _, tc := range []struct {
		in   []string
		want string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a", "b"}, "a, b"},
		{many[:10], "f0, f1, f2, f3, f4, f5, f6, f7, f8, f9"},
		{many, "f0, f1, f2, f3, f4, f5, f6, f7, f8, f9 and 3 more"},
	} {
		if got := List(tc.in); got != tc.want {
			t.Errorf("List(%v) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestTail(t *testing.T) {
	for _, tc := range []struct {
		s    string
		max  int
		want string
	}{
		{"short", 10, "short"},
		{"line one\nline two", 8, "…line two"},
		// The cut falls inside "é": the tail starts at the next character.
		{"aé b", 3, "… b"},
	} {
		got := Tail(tc.s, tc.max, "…")
		if got != tc.want || !utf8.ValidString(got) {
			t.Errorf("Tail(%q, %d) = %q, want %q", tc.s, tc.max, got, tc.want)
		}
	}
}
