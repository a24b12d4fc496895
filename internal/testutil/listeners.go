package testutil

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// HoldListeners is what a test binary run by StartListeners does: it
// listens on count loopback ports and says which, on one line ("ports
// <port> <port>..."); then for each line "replace <k>" it reads, it opens
// k new listeners, closes its k oldest (so that the new ports are not the
// old ones, which the kernel would hand out again) and says again which
// ports it holds. It exits when its input ends.
func HoldListeners(count int) {
	var lns []net.Listener
	listen := func(k int) {
		for range k {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(2)
			}
			lns = append(lns, ln)
		}
	}
	say := func() {
		w := bufio.NewWriter(os.Stdout)
		w.WriteString("ports")
		for _, ln := range lns {
			w.WriteString(" " + strconv.Itoa(ln.Addr().(*net.TCPAddr).Port))
		}
		w.WriteString("\n")
		w.Flush()
	}
	listen(count)
	say()
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		k, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "replace "))
		if err != nil || k > len(lns) {
			os.Exit(2)
		}
		listen(k)
		for _, ln := range lns[:k] {
			ln.Close()
		}
		lns = slices.Delete(lns, 0, k)
		say()
	}
	os.Exit(0)
}

// Listeners is a process holding listeners (HoldListeners).
type Listeners struct {
	in  io.WriteCloser
	out *bufio.Reader
	// Ports are the ports it holds, oldest first, as it last said.
	Ports []int
}

// StartListeners starts cmd, a run of a test binary that calls
// HoldListeners, outside any session (without AGENTMUX_SESSION_ID, which
// would make its ports a session's), and reads which ports it holds. It is
// killed when the test ends.
func StartListeners(tb testing.TB, cmd *exec.Cmd) *Listeners {
	tb.Helper()
	if cmd.Env == nil {
		cmd.Env = os.Environ()
	}
	cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "AGENTMUX_SESSION_ID=") })
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		in.Close()
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	l := &Listeners{in: in, out: bufio.NewReaderSize(out, 64<<10)}
	if err := l.read(); err != nil {
		tb.Fatal(err)
	}
	return l
}

// Replace has the process replace its k oldest listeners with new ones.
func (l *Listeners) Replace(tb testing.TB, k int) {
	tb.Helper()
	if err := l.TryReplace(k); err != nil {
		tb.Fatal(err)
	}
}

// TryReplace is Replace for a goroutine other than the test's.
func (l *Listeners) TryReplace(k int) error {
	if _, err := fmt.Fprintf(l.in, "replace %d\n", k); err != nil {
		return fmt.Errorf("ask the listeners to replace %d: %w", k, err)
	}
	return l.read()
}

// read reads the line that says which ports the process holds.
func (l *Listeners) read() error {
	line, err := l.out.ReadString('\n')
	fields := strings.Fields(line)
	if err != nil || len(fields) == 0 || fields[0] != "ports" {
		return fmt.Errorf("the listeners said %q (%v)", line, err)
	}
	ports := make([]int, 0, len(fields)-1)
	for _, f := range fields[1:] {
		p, err := strconv.Atoi(f)
		if err != nil {
			return fmt.Errorf("the listeners said %q", line)
		}
		ports = append(ports, p)
	}
	l.Ports = ports
	return nil
}
