package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// stagesEnv, set to "FILL,TRICKLE,BUSY,DIR" (bytes; bytes per second;
// bytes per second; a directory), turns this program into the staged
// printer, the session program of the scale measurement. It is this
// program rather than a shell loop because a loop that forks a sleep
// every hundred lines cannot keep a build log's pace with 16 or more of
// them on two cores, and the measurement would then count the forks'
// pace, not the server's cost.
const stagesEnv = "AGENTMUX_BENCH_STAGES"

// The files in the staged printer's directory that move it on, and the
// markers it prints as it does (with fillMarker and quietMarker).
const (
	trickleFile   = "trickle"
	busyFile      = "busy"
	quietFile     = "quiet"
	trickleMarker = "agentmux-bench-trickle"
	busyMarker    = "agentmux-bench-busy"
)

// The staged printer's paces. defaultTrickleRate is an agent at work:
// short status lines, a few a second. defaultBusyRate is a build log,
// 0.4 to 0.5 MB/s, in bursts of short lines a stagesBurst apart: output
// that never fills a frame, so frames leave on the server's batch timer.
const (
	defaultTrickleRate = 2000
	defaultBusyRate    = 450000
	stagesBurst        = 5 * time.Millisecond
	stagesPoll         = 10 * time.Millisecond
)

// The staged printer's lines: a build log's while it fills the ring and
// while it is busy, an agent's status while it trickles. None holds a
// marker.
const (
	buildLine  = "line %d of a busy build log\n"
	statusLine = "step %d: reading the code, 3 files changed\n"
)

// stages is what the staged printer does: it prints fill bytes at once,
// then fillMarker; once the file trickleFile is in dir, trickleMarker and
// lines at trickle bytes per second; once busyFile is, busyMarker and a
// build log at busy bytes per second; once quietFile is, quietMarker, and
// it sleeps until it is killed.
type stages struct {
	fill, trickle, busy int64
	dir                 string
}

// String returns the stages as stagesEnv takes them.
func (s stages) String() string {
	return fmt.Sprintf("%d,%d,%d,%s", s.fill, s.trickle, s.busy, s.dir)
}

// parseStages reads stagesEnv's value; the directory, last, may hold
// commas.
func parseStages(spec string) (stages, error) {
	f := strings.SplitN(spec, ",", 4)
	if len(f) != 4 || f[3] == "" {
		return stages{}, fmt.Errorf("want FILL,TRICKLE,BUSY,DIR")
	}
	var v [3]int64
	for i := range v {
		n, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil || n < 0 || (i > 0 && n == 0) {
			return stages{}, fmt.Errorf("bad size or rate %q", f[i])
		}
		v[i] = n
	}
	return stages{fill: v[0], trickle: v[1], busy: v[2], dir: f[3]}, nil
}

// stagesCommand runs this program (self) as the staged printer s, after
// the ready handshake.
func stagesCommand(self string, s stages) []string {
	return []string{"sh", "-c", rawScript(`exec env ` + stagesEnv + `="$1" "$0"`), self, s.String()}
}

// stagesMain runs the staged printer when stagesEnv asks for it, and
// never returns then; it returns false when the program is not meant to
// be the printer.
func stagesMain() bool {
	spec := os.Getenv(stagesEnv)
	if spec == "" {
		return false
	}
	s, err := parseStages(spec)
	if err != nil {
		fmt.Fprintf(os.Stderr, "agentmux-bench stages: %s=%q: %v\n", stagesEnv, spec, err)
		os.Exit(2)
	}
	if err := printStages(os.Stdout, s); err != nil {
		// A closed terminal (the session deleted) ends it quietly.
		os.Exit(0)
	}
	// Quiet, the program stays, as an agent waiting for its next prompt
	// does: the server ends it with the session.
	for {
		time.Sleep(time.Hour)
	}
}

// printStages prints s's stages to w, up to and with quietMarker.
func printStages(w io.Writer, s stages) error {
	var build, status int
	buf := make([]byte, 0, maxWriterChunk+len(buildLine)+20)
	for n := int64(0); n < s.fill; {
		buf = appendLines(buf[:0], buildLine, &build, min(s.fill-n, maxWriterChunk))
		k, err := w.Write(buf)
		n += int64(k)
		if err != nil {
			return err
		}
	}
	if _, err := io.WriteString(w, fillMarker+"\n"); err != nil {
		return err
	}
	waitForFile(filepath.Join(s.dir, trickleFile))
	if _, err := io.WriteString(w, trickleMarker+"\n"); err != nil {
		return err
	}
	if err := printPaced(w, s.trickle, statusLine, &status, filepath.Join(s.dir, busyFile)); err != nil {
		return err
	}
	if _, err := io.WriteString(w, busyMarker+"\n"); err != nil {
		return err
	}
	if err := printPaced(w, s.busy, buildLine, &build, filepath.Join(s.dir, quietFile)); err != nil {
		return err
	}
	_, err := io.WriteString(w, quietMarker+"\n")
	return err
}

// printPaced prints lines of format, numbered on from *i, at rate bytes
// per second until the file until exists: a burst of whole lines every
// stagesBurst, each burst one write, with a look for the file (a stat,
// not a fork) before each.
func printPaced(w io.Writer, rate int64, format string, i *int, until string) error {
	p := newPace(rate)
	var buf []byte
	for {
		if _, err := os.Stat(until); err == nil {
			return nil
		}
		if due := p.due(); due > 0 {
			buf = appendLines(buf[:0], format, i, min(due, maxWriterChunk))
			k, err := w.Write(buf)
			p.written += int64(k)
			if err != nil {
				return err
			}
		}
		time.Sleep(stagesBurst)
	}
}

// appendLines appends lines of format, numbered on from *i, to buf until
// it has n bytes or more: the last line is whole, so a burst may be a
// line longer than n, which the next is shorter for.
func appendLines(buf []byte, format string, i *int, n int64) []byte {
	for int64(len(buf)) < n {
		buf = fmt.Appendf(buf, format, *i)
		*i++
	}
	return buf
}

// waitForFile returns once path exists, looking every stagesPoll.
func waitForFile(path string) {
	for {
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(stagesPoll)
	}
}
