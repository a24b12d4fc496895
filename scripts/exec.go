package scripts

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/agentmux/agentmux/internal/procgroup"
	"github.com/agentmux/agentmux/internal/textrule"
)

// Status is how a run of a script ended, or that it runs.
type Status string

// Statuses.
const (
	// Running: started, not yet ended.
	Running Status = "running"
	// Passed: it exited 0.
	Passed Status = "passed"
	// Failed: it exited with another code, was killed by a signal, or
	// could not start.
	Failed Status = "failed"
	// Timeout: it ran past its time limit and was killed.
	Timeout Status = "timeout"
	// Superseded: it was stopped because what it was run for had moved
	// on (the agent started working again before its check ended).
	Superseded Status = "superseded"
)

// Result is one run of a script.
type Result struct {
	Status Status `json:"status"`
	// ExitCode is the script's exit code; -1 when it did not exit by
	// itself (killed, timed out, superseded, could not start).
	ExitCode int `json:"exitCode"`
	// DurationMs is how long it ran, in milliseconds.
	DurationMs int64 `json:"durationMs"`
	// Output is the end of what it wrote to stdout and stderr together,
	// at most Command.Tail bytes, as plain text (textrule.Plain).
	Output string `json:"output"`
	// Hash is the hash of the script's text that ran (see Hash).
	Hash string `json:"hash,omitempty"`
}

// DefaultTail is how much of a script's output a Result keeps when
// Command.Tail is 0: the end of a test run's report, where the failures
// and the summary are.
const DefaultTail = 8 << 10

// waitDelay is how long a script that exited, or was killed, may keep
// its output open through a child that left its process group.
const waitDelay = 2 * time.Second

// Command is a script to run.
type Command struct {
	// Text is the script, run by /bin/sh -c.
	Text string
	// Dir is where it runs.
	Dir string
	// Env is its whole environment.
	Env []string
	// Limit bounds how long it runs; 0 means no limit but ctx's.
	Limit time.Duration
	// Tail is how many bytes of its output the Result keeps; 0 means
	// DefaultTail.
	Tail int
}

// Exec runs c and waits for it. It never returns an error: a script that
// cannot start has failed, and says why in its output. When c.Limit
// passes the script is killed and the Result is Timeout; when ctx ends
// first, it is killed and the Result is Superseded. Killing takes the
// script's whole process group, and so does its end: a test runner's
// stray server does not outlive the check.
func Exec(ctx context.Context, c Command) Result {
	start := time.Now()
	limited, cancel := ctx, context.CancelFunc(func() {})
	if c.Limit > 0 {
		limited, cancel = context.WithTimeoutCause(ctx, c.Limit, errLimit)
	}
	defer cancel()
	out := &tail{max: c.Tail}
	if out.max <= 0 {
		out.max = DefaultTail
	}
	cmd := exec.CommandContext(limited, "/bin/sh", "-c", c.Text)
	cmd.Dir, cmd.Env = c.Dir, c.Env
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return procgroup.Kill(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay
	err := cmd.Start()
	if err == nil {
		err = cmd.Wait()
		// Whatever it left in its group goes with it.
		_ = procgroup.Kill(cmd.Process.Pid)
	} else {
		out.Write([]byte("agentmux: could not start the script: " + err.Error() + "\n"))
	}
	r := Result{Status: Passed, ExitCode: 0, DurationMs: time.Since(start).Milliseconds(), Hash: Hash(c.Text)}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case context.Cause(limited) == errLimit && ctx.Err() == nil:
		r.Status, r.ExitCode = Timeout, -1
	case ctx.Err() != nil:
		r.Status, r.ExitCode = Superseded, -1
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		r.Status, r.ExitCode = Failed, exit.ExitCode()
	default:
		r.Status, r.ExitCode = Failed, -1
	}
	// Plain: a test runner's colours would be noise wherever the output
	// is shown, and a prompt may not hold them (see sessions.Check).
	r.Output = textrule.Plain(out.String())
	return r
}

var errLimit = errors.New("the script's time limit passed")

// tail keeps the last max bytes written to it. os/exec calls Write from
// one goroutine for stdout and stderr both (they are the same writer),
// but String may be called while it runs, so it locks.
type tail struct {
	mu   sync.Mutex
	max  int
	buf  []byte
	lost bool
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - t.max; over > 0 {
		t.buf = append(t.buf[:0], t.buf[over:]...)
		t.lost = true
	}
	return len(p), nil
}

// String returns what is kept, from its first whole line when the start
// was cut, as valid UTF-8.
func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.buf
	if t.lost {
		if i := strings.IndexByte(string(b), '\n'); i >= 0 && i < len(b)-1 {
			b = b[i+1:]
		}
		for len(b) > 0 && !utf8.RuneStart(b[0]) {
			b = b[1:]
		}
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}
