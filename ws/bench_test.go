package ws_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/agentmux/agentmux/pty"
	"github.com/agentmux/agentmux/wire"
)

// benchFileSize is the file cat floods through the terminal.
const benchFileSize = 64 << 20

// outputFrame is the part of a server message the benchmark client needs.
type outputFrame struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionId"`
	Seq       uint64 `json:"seq"`
	Reset     bool   `json:"reset"`
	// Data is the decoded output; benchClient leaves it empty for speed
	// unless decode is set.
	Data []byte `json:"-"`
}

// benchClient reads frames cheaply: the benchmark shares two cores with the
// server and the program, and a client that spends them on decoding
// measures itself rather than the server. It takes terminal.output frames,
// whose layout the server fixes, apart by hand and counts bytes by seq;
// the tests, not the benchmarks, check the bytes themselves.
type benchClient struct {
	*client
	// decode asks for Data to be filled in.
	decode bool
	raw    bytes.Buffer
	data   []byte
}

var (
	outputHead = []byte(`{"type":"terminal.output","sessionId":"`)
	dataKey    = []byte(`","data":"`)
	seqKey     = []byte(`","seq":`)
)

func (c *benchClient) read(b *testing.B, m *outputFrame) {
	*m = outputFrame{}
	_ = c.conn.SetReadDeadline(time.Now().Add(waitTimeout))
	_, r, err := c.conn.NextReader()
	if err != nil {
		b.Fatalf("read: %v", err)
	}
	c.raw.Reset()
	if _, err := c.raw.ReadFrom(r); err != nil {
		b.Fatalf("read: %v", err)
	}
	frame := c.raw.Bytes()
	if !bytes.HasPrefix(frame, outputHead) {
		if err := json.Unmarshal(frame, m); err != nil {
			b.Fatalf("decode %q: %v", frame, err)
		}
		return
	}
	id, rest, _ := bytes.Cut(frame[len(outputHead):], dataKey)
	end := bytes.LastIndex(rest, seqKey)
	if end < 0 {
		b.Fatalf("bad output frame %q", frame[:min(len(frame), 200)])
	}
	seq, err := strconv.ParseUint(string(bytes.TrimSuffix(rest[end+len(seqKey):], []byte("}"))), 10, 64)
	if err != nil {
		b.Fatalf("bad seq in %q: %v", rest[end:], err)
	}
	m.Type, m.SessionID, m.Seq = wire.TypeTerminalOutput, string(id), seq
	if c.decode {
		c.data = unescapeJSON(c.data[:0], rest[:end])
		m.Data = c.data
	}
}

// BenchmarkThroughput compares cat of a 64 MiB multi-byte file read
// straight from a PTY (bare) with the same program streamed through the
// server to one WebSocket client (server). The ratio of their MB/s is the
// server's efficiency; lost-bytes must be 0.
func BenchmarkThroughput(b *testing.B) {
	for _, kind := range []struct {
		name string
		text func(int) []byte
	}{
		{"ascii", asciiText},
		{"multibyte", multiByteText},
	} {
		content := kind.text(benchFileSize)[:benchFileSize]
		// End on a whole line so the file is valid UTF-8 throughout.
		content = content[:lastNewline(content)+1]
		path := writeFile(b, content)
		b.Run(kind.name+"/bare", func(b *testing.B) { benchBare(b, path, len(content)) })
		b.Run(kind.name+"/server", func(b *testing.B) { benchServer(b, path, content) })
	}
}

// asciiText returns about n bytes of source-code-like lines.
func asciiText(n int) []byte {
	var b bytes.Buffer
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "%7d\tif err := s.Write(p); err != nil { return fmt.Errorf(\"write: %%w\", err) }\n", i)
	}
	return b.Bytes()
}

// benchBare reads cat of path straight from a PTY: the baseline.
func benchBare(b *testing.B, path string, size int) {
	b.SetBytes(int64(size))
	buf := make([]byte, 32<<10)
	for b.Loop() {
		p, err := pty.Start(pty.Options{Argv: []string{"sh", "-c", `stty raw -echo; exec cat "$0"`, path}})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for {
			k, err := p.Read(buf)
			n += k
			if err == io.EOF {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
		}
		if n != size {
			b.Fatalf("read %d bytes, want %d", n, size)
		}
		_ = p.Close()
	}
}

// benchServer streams the same program through the server to one client.
func benchServer(b *testing.B, path string, content []byte) {
	e := newEnv(b, envOptions{})
	c := &benchClient{client: e.dial(nil)}
	b.SetBytes(int64(len(content)))
	var frames, resyncs int
	var lost uint64
	var elapsed time.Duration
	var m outputFrame
	for b.Loop() {
		s := e.session(rawCat(path)...)
		c.attach(s.ID(), nil)
		c.start(s.ID())
		start := time.Now()
		// The stream counts from the end of the ready line. A resync
		// jumps the client's seq ahead: the gap is what it lost.
		seq := uint64(len(readyLine))
		for {
			c.read(b, &m)
			if m.SessionID != s.ID() {
				continue
			}
			switch {
			case m.Type == wire.TypeTerminalOutput:
				frames++
				seq = m.Seq
			case m.Type == wire.TypeSessionAttached && m.Reset:
				resyncs++
				lost += m.Seq - seq
				seq = m.Seq
			}
			if m.Type == wire.TypeTerminalExit {
				break
			}
		}
		elapsed += time.Since(start)
		if want := uint64(len(readyLine) + len(content)); seq != want {
			b.Fatalf("stream ended at seq %d, want %d", seq, want)
		}
		ctx, cancel := contextWithDeadline()
		if err := e.mgr.Destroy(ctx, s.ID()); err != nil {
			b.Fatal(err)
		}
		cancel()
	}
	b.ReportMetric(float64(frames)/elapsed.Seconds(), "frames/s")
	b.ReportMetric(float64(len(content))*float64(b.N)/float64(frames), "B/frame")
	b.ReportMetric(float64(resyncs), "resyncs")
	b.ReportMetric(float64(lost), "lost-bytes")
}

func lastNewline(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i
		}
	}
	return -1
}

// BenchmarkEcho measures a keystroke's round trip: terminal.input to the
// server, into the PTY, echoed by the program, back as terminal.output.
func BenchmarkEcho(b *testing.B) {
	e := newEnv(b, envOptions{})
	s := e.session("sh", "-c", `stty raw -echo; echo ready; exec cat`)
	c := &benchClient{client: e.dial(nil), decode: true}
	c.attach(s.ID(), nil)
	var st stream
	c.readUntil(s.ID(), &st, contains("ready"))

	var m outputFrame
	rtts := make([]time.Duration, 0, b.N)
	key := []string{"a", "b"}
	for i := 0; b.Loop(); i++ {
		start := time.Now()
		c.send(input(s.ID(), key[i%2]))
		for {
			c.read(b, &m)
			if m.Type == wire.TypeTerminalOutput && string(m.Data) == key[i%2] {
				break
			}
		}
		rtts = append(rtts, time.Since(start))
	}
	slices.Sort(rtts)
	pct := func(p float64) float64 {
		return float64(rtts[min(len(rtts)-1, int(p*float64(len(rtts))))].Microseconds())
	}
	b.ReportMetric(pct(0.50), "p50-µs")
	b.ReportMetric(pct(0.99), "p99-µs")
}

// BenchmarkFlood watches one second of an endless flood per iteration and
// reports the frame rate and size: about 62 frames a second below 64 KiB
// per frame, more only when frames carry 64 KiB or more.
func BenchmarkFlood(b *testing.B) {
	for _, tc := range []struct {
		name    string
		command []string
	}{
		// Far faster than any terminal can carry: frames fill to 64 KiB+.
		{"saturating", []string{"sh", "-c", `stty raw -echo; echo ready; read go; exec yes 'agentmux flood 日本語 ✓ 0123456789 abcdefghijklmnopqrstuvwxyz'`}},
		// Steady floods above the 65 MB/s that a ring drained only every
		// 16 ms could carry: the size trigger keeps the client whole.
		{"paced-64MBps", pacedFlood(64)},
		{"paced-128MBps", pacedFlood(128)},
		// A build log: bursts of lines, well under 4 MB/s (64 KiB per
		// 16 ms), so frames are timer-driven: about 62 a second.
		{"build-log", []string{"sh", "-c", `stty raw -echo; echo ready; read go; i=0; while :; do echo "line $i of a busy build log"; i=$((i+1)); [ $((i % 100)) = 0 ] && sleep 0.005; done`}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b, envOptions{})
			s := e.session(tc.command...)
			c := &benchClient{client: e.dial(nil)}
			c.attach(s.ID(), nil)
			c.start(s.ID())
			var frames, resyncs int
			var bytes, lost uint64
			var elapsed time.Duration
			var m outputFrame
			seq := uint64(len(readyLine))
			for b.Loop() {
				start := time.Now()
				for time.Since(start) < time.Second {
					c.read(b, &m)
					switch {
					case m.Type == wire.TypeTerminalOutput:
						frames++
						bytes += m.Seq - seq
						seq = m.Seq
					case m.Type == wire.TypeSessionAttached && m.Reset:
						resyncs++
						lost += m.Seq - seq
						seq = m.Seq
					}
				}
				elapsed += time.Since(start)
			}
			b.ReportMetric(float64(frames)/elapsed.Seconds(), "frames/s")
			b.ReportMetric(float64(bytes)/float64(max(frames, 1)), "B/frame")
			b.ReportMetric(float64(bytes)/elapsed.Seconds()/1e6, "MB/s")
			b.ReportMetric(float64(resyncs), "resyncs")
			b.ReportMetric(float64(lost), "lost-bytes")
		})
	}
}

// unescapeJSON appends the bytes a JSON string body stands for.
func unescapeJSON(dst, s []byte) []byte {
	for {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			return append(dst, s...)
		}
		dst = append(dst, s[:i]...)
		switch c := s[i+1]; c {
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			v, _ := strconv.ParseUint(string(s[i+2:i+6]), 16, 32)
			dst = utf8.AppendRune(dst, rune(v))
			s = s[i+6:]
			continue
		default:
			dst = append(dst, c)
		}
		s = s[i+2:]
	}
}
