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
			fmt.Printf("\r\nsubmitted: %s\r\nready> \a", box.String())
			box.Reset()
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
