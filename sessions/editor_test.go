package sessions

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// envPasteEditor, set in the environment of the test binary, makes it run
// runPasteEditor instead of the tests; its value is the editor's window.
const envPasteEditor = "AGENTMUX_TEST_PASTE_EDITOR"

// envPasteEditorFinish, when set too, makes the editor end a submit's
// turn as Claude Code does behind its Stop hook. Its value is
// "finish,still": the turn ends over finish, redrawing ("finishing") but
// for the last still of it (while the hook's process exits), and then the
// prompt is drawn, with no bell (the hook says it waits). Input that
// comes meanwhile finds the submitted text back in the box, as Claude
// Code's did on a loaded machine.
const envPasteEditorFinish = "AGENTMUX_TEST_PASTE_EDITOR_FINISH"

// finishRedraw is how often the finishing editor redraws: well within
// turnEndQuiet, as Claude's spinner is.
const finishRedraw = 30 * time.Millisecond

// runPasteEditor is a stand-in for an agent's line editor on a busy
// machine, as Claude Code behaves: in raw mode, with bracketed paste on,
// it takes whatever arrives together, or within its window after the
// first byte (the time it takes to handle input), for one paste, where
// Enter is a line break; only an Enter that arrives on its own submits.
// It redraws its input box ("box: ...") once it has handled a paste, and
// at a submit prints "submitted: ..." and rings the bell at its prompt.
func runPasteEditor() int {
	window, err := time.ParseDuration(os.Getenv(envPasteEditor))
	if err != nil {
		fmt.Fprintln(os.Stderr, "editor window:", err)
		return 2
	}
	var finish, still time.Duration
	if v := os.Getenv(envPasteEditorFinish); v != "" {
		f, st, _ := strings.Cut(v, ",")
		var err1, err2 error
		finish, err1 = time.ParseDuration(f)
		still, err2 = time.ParseDuration(st)
		if err := errors.Join(err1, err2); err != nil {
			fmt.Fprintln(os.Stderr, "editor finish:", err)
			return 2
		}
	}
	tio, err := unix.IoctlGetTermios(0, unix.TCGETS)
	if err != nil {
		fmt.Fprintln(os.Stderr, "editor:", err)
		return 2
	}
	tio.Lflag &^= unix.ICANON | unix.ECHO | unix.IEXTEN
	tio.Iflag &^= unix.ICRNL | unix.IXON
	tio.Cc[unix.VMIN], tio.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(0, unix.TCSETS, tio); err != nil {
		fmt.Fprintln(os.Stderr, "editor:", err)
		return 2
	}
	os.Stdout.WriteString("\x1b[?2004hready> \a")
	var box strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := unix.Read(0, buf)
		if n <= 0 || err != nil {
			return 0
		}
		burst := append([]byte(nil), buf[:n]...)
		for end := time.Now().Add(window); ; {
			left := time.Until(end)
			if left <= 0 {
				break
			}
			fds := []unix.PollFd{{Fd: 0, Events: unix.POLLIN}}
			if k, _ := unix.Poll(fds, int(left/time.Millisecond)+1); k <= 0 {
				continue
			}
			if n, err := unix.Read(0, buf); n > 0 && err == nil {
				burst = append(burst, buf[:n]...)
			}
		}
		burst = bytes.ReplaceAll(burst, []byte("\x1b[200~"), nil)
		burst = bytes.ReplaceAll(burst, []byte("\x1b[201~"), nil)
		if string(burst) == "\r" {
			last := box.String()
			box.Reset()
			if finish == 0 {
				fmt.Printf("\r\nsubmitted: %s\r\nready> \a", last)
				continue
			}
			fmt.Printf("\r\nsubmitted: %s\r\n", last)
			if typedWhileFinishing(finish, still) {
				box.WriteString(last)
			}
			fmt.Printf("\r\x1b[Kready> %s", box.String())
			continue
		}
		for _, r := range string(burst) {
			if r == '\r' || r == '\n' {
				box.WriteString("⏎") // a line break in the box
			} else {
				box.WriteRune(r)
			}
		}
		fmt.Printf("\r\x1b[Kbox: %s", box.String())
	}
}

// typedWhileFinishing ends a turn for d, redrawing but for its last
// still, and reports whether input came meanwhile; it leaves the input
// unread.
func typedWhileFinishing(d, still time.Duration) bool {
	typed := false
	for end := time.Now().Add(d); time.Now().Before(end); {
		if time.Until(end) > still {
			fmt.Printf("\r\x1b[Kfinishing %s", time.Until(end).Round(time.Millisecond))
		}
		fds := []unix.PollFd{{Fd: 0, Events: unix.POLLIN}}
		if k, _ := unix.Poll(fds, int(finishRedraw/time.Millisecond)); k > 0 {
			typed = true
			time.Sleep(finishRedraw) // poll would not wait while the input is unread
		}
	}
	return typed
}
