package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/creack/pty"
)

// runTimeout bounds one run of a workload: a stuck server or program
// fails the benchmark rather than hanging it.
const runTimeout = 3 * time.Minute

// benchEnv is what every measurement needs: the server and this machine.
type benchEnv struct {
	api   *apiClient
	token string
	// tmp is a directory on this machine for the files the workloads
	// read; the server must see the same files.
	tmp string
	// self is this program's executable, which the paced-writer sessions
	// run.
	self string
	// serverPID is the server's process, 0 when unknown.
	serverPID int
	// scrollback is the server's --scrollback in bytes.
	scrollback int64
	// logf reports progress.
	logf func(format string, args ...any)
}

// dial opens a WebSocket to the server.
func (e *benchEnv) dial(ctx context.Context) (*wsConn, error) {
	return dialWS(ctx, e.api.wsURL(), e.token)
}

// newSession creates a session and returns it with its cleanup, which
// deletes it and reports a failure through logf.
func (e *benchEnv) newSession(ctx context.Context, name string, argv []string) (session, func(), error) {
	s, err := e.api.create(ctx, name, argv)
	if err != nil {
		return session{}, nil, err
	}
	return s, func() {
		if err := e.api.remove(ctx, s.ID); err != nil {
			e.logf("cleanup: %v", err)
		}
	}, nil
}

// readySession is a session, running a command that prints readyLine and
// waits for a line, with a connection attached to it past that line.
type readySession struct {
	session
	c       *wsConn
	st      *streamCount
	cleanup func()
}

// newReadySession creates and attaches a readySession.
func (e *benchEnv) newReadySession(ctx context.Context, name string, argv []string) (*readySession, error) {
	s, cleanup, err := e.newSession(ctx, name, argv)
	if err != nil {
		return nil, err
	}
	c, err := e.dial(ctx)
	if err != nil {
		cleanup()
		return nil, err
	}
	st, err := c.attachReady(s.ID)
	if err != nil {
		c.close()
		cleanup()
		return nil, err
	}
	return &readySession{session: s, c: c, st: st, cleanup: cleanup}, nil
}

// close closes the connection, then deletes the session: in that order
// the delete does not wait on a connection nobody reads.
func (r *readySession) close() {
	r.c.close()
	r.cleanup()
}

// throughputRun is one bare run and one server run of the same workload.
type throughputRun struct {
	BareMBps     float64 `json:"bareMBps"`
	ServerMBps   float64 `json:"serverMBps"`
	ServerFrames int     `json:"serverFrames"`
	// ReceivedBytes counts the decoded data of every terminal.output
	// frame; with LostBytes it makes up the file.
	ReceivedBytes int64  `json:"receivedBytes"`
	Resyncs       int    `json:"resyncs"`
	LostBytes     uint64 `json:"lostBytes"`
}

// throughputResult compares cat of a file read straight from a PTY with
// the same program streamed through the server to one client.
type throughputResult struct {
	FileBytes int64           `json:"fileBytes"`
	Runs      []throughputRun `json:"runs"`
	// Medians over the runs, and their ratio (server / bare).
	BareMBpsMedian   float64 `json:"bareMBpsMedian"`
	ServerMBpsMedian float64 `json:"serverMBpsMedian"`
	Ratio            float64 `json:"ratio"`
	// Totals over the runs.
	Resyncs     int     `json:"resyncs"`
	LostBytes   uint64  `json:"lostBytes"`
	LostPercent float64 `json:"lostPercent"`
}

// measureThroughput runs cat of an ASCII file of about size bytes runs
// times, alternating the bare loop and the server.
func measureThroughput(ctx context.Context, e *benchEnv, size int64, runs int) (*throughputResult, error) {
	path, size, err := makeTextFile(e.tmp, size)
	if err != nil {
		return nil, err
	}
	r := &throughputResult{FileBytes: size}
	var bare, server []float64
	for i := range runs {
		d, err := bareCat(ctx, path, size)
		if err != nil {
			return nil, fmt.Errorf("bare run %d: %w", i+1, err)
		}
		run := throughputRun{BareMBps: mbps(size, d)}
		if err := serverCat(ctx, e, path, size, &run); err != nil {
			return nil, fmt.Errorf("server run %d: %w", i+1, err)
		}
		e.logf("throughput run %d/%d: bare %.0f MB/s, server %.0f MB/s, %d resyncs", i+1, runs, run.BareMBps, run.ServerMBps, run.Resyncs)
		r.Runs = append(r.Runs, run)
		bare, server = append(bare, run.BareMBps), append(server, run.ServerMBps)
		r.Resyncs += run.Resyncs
		r.LostBytes += run.LostBytes
	}
	r.BareMBpsMedian, r.ServerMBpsMedian = median(bare), median(server)
	r.Ratio = r.ServerMBpsMedian / r.BareMBpsMedian
	r.LostPercent = 100 * float64(r.LostBytes) / float64(size*int64(runs))
	return r, nil
}

// bareCat runs the workload in a PTY of its own and reads it in a plain
// loop, the baseline: the time from the newline that starts cat to the
// end of the terminal.
func bareCat(ctx context.Context, path string, size int64) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	argv := catCommand(path)
	cmd := exec.Command(argv[0], argv[1:]...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 80, Rows: 24})
	if err != nil {
		return 0, fmt.Errorf("start cat in a PTY: %w", err)
	}
	defer func() {
		_ = cmd.Process.Kill() // a no-op once cat has ended, as it has unless we failed
		_ = tty.Close()
		_ = cmd.Wait()
	}()
	// A PTY read does not end on Close (creack/pty reads block): it ends
	// when the program, the terminal's last holder, is gone.
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	defer stop()

	buf := make([]byte, 32<<10)
	var head []byte
	for !bytes.Contains(head, []byte(readyLine)) {
		n, err := tty.Read(buf)
		if err != nil {
			return 0, fmt.Errorf("wait for the ready line: %w", ptyErr(ctx, err))
		}
		head = append(head, buf[:n]...)
	}
	start := time.Now()
	if _, err := tty.Write([]byte("\n")); err != nil {
		return 0, fmt.Errorf("start cat: %w", err)
	}
	var got int64
	for {
		n, err := tty.Read(buf)
		got += int64(n)
		if err != nil {
			if err := ptyErr(ctx, err); err != io.EOF {
				return 0, fmt.Errorf("read cat: %w", err)
			}
			break
		}
	}
	d := time.Since(start)
	if got != size {
		return 0, fmt.Errorf("read %d bytes of cat, want %d", got, size)
	}
	return d, nil
}

// ptyErr turns the EIO that ends a terminal into io.EOF, and an error
// caused by the context's end into that.
func ptyErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if errors.Is(err, syscall.EIO) {
		return io.EOF
	}
	return err
}

// serverCat runs the workload as a session and reads it over the
// WebSocket until terminal.exit, filling in run's server figures.
func serverCat(ctx context.Context, e *benchEnv, path string, size int64, run *throughputRun) error {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	r, err := e.newReadySession(ctx, "bench throughput", catCommand(path))
	if err != nil {
		return err
	}
	defer r.close()
	s, c, st := r.session, r.c, r.st
	start := time.Now()
	if err := c.input(s.ID, "\n"); err != nil {
		return err
	}
	if err := c.readUntil(s.ID, st, exited); err != nil {
		return fmt.Errorf("read the stream: %w", err)
	}
	d := time.Since(start)
	if want := uint64(len(readyLine)) + uint64(size); st.seq != want || st.exitCode != 0 {
		return fmt.Errorf("the stream ended at byte %d with exit code %d, want byte %d and 0: the server must run on this machine, to read %s", st.seq, st.exitCode, want, path)
	}
	run.ServerMBps = mbps(size, d)
	run.ServerFrames = st.frames
	run.ReceivedBytes = st.dataBytes
	run.Resyncs, run.LostBytes = st.resyncs, st.lostBytes
	return nil
}

// exited is a readUntil condition: the program's end has arrived.
func exited(st *streamCount, _ *frame) bool { return st.exited }

// mbps returns n bytes in d as MB/s (10^6 bytes).
func mbps(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds() / 1e6
}

// median returns the median of vs, which it leaves unchanged.
func median(vs []float64) float64 {
	if len(vs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
