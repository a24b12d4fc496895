package sessions

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// envPasteEditor, set in the environment of the test binary, makes it run
// runPasteEditor instead of the tests; its value is the editor's window.
const envPasteEditor = "AGENTMUX_TEST_PASTE_EDITOR"

// envPasteEditorFinish, when set too, makes the editor ring its bell as a
// submit's turn ends but go on finishing it on screen for this long, as
// Claude Code's Stop hook runs before it has finished its turn: input
// that comes meanwhile finds the submitted text back in the box, as
// Claude Code's did on a loaded machine.
const envPasteEditorFinish = "AGENTMUX_TEST_PASTE_EDITOR_FINISH"

// envPasteEditorStill, with envPasteEditorFinish, makes the editor end
// its turn as Claude Code does behind its Stop hook: no bell (the hook
// says it waits), and no redraw for this long at the end of the finish,
// while the hook's process exits, before its prompt is drawn.
const envPasteEditorStill = "AGENTMUX_TEST_PASTE_EDITOR_STILL"

// finishRedraw is how often the finishing editor redraws: well within
// settleQuiet, so its screen never looks settled before it is.
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
	for name, d := range map[string]*time.Duration{envPasteEditorFinish: &finish, envPasteEditorStill: &still} {
		if v := os.Getenv(name); v != "" {
			if *d, err = time.ParseDuration(v); err != nil {
				fmt.Fprintln(os.Stderr, "editor:", name, err)
				return 2
			}
		}
	}
	bell := "\a"
	if still > 0 {
		bell = ""
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
			fmt.Printf("\r\nsubmitted: %s\r\n%s", last, bell)
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
