package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// stagesTimeout bounds each wait for the staged printer's output;
// generous, for -race on a busy two-core machine.
const stagesTimeout = 10 * time.Second

// pipeOutput collects what a program writes to a pipe. Its one
// goroutine, which belongs to the test that calls readPipe, reads until
// the pipe's other end is closed (the program ended); done is closed
// then, and the test waits for it.
type pipeOutput struct {
	done chan struct{}

	// mu protects buf and grew, which is closed and replaced whenever buf
	// grows.
	mu   sync.Mutex
	buf  []byte
	grew chan struct{}
}

func readPipe(r io.Reader) *pipeOutput {
	o := &pipeOutput{done: make(chan struct{}), grew: make(chan struct{})}
	go func() {
		defer close(o.done)
		b := make([]byte, 32<<10)
		for {
			n, err := r.Read(b)
			o.mu.Lock()
			o.buf = append(o.buf, b[:n]...)
			close(o.grew)
			o.grew = make(chan struct{})
			o.mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	return o
}

// waitFor returns the output once cond holds for it, or nil if d passed
// first.
func (o *pipeOutput) waitFor(d time.Duration, cond func([]byte) bool) []byte {
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		o.mu.Lock()
		buf, grew := bytes.Clone(o.buf), o.grew
		o.mu.Unlock()
		if cond(buf) {
			return buf
		}
		select {
		case <-grew:
		case <-o.done:
			// The last read may have grown it: one more look.
			o.mu.Lock()
			buf = bytes.Clone(o.buf)
			o.mu.Unlock()
			if cond(buf) {
				return buf
			}
			return nil
		case <-timer.C:
			return nil
		}
	}
}

// has returns a condition that holds once s is in the output.
func has(s string) func([]byte) bool {
	return func(b []byte) bool { return bytes.Contains(b, []byte(s)) }
}

// TestStagesPrinter runs the staged printer as the scale measurement
// does, as a program of its own (this test binary, which TestMain turns
// into the printer), on a pipe: it prints the fill at once, each marker
// only once its file is there and in order, and paces its lines near
// their rates.
func TestStagesPrinter(t *testing.T) {
	dir := t.TempDir()
	sp := stages{fill: 100_000, trickle: 20_000, busy: defaultBusyRate, dir: dir}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), stagesEnv+"="+sp.String())
	cmd.Stdout, cmd.Stderr = w, os.Stderr
	if err := cmd.Start(); err != nil {
		w.Close()
		t.Fatal(err)
	}
	w.Close()
	out := readPipe(r)
	defer func() {
		// Quiet, the printer never ends of itself.
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		<-out.done
	}()
	touch := func(file string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// section returns the output between the end of marker from and the
	// start of marker to.
	section := func(b []byte, from, to string) []byte {
		_, after, _ := bytes.Cut(b, []byte(from+"\n"))
		before, _, _ := bytes.Cut(after, []byte(to+"\n"))
		return before
	}
	lines := func(what string, b []byte, format string) {
		t.Helper()
		line := strings.ReplaceAll(regexp.QuoteMeta(strings.TrimSuffix(format, "\n")), "%d", `\d+`)
		re := regexp.MustCompile(`^(` + line + `\n)*$`)
		if !re.Match(b) {
			t.Errorf("the %s is not lines of %q: %.200q", what, format, b)
		}
	}
	// paced checks that n bytes past marker took about n at rate: not
	// less than 70 % of that time (a pace holds it back), and not far
	// more (stagesTimeout).
	paced := func(marker string, n int, rate int64) {
		t.Helper()
		start := time.Now()
		b := out.waitFor(stagesTimeout, func(b []byte) bool {
			_, after, ok := bytes.Cut(b, []byte(marker+"\n"))
			return ok && len(after) >= n
		})
		took := time.Since(start)
		if b == nil {
			t.Fatalf("%d bytes past %s not printed within %v", n, marker, stagesTimeout)
		}
		if want := time.Duration(0.7 * float64(n) / float64(rate) * float64(time.Second)); took < want {
			t.Errorf("%d bytes past %s at %d B/s came in %v, want %v or more", n, marker, rate, took, want)
		}
	}

	b := out.waitFor(stagesTimeout, has(fillMarker))
	if b == nil {
		t.Fatalf("no %s within %v", fillMarker, stagesTimeout)
	}
	fill, _, _ := bytes.Cut(b, []byte(fillMarker+"\n"))
	if len(fill) < int(sp.fill) || len(fill) > int(sp.fill)+64 {
		t.Errorf("filled %d bytes, want %d or a line more", len(fill), sp.fill)
	}
	lines("fill", fill, buildLine)
	// It looks for the file every 10 ms: ten times that without it, it
	// must not have moved on.
	if b := out.waitFor(100*time.Millisecond, has(trickleMarker)); b != nil {
		t.Fatalf("%s before its file", trickleMarker)
	}

	touch(trickleFile)
	if out.waitFor(stagesTimeout, has(trickleMarker)) == nil {
		t.Fatalf("no %s within %v of its file", trickleMarker, stagesTimeout)
	}
	paced(trickleMarker, 10_000, sp.trickle)
	if b := out.waitFor(0, has(busyMarker)); b != nil {
		t.Fatalf("%s before its file", busyMarker)
	}

	touch(busyFile)
	if out.waitFor(stagesTimeout, has(busyMarker)) == nil {
		t.Fatalf("no %s within %v of its file", busyMarker, stagesTimeout)
	}
	paced(busyMarker, int(sp.busy)/2, sp.busy)

	touch(quietFile)
	b = out.waitFor(stagesTimeout, has(quietMarker))
	if b == nil {
		t.Fatalf("no %s within %v of its file", quietMarker, stagesTimeout)
	}
	if len(section(b, fillMarker, trickleMarker)) != 0 {
		t.Errorf("printed between %s and %s: %.200q", fillMarker, trickleMarker, section(b, fillMarker, trickleMarker))
	}
	lines("trickle", section(b, trickleMarker, busyMarker), statusLine)
	lines("build log", section(b, busyMarker, quietMarker), buildLine)
	if !bytes.HasSuffix(b, []byte(quietMarker+"\n")) {
		t.Errorf("printed after %s: %.200q", quietMarker, b[bytes.Index(b, []byte(quietMarker)):])
	}
}

// TestParseStages reads the printer's stages back as written, commas in
// the directory included, and refuses what it cannot use.
func TestParseStages(t *testing.T) {
	want := stages{fill: 5 << 18, trickle: defaultTrickleRate, busy: defaultBusyRate, dir: "/tmp/a,b"}
	if got, err := parseStages(want.String()); err != nil || got != want {
		t.Errorf("parseStages(%q) = %+v, %v; want %+v", want.String(), got, err, want)
	}
	for _, bad := range []string{"", "1,2,3", "1,2,3,", "x,2,3,/d", "1,0,3,/d", "1,2,0,/d", "-1,2,3,/d"} {
		if _, err := parseStages(bad); err == nil {
			t.Errorf("parseStages(%q) took it", bad)
		}
	}
}
