package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
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
	// ttyd, when set, is measured beside the server.
	ttyd *ttydPeer
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

// serverRun is one run of the workload through the server, as its one
// client saw it.
type serverRun struct {
	MBps   float64 `json:"serverMBps"`
	Frames int     `json:"frames"`
	// Acks counts the terminal.ack messages the client sent: one before
	// the program starts, then one a frame; 0 for a client that does not
	// acknowledge.
	Acks int `json:"acks"`
	// ReceivedBytes counts the decoded data of every terminal.output
	// frame; with LostBytes it makes up the file.
	ReceivedBytes int64  `json:"receivedBytes"`
	Resyncs       int    `json:"resyncs"`
	LostBytes     uint64 `json:"lostBytes"`
}

// throughputRun is one bare run and two server runs of the same workload:
// one whose client acknowledges every frame, so it paces the program and
// must get every byte, and one whose client does not, which the server
// skips ahead when it falls a ring behind.
type throughputRun struct {
	BareMBps  float64   `json:"bareMBps"`
	Acking    serverRun `json:"acking"`
	NotAcking serverRun `json:"notAcking"`
	// TTYDMBps is the same workload through ttyd (--ttyd), 0 without.
	TTYDMBps float64 `json:"ttydMBps,omitempty"`
}

// serverSummary is the server runs of one kind over all runs.
type serverSummary struct {
	// MBpsMedian is the median over the runs; Ratio is it over the bare
	// median.
	MBpsMedian float64 `json:"serverMBpsMedian"`
	Ratio      float64 `json:"ratio"`
	// Totals over the runs, and what each run lost.
	Resyncs         int      `json:"resyncs"`
	LostBytes       uint64   `json:"lostBytes"`
	LostPercent     float64  `json:"lostPercent"`
	LostBytesPerRun []uint64 `json:"lostBytesPerRun"`
}

// throughputResult compares cat of a file read straight from a PTY with
// the same program streamed through the server to one client, which
// acknowledges what it reads or not.
type throughputResult struct {
	FileBytes      int64           `json:"fileBytes"`
	Runs           []throughputRun `json:"runs"`
	BareMBpsMedian float64         `json:"bareMBpsMedian"`
	Acking         serverSummary   `json:"acking"`
	NotAcking      serverSummary   `json:"notAcking"`
	// TTYDMBpsMedian and TTYDRatio (to the bare median) are ttyd's, with
	// --ttyd. ttyd pauses the program while its client reads, so it loses
	// nothing: it compares with the acknowledging client.
	TTYDMBpsMedian float64 `json:"ttydMBpsMedian,omitempty"`
	TTYDRatio      float64 `json:"ttydRatio,omitempty"`
}

// measureThroughput runs cat of an ASCII file of about size bytes runs
// times, each time bare, then through the server to a client that
// acknowledges and to one that does not.
func measureThroughput(ctx context.Context, e *benchEnv, size int64, runs int) (*throughputResult, error) {
	path, size, err := makeTextFile(e.tmp, size)
	if err != nil {
		return nil, err
	}
	r := &throughputResult{FileBytes: size}
	var bare, ttyd []float64
	for i := range runs {
		d, err := bareCat(ctx, path, size)
		if err != nil {
			return nil, fmt.Errorf("bare run %d: %w", i+1, err)
		}
		run := throughputRun{BareMBps: mbps(size, d)}
		// The two server runs swap places every run, so neither always
		// runs on a machine the other has just warmed or tired.
		for _, ack := range [][]bool{{true, false}, {false, true}}[i%2] {
			sr, err := serverCat(ctx, e, path, size, ack)
			if err != nil {
				return nil, fmt.Errorf("server run %d, client acknowledging %v: %w", i+1, ack, err)
			}
			if ack {
				run.Acking = sr
			} else {
				run.NotAcking = sr
			}
		}
		if e.ttyd != nil {
			d, err := ttydCat(ctx, e.ttyd, path, size)
			if err != nil {
				return nil, fmt.Errorf("ttyd run %d: %w", i+1, err)
			}
			run.TTYDMBps = mbps(size, d)
		}
		e.logf("throughput run %d/%d: bare %.0f MB/s; server, acknowledging %.0f MB/s, %s lost in %d resyncs; not acknowledging %.0f MB/s, %s lost in %d resyncs; ttyd %.0f MB/s",
			i+1, runs, run.BareMBps, run.Acking.MBps, formatBytes(int64(run.Acking.LostBytes)), run.Acking.Resyncs,
			run.NotAcking.MBps, formatBytes(int64(run.NotAcking.LostBytes)), run.NotAcking.Resyncs, run.TTYDMBps)
		r.Runs = append(r.Runs, run)
		bare = append(bare, run.BareMBps)
		ttyd = append(ttyd, run.TTYDMBps)
	}
	r.BareMBpsMedian = median(bare)
	r.Acking = summarize(r.Runs, size, r.BareMBpsMedian, func(run *throughputRun) serverRun { return run.Acking })
	r.NotAcking = summarize(r.Runs, size, r.BareMBpsMedian, func(run *throughputRun) serverRun { return run.NotAcking })
	if e.ttyd != nil {
		r.TTYDMBpsMedian = median(ttyd)
		r.TTYDRatio = r.TTYDMBpsMedian / r.BareMBpsMedian
	}
	return r, nil
}

// summarize sums up the server runs of one kind, which of picks out of
// each run.
func summarize(runs []throughputRun, size int64, bareMedian float64, of func(*throughputRun) serverRun) serverSummary {
	var s serverSummary
	var speeds []float64
	for i := range runs {
		sr := of(&runs[i])
		speeds = append(speeds, sr.MBps)
		s.Resyncs += sr.Resyncs
		s.LostBytes += sr.LostBytes
		s.LostBytesPerRun = append(s.LostBytesPerRun, sr.LostBytes)
	}
	s.MBpsMedian = median(speeds)
	if bareMedian > 0 {
		s.Ratio = s.MBpsMedian / bareMedian
	}
	if len(runs) > 0 {
		s.LostPercent = 100 * float64(s.LostBytes) / float64(size*int64(len(runs)))
	}
	return s
}

// bareCat runs the workload in a PTY of its own and reads it in a plain
// loop, the baseline: the time from the newline that starts cat to the
// end of the terminal.
func bareCat(ctx context.Context, path string, size int64) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	tty, end, err := startBare(ctx, catCommand(path))
	if err != nil {
		return 0, err
	}
	defer end()
	buf := make([]byte, 32<<10)
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

// startBare starts argv, a workload that prints readyLine when it is
// ready, in a PTY of this process's own, and returns the terminal once
// that line has been read, and the function that ends the program and
// closes the terminal. ctx ending kills the program, which ends a read in
// progress.
func startBare(ctx context.Context, argv []string) (*os.File, func(), error) {
	cmd := exec.Command(argv[0], argv[1:]...)
	tty, err := pty.StartWithSize(cmd, &pty.Winsize{Cols: 80, Rows: 24})
	if err != nil {
		return nil, nil, fmt.Errorf("start %s in a PTY: %w", argv[0], err)
	}
	// A PTY read does not end on Close (creack/pty reads block): it ends
	// when the program, the terminal's last holder, is gone.
	stop := context.AfterFunc(ctx, func() { _ = cmd.Process.Kill() })
	end := func() {
		stop()
		_ = cmd.Process.Kill() // a no-op once the program has ended
		_ = tty.Close()
		_ = cmd.Wait()
	}
	buf := make([]byte, 4<<10)
	var head []byte
	for !bytes.Contains(head, []byte(readyLine)) {
		n, err := tty.Read(buf)
		if err != nil {
			end()
			return nil, nil, fmt.Errorf("wait for the ready line: %w", ptyErr(ctx, err))
		}
		head = append(head, buf[:n]...)
	}
	return tty, end, nil
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
// WebSocket until terminal.exit. With ack the client acknowledges the
// ready line before it starts cat, and every frame as soon as it has read
// it, as a browser that keeps up does.
func serverCat(ctx context.Context, e *benchEnv, path string, size int64, ack bool) (serverRun, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	r, err := e.newReadySession(ctx, "bench throughput", catCommand(path))
	if err != nil {
		return serverRun{}, err
	}
	defer r.close()
	s, c, st := r.session, r.c, r.st
	if ack {
		if err := c.startPacing(s.ID, st); err != nil {
			return serverRun{}, err
		}
	}
	start := time.Now()
	if err := c.input(s.ID, "\n"); err != nil {
		return serverRun{}, err
	}
	if err := c.readUntil(s.ID, st, exited); err != nil {
		return serverRun{}, fmt.Errorf("read the stream: %w", err)
	}
	d := time.Since(start)
	if want := uint64(len(readyLine)) + uint64(size); st.seq != want || st.exitCode != 0 {
		return serverRun{}, fmt.Errorf("the stream ended at byte %d with exit code %d, want byte %d and 0: the server must run on this machine, to read %s", st.seq, st.exitCode, want, path)
	}
	return serverRun{
		MBps: mbps(size, d), Frames: st.frames, Acks: st.acks,
		ReceivedBytes: st.dataBytes, Resyncs: st.resyncs, LostBytes: st.lostBytes,
	}, nil
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
