package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	psnet "github.com/shirou/gopsutil/v3/net"
)

// startTimeout bounds the wait for a started server to listen.
const startTimeout = 30 * time.Second

// stopTimeout bounds the wait for a server to exit after SIGTERM, on top
// of its shutdown grace (5 s by default); then it is killed.
const stopTimeout = 20 * time.Second

// serverOptions describe a server the benchmark starts.
type serverOptions struct {
	// Bin is the agentmux binary.
	Bin string
	// Workspace and DataDir are its --workspace and --data-dir.
	Workspace, DataDir string
	// Token, when set, is its --token.
	Token string
	// Scrollback, when not 0, is its --scrollback in bytes.
	Scrollback int64
	// MaxSessions, when not 0, is its --max-sessions.
	MaxSessions int
	// Args are more flags, given after the others.
	Args []string
}

// serverProc is a server the benchmark started. Its one goroutine waits
// for the process and publishes the end by closing done.
type serverProc struct {
	cmd *exec.Cmd
	log *logWatch
	// url is where it serves, http://127.0.0.1:port, once it listens.
	url string
	// started is just before exec; listening when its log said so.
	started, listening time.Time

	done  chan struct{}
	ended time.Time // set before done is closed
}

// startServer starts the server and waits until it listens.
func startServer(ctx context.Context, o serverOptions) (*serverProc, error) {
	args := []string{"--addr", "127.0.0.1:0", "--workspace", o.Workspace, "--data-dir", o.DataDir}
	if o.Token != "" {
		args = append(args, "--token", o.Token)
	}
	if o.Scrollback > 0 {
		args = append(args, "--scrollback", strconv.FormatInt(o.Scrollback, 10))
	}
	if o.MaxSessions > 0 {
		args = append(args, "--max-sessions", strconv.Itoa(o.MaxSessions))
	}
	return startProcess(ctx, o.Bin, append(args, o.Args...), listenRE)
}

// startProcess starts bin with args, a server that logs where it listens
// in a line listen matches (its first group the URL), and waits until it
// does.
func startProcess(ctx context.Context, bin string, args []string, listen *regexp.Regexp) (*serverProc, error) {
	cmd := exec.Command(bin, args...)
	// A group of its own: Ctrl+C at the terminal reaches the benchmark,
	// which stops the server itself.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// The token reaches the server by flag, not by an inherited
	// AGENTMUX_TOKEN; other AGENTMUX_ settings of the user's would skew the
	// measurements.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTMUX_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	p := &serverProc{cmd: cmd, log: newLogWatch(listen), done: make(chan struct{})}
	cmd.Stderr = p.log
	p.started = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start server %s: %w", bin, err)
	}
	go func() {
		_ = cmd.Wait() // the exit status is read from ProcessState
		p.ended = time.Now()
		close(p.done)
	}()

	t := time.NewTimer(startTimeout)
	defer t.Stop()
	select {
	case <-p.log.ready:
		p.url, p.listening = p.log.listenURL()
		return p, nil
	case <-p.done:
		return nil, fmt.Errorf("server %s exited with %v before listening; its log:\n%s", bin, cmd.ProcessState, p.log.tail())
	case <-t.C:
		p.kill()
		return nil, fmt.Errorf("server %s did not listen within %v; its log:\n%s", bin, startTimeout, p.log.tail())
	case <-ctx.Done():
		p.kill()
		return nil, fmt.Errorf("start server: %w", context.Cause(ctx))
	}
}

// startFreshServer starts the server on a workspace and a data directory
// of their own, made under dir, so that nothing of another server's
// sessions carries over, and returns it with the options it was started
// with, the directories filled in.
func startFreshServer(ctx context.Context, dir, name string, o serverOptions) (*serverProc, serverOptions, error) {
	base, err := os.MkdirTemp(dir, name)
	if err != nil {
		return nil, o, fmt.Errorf("make server directories: %w", err)
	}
	o.Workspace, o.DataDir = filepath.Join(base, "workspace"), filepath.Join(base, "data")
	if err := os.Mkdir(o.Workspace, 0o700); err != nil {
		return nil, o, fmt.Errorf("make server directories: %w", err)
	}
	srv, err := startServer(ctx, o)
	return srv, o, err
}

// pid returns the server's process id.
func (p *serverProc) pid() int { return p.cmd.Process.Pid }

// stop sends SIGTERM and waits for the process to end, killing it after
// stopTimeout. It returns the time from the signal to the exit and the
// exit code (-1 when a signal ended it).
func (p *serverProc) stop() (time.Duration, int, error) {
	select {
	case <-p.done:
		return 0, p.cmd.ProcessState.ExitCode(), errors.New("server had already exited")
	default:
	}
	sent := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return 0, 0, fmt.Errorf("signal server: %w", err)
	}
	t := time.NewTimer(stopTimeout)
	defer t.Stop()
	select {
	case <-p.done:
		return p.ended.Sub(sent), p.cmd.ProcessState.ExitCode(), nil
	case <-t.C:
		p.kill()
		return 0, -1, fmt.Errorf("server did not exit within %v of SIGTERM; killed it; its log:\n%s", stopTimeout, p.log.tail())
	}
}

// kill ends the server at once and waits for it.
func (p *serverProc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

// close stops the server if it still runs: the cleanup of every server
// the benchmark starts.
func (p *serverProc) close() {
	select {
	case <-p.done:
	default:
		_, _, _ = p.stop() // a cleanup: the measurement is over
	}
}

// listenRE finds the address in the server's start-up line (cmd/server/
// main.go: log.Info("agentmux listening", "url", ...)), and hubListenRE
// in agentmux hub's (cmd/server/hubmode.go).
var (
	listenRE    = regexp.MustCompile(`msg="agentmux listening".*\burl=(http://\S+?)/?(\s|$)`)
	hubListenRE = regexp.MustCompile(`msg="agentmux hub listening".*\burl=(http://\S+?)/?(\s|$)`)
)

// logWatch collects a server's stderr, keeping its end for error
// messages, and notices the line saying where it listens. The process's
// output copier writes to it while the benchmark reads it.
type logWatch struct {
	ready chan struct{} // closed when the listen line has come
	// listen matches the listen line, its first group the URL; nil
	// looks for none.
	listen *regexp.Regexp

	// mu protects the fields below.
	mu      sync.Mutex
	partial []byte
	lines   []string
	url     string
	at      time.Time
}

// logLines is how many lines of a server's log are kept.
const logLines = 40

func newLogWatch(listen *regexp.Regexp) *logWatch {
	return &logWatch{ready: make(chan struct{}), listen: listen}
}

func (w *logWatch) Write(p []byte) (int, error) {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			break
		}
		line := string(w.partial[:i])
		w.partial = w.partial[i+1:]
		if w.url == "" && w.listen != nil {
			if m := w.listen.FindStringSubmatch(line); m != nil {
				w.url, w.at = m[1], now
				close(w.ready)
			}
		}
		w.lines = append(w.lines, line)
		if len(w.lines) > logLines {
			w.lines = w.lines[len(w.lines)-logLines:]
		}
	}
	return len(p), nil
}

func (w *logWatch) listenURL() (string, time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.url, w.at
}

// tail returns the last lines of the log.
func (w *logWatch) tail() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.lines, "\n") + string(w.partial)
}

// processRSS returns a process's resident set size, VmRSS of
// /proc/<pid>/status.
func processRSS(pid int) (uint64, error) {
	m, err := processMem(pid)
	return m.RSS, err
}

// memInfo is a process's resident memory in bytes: all of it, and the
// part that is anonymous (the heap, stacks) and the part that maps files
// (the binary, the session database's mmap).
type memInfo struct {
	RSS, Anon, File uint64
}

// processMem reads VmRSS, RssAnon and RssFile of /proc/<pid>/status.
func processMem(pid int) (memInfo, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memInfo{}, fmt.Errorf("read RSS of process %d: %w", pid, err)
	}
	defer f.Close()
	var m memInfo
	fields := map[string]*uint64{"VmRSS:": &m.RSS, "RssAnon:": &m.Anon, "RssFile:": &m.File}
	found := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, v, _ := strings.Cut(sc.Text(), "\t")
		p, ok := fields[name]
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return memInfo{}, fmt.Errorf("read RSS of process %d: bad %s %q", pid, name, v)
		}
		*p = kb << 10
		found++
	}
	if err := sc.Err(); err != nil {
		return memInfo{}, fmt.Errorf("read RSS of process %d: %w", pid, err)
	}
	if found < len(fields) {
		return memInfo{}, fmt.Errorf("read RSS of process %d: no VmRSS, RssAnon and RssFile (a zombie?)", pid)
	}
	return m, nil
}

// listenerPID returns the process listening on the TCP port of the
// server's address (http://host:port), found through gopsutil, which
// needs to see that process's open files: the same user, or root.
func listenerPID(ctx context.Context, base string) (int, error) {
	hostport := strings.TrimPrefix(strings.TrimPrefix(base, "http://"), "https://")
	_, portStr, err := net.SplitHostPort(strings.TrimSuffix(hostport, "/"))
	if err != nil {
		return 0, fmt.Errorf("find the server's process: address %q: %w", base, err)
	}
	port, err := strconv.ParseUint(portStr, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("find the server's process: port %q: %w", portStr, err)
	}
	conns, err := psnet.ConnectionsWithContext(ctx, "tcp")
	if err != nil {
		return 0, fmt.Errorf("find the server's process: list connections: %w", err)
	}
	for _, c := range conns {
		if c.Status == "LISTEN" && c.Laddr.Port == uint32(port) && c.Pid > 0 {
			return int(c.Pid), nil
		}
	}
	return 0, fmt.Errorf("find the server's process: no process of ours listens on port %d (another user's, or another machine's? pass --pid)", port)
}

// memWhere is where a process's resident memory lies, in bytes, by what
// is mapped: what the RSS total alone cannot say.
type memWhere struct {
	// Anon is anonymous memory: for a Go program, its heap, goroutine
	// stacks and the runtime's own structures.
	Anon uint64 `json:"anon"`
	// Code is the executable's machine code; Data the rest of it that was
	// read (read-only data: tables, strings, the embedded UI).
	Code uint64 `json:"code"`
	Data uint64 `json:"data"`
	// Database is what of the session database's memory map was read.
	Database uint64 `json:"database"`
	// Other is every other file mapped (shared libraries, the loader).
	Other uint64 `json:"other"`
}

// databaseFile is the name of the server's session database in its data
// directory.
const databaseFile = "agentmux.db"

// processMemWhere reads /proc/<pid>/smaps and adds up each mapping's Rss
// by what it maps.
func processMemWhere(pid int) (memWhere, error) {
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return memWhere{}, fmt.Errorf("read memory map of process %d: %w", pid, err)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps", pid))
	if err != nil {
		return memWhere{}, fmt.Errorf("read memory map of process %d: %w", pid, err)
	}
	defer f.Close()
	var (
		w    memWhere
		into *uint64
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "Rss:"); ok {
			kb, err := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil || into == nil {
				return memWhere{}, fmt.Errorf("read memory map of process %d: bad line %q", pid, line)
			}
			*into += kb << 10
			continue
		}
		// A mapping's first line: address perms offset device inode [path].
		fields := strings.Fields(line)
		if len(fields) < 5 || !strings.Contains(fields[0], "-") || strings.HasSuffix(fields[0], ":") {
			continue
		}
		path := ""
		if len(fields) > 5 {
			path = strings.Join(fields[5:], " ")
		}
		switch {
		case path == "" || strings.HasPrefix(path, "["):
			into = &w.Anon
		case path == exe && strings.Contains(fields[1], "x"):
			into = &w.Code
		case path == exe:
			into = &w.Data
		case filepath.Base(path) == databaseFile:
			into = &w.Database
		default:
			into = &w.Other
		}
	}
	if err := sc.Err(); err != nil {
		return memWhere{}, fmt.Errorf("read memory map of process %d: %w", pid, err)
	}
	return w, nil
}
