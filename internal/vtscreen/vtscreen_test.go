package vtscreen

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestRender: what a terminal would show, not the bytes that drew it.
func TestRender(t *testing.T) {
	for _, c := range []struct {
		name         string
		stream       string
		screen, hist []string
		history      int
		alt          bool
	}{
		{name: "styles dropped", stream: "\x1b[1;32mok\x1b[0m done\r\n$ ", screen: []string{"ok done", "$"}},
		{name: "a redraw overwrites", stream: "working 10%\rworking 99%\r\x1b[2Kdone\r\n", screen: []string{"done"}},
		{name: "cursor moves up", stream: "a\r\nb\r\n\x1b[2A\x1b[2KA", screen: []string{"A", "b"}},
		// A program's query is answered on a pipe nobody reads here:
		// it must not block.
		{name: "queries", stream: "x\x1b[?2026$p\x1b[6n\x1b[cy", screen: []string{"xy"}},
		{name: "history", stream: "1\r\n2\r\n3\r\n4\r\n5", history: 2, screen: []string{"3", "4", "5"}, hist: []string{"1", "2"}},
		{name: "history bounded", stream: "1\r\n2\r\n3\r\n4\r\n5", history: 1, screen: []string{"3", "4", "5"}, hist: []string{"2"}},
		{name: "alternate screen", stream: "shell\r\n\x1b[?1049h\x1b[Hvim here", history: 5, screen: []string{"vim here"}, alt: true},
		{name: "back from it", stream: "shell\r\n\x1b[?1049h\x1b[Hvim here\x1b[?1049l$ ", history: 5, screen: []string{"shell", "$"}},
		{name: "wide text", stream: "界面 ok", screen: []string{"界面 ok"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Render(20, 3, c.history, []byte(c.stream))
			if !slices.Equal(got.Screen, c.screen) || !slices.Equal(got.History, c.hist) || got.AltScreen != c.alt {
				t.Errorf("got screen %q history %q alt %v, want %q %q %v", got.Screen, got.History, got.AltScreen, c.screen, c.hist, c.alt)
			}
		})
	}
}

// TestRenderParts: a stream given in parts, split inside a sequence and a
// character, plays as one.
func TestRenderParts(t *testing.T) {
	got := Render(20, 2, 0, []byte("\x1b[3"), []byte("1mred\x1b[0m \xe7"), []byte("\x95\x8c"))
	if !slices.Equal(got.Screen, []string{"red 界"}) {
		t.Errorf("got %q", got.Screen)
	}
}

func BenchmarkRender(b *testing.B) {
	var s strings.Builder
	for i := 0; s.Len() < 64<<10; i++ {
		fmt.Fprintf(&s, "\x1b[32mline %d\x1b[0m some text with \x1b[1mbold\x1b[0m words\r\n", i)
	}
	b.SetBytes(int64(s.Len()))
	for b.Loop() {
		Render(120, 40, 100, []byte(s.String()))
	}
}
