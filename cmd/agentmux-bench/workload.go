package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// readyLine is what every flood command prints once its terminal is raw
// (no echo, no \n to \r\n), before it waits for a line of input: a client
// attaches, waits for it, and sends the newline that starts the flood, so
// the measurement starts with the flood and not with the process.
const readyLine = "ready\n"

// rawScript wraps a shell command so it runs on a raw terminal after the
// ready handshake; $0 and $1 are the arguments that follow.
func rawScript(cmd string) string {
	return `stty raw -echo; echo ready; read go; ` + cmd
}

// catCommand runs cat of path after the ready handshake: the workload of
// the throughput measurement, the same as ws/bench_test.go's.
func catCommand(path string) []string {
	return []string{"sh", "-c", rawScript(`exec cat "$0"`), path}
}

// echoCommand echoes every key it reads, on a raw terminal: cat reads one
// byte and writes it back.
var echoCommand = []string{"sh", "-c", `stty raw -echo; echo ready; exec cat`}

// yesLine is what the saturating flood repeats: ASCII with some multi-byte
// characters, as ws/bench_test.go's.
const yesLine = "agentmux flood 日本語 ✓ 0123456789 abcdefghijklmnopqrstuvwxyz"

// yesCommand floods as fast as the terminal takes it.
var yesCommand = []string{"sh", "-c", rawScript(`exec yes "$0"`), yesLine}

// buildLogCommand prints bursts of short lines, about 0.4 MB/s: output
// that never fills a frame, so frames leave on the batch timer. A shell
// loop, it forks a sleep every 100 lines: one session keeps the pace, but
// a busy machine slows it (the staged printer is the build log that
// keeps it).
var buildLogCommand = []string{"sh", "-c", rawScript(
	`i=0; while :; do echo "line $i of a busy build log"; i=$((i+1)); if [ $((i % 100)) = 0 ]; then sleep 0.005; fi; done`)}

// quietMarker is what the staged printer prints once it stops.
const quietMarker = "agentmux-bench-quiet"

// writerEnv, set to "RATE,TOTAL" (bytes per second, 0 for as fast as the
// terminal takes; total bytes, 0 for no end), turns this program into the
// paced writer that some workloads run as their session's program.
const writerEnv = "AGENTMUX_BENCH_WRITER"

// writerCommand runs this program (self) as a writer of total bytes at
// rate bytes per second, after the ready handshake.
func writerCommand(self string, rate, total int64) []string {
	return []string{"sh", "-c", rawScript(`exec env ` + writerEnv + `="$1" "$0"`), self, fmt.Sprintf("%d,%d", rate, total)}
}

// writerLine is what the writer repeats.
const writerLine = "paced output 0123456789 abcdefghijklmnopqrstuvwxyz ABCDEFGHIJKLMNOPQRSTUVWXYZ\n"

// maxWriterChunk bounds one write of the writer.
const maxWriterChunk = 64 << 10

// writerMain runs the writer when writerEnv asks for it, and exits; it
// returns false when the program is not meant to be the writer.
func writerMain() bool {
	spec := os.Getenv(writerEnv)
	if spec == "" {
		return false
	}
	rate, total, err := parseWriterSpec(spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentmux-bench writer: %s=%q: %v\n", writerEnv, spec, err)
		os.Exit(2)
	}
	// A closed terminal (the session deleted) is the usual end of an
	// endless writer, so a failed write ends it quietly too.
	_ = writeFlood(os.Stdout, rate, total)
	os.Exit(0)
	return true
}

func parseWriterSpec(spec string) (rate, total int64, err error) {
	r, t, ok := strings.Cut(spec, ",")
	if !ok {
		return 0, 0, fmt.Errorf("want RATE,TOTAL")
	}
	if rate, err = strconv.ParseInt(r, 10, 64); err != nil || rate < 0 {
		return 0, 0, fmt.Errorf("bad rate %q", r)
	}
	if total, err = strconv.ParseInt(t, 10, 64); err != nil || total < 0 {
		return 0, 0, fmt.Errorf("bad total %q", t)
	}
	return rate, total, nil
}

// writeFlood writes writerLine over and over to w: total bytes (0: without
// end) at rate bytes per second (0: as fast as w takes them).
func writeFlood(w *os.File, rate, total int64) error {
	buf := bytes.Repeat([]byte(writerLine), (maxWriterChunk+len(writerLine))/len(writerLine)+1)
	p := newPace(rate)
	for total == 0 || p.written < total {
		n := int64(maxWriterChunk)
		if rate > 0 {
			due := p.due()
			if due <= 0 {
				time.Sleep(time.Millisecond)
				continue
			}
			n = min(n, due)
		}
		if total > 0 {
			n = min(n, total-p.written)
		}
		// Continue the lines where the last write left them.
		off := int(p.written % int64(len(writerLine)))
		k, err := w.Write(buf[off : off+int(n)])
		p.written += int64(k)
		if err != nil {
			return err
		}
	}
	return nil
}

// pace keeps a writer at rate bytes per second from its start: what is
// due is what the rate allows since then less what was written, so a
// writer paused by a busy machine catches up after, and its average rate
// holds.
type pace struct {
	rate    int64
	start   time.Time
	written int64
}

func newPace(rate int64) *pace { return &pace{rate: rate, start: time.Now()} }

// due returns how many bytes the writer is behind its rate; 0 or less
// when it is on time.
func (p *pace) due() int64 {
	return int64(float64(p.rate)*time.Since(p.start).Seconds()) - p.written
}

// fillCommand prints fill bytes of base64 (random, so nothing in the
// server compresses it), then fillMarker, and creates the file $0: a
// session whose ring is full. Then it waits for a line of input, prints
// flood bytes more the same way, then floodMarker, creates the file $1
// and sleeps, quiet.
func fillCommand(fill, flood int64, filled, flooded string) []string {
	script := fmt.Sprintf(`head -c %d /dev/urandom | base64; echo %s; : > "$0"; read go; head -c %d /dev/urandom | base64; echo %s; : > "$1"; exec sleep 3600`,
		fill*3/4, fillMarker, flood*3/4, floodMarker)
	return []string{"sh", "-c", script, filled, flooded}
}

// fillMarker ends fillCommand's first output, floodMarker its second.
const (
	fillMarker  = "agentmux-bench-filled"
	floodMarker = "agentmux-bench-flooded"
)

// busyCommand floods without end and without the ready handshake: the
// sessions the shutdown measurement stops.
var busyCommand = []string{"sh", "-c", `exec yes "$0"`, yesLine}

// makeTextFile writes about size bytes of source-code-like ASCII lines,
// ending on a whole line, into dir and returns its path and exact size.
func makeTextFile(dir string, size int64) (string, int64, error) {
	path := filepath.Join(dir, fmt.Sprintf("ascii-%d.txt", size))
	f, err := os.Create(path)
	if err != nil {
		return "", 0, fmt.Errorf("create test file: %w", err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	var n int64
	for i := 0; ; i++ {
		line := fmt.Sprintf("%7d\tif err := s.Write(p); err != nil { return fmt.Errorf(\"write: %%w\", err) }\n", i)
		if n+int64(len(line)) > size {
			break
		}
		k, _ := w.WriteString(line) // bufio keeps the first error for Flush
		n += int64(k)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", 0, fmt.Errorf("write test file: %w", err)
	}
	if err := f.Close(); err != nil {
		return "", 0, fmt.Errorf("write test file: %w", err)
	}
	return path, n, nil
}
