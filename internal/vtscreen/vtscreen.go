// Package vtscreen turns a terminal's output stream into the text a
// person sees on its screen: the stream is played through a terminal
// emulator (github.com/charmbracelet/x/vt), so cursor moves, erases,
// redraws and the alternate screen leave what they leave on a real
// terminal, not the bytes that drew it.
package vtscreen

import (
	"io"
	"strings"

	"github.com/charmbracelet/x/vt"
)

// Text is a screen as text: its rows, and the lines that scrolled off
// above them, with styles dropped and trailing blanks trimmed.
type Text struct {
	// Screen holds the screen's rows, top first, without the blank rows
	// below the last one written.
	Screen []string
	// History holds the lines that scrolled off the top, oldest first:
	// at most as many as asked for.
	History []string
	// AltScreen reports that a full-screen program (an editor, a pager)
	// holds the alternate screen, which has no history.
	AltScreen bool
}

// Render plays stream on a terminal of cols by rows, keeping history
// lines of scrollback, and returns what it shows. The stream's parts are
// played in order, as one stream.
func Render(cols, rows, history int, stream ...[]byte) Text {
	e := vt.NewEmulator(max(cols, 1), max(rows, 1))
	e.SetScrollbackSize(max(history, 1))
	// The emulator answers a program's queries (a mode report, a resize
	// report) on a pipe, and would block on it until read: the answers
	// are dropped, as the program that asked has its answer already.
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		_, _ = io.Copy(io.Discard, e)
	}()
	for _, p := range stream {
		_, _ = e.Write(p) // an emulator takes every byte
	}
	// Closing the pipe's writer ends the drain. The emulator's own Close
	// would too, but it marks the emulator closed unguarded, which races
	// with the drain's Read. (The pipe is an *io.PipeWriter: the tests
	// would panic here before a new version of the emulator leaked.)
	_ = e.InputPipe().(io.Closer).Close()
	<-drained

	var t Text
	t.AltScreen = e.IsAltScreen()
	lines := strings.Split(e.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	for len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	t.Screen = lines
	if sb := e.Scrollback(); sb != nil && !t.AltScreen && history > 0 {
		n := sb.Len()
		for i := max(0, n-history); i < n; i++ {
			t.History = append(t.History, strings.TrimRight(sb.Line(i).String(), " "))
		}
	}
	return t
}
