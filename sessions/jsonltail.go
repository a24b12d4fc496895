package sessions

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"os"
)

// The agents record each conversation as JSON lines appended to a file:
// Claude Code's transcript, Codex's rollout. agentmux reads what they
// spent from those files at the end of each turn (the agent's hook says
// when), from where the last read stopped: nothing is read while a
// session is idle, and each byte once.

// maxTailRead bounds one read of such a file: a turn that wrote more (a
// huge tool output) is read on at the next turn's end.
const maxTailRead = 8 << 20

// maxTailLine bounds a line kept whole across reads; a longer one is
// skipped, since no line agentmux reads is that long.
const maxTailLine = 1 << 20

// jsonlTail follows one file of JSON lines. It is not safe for
// concurrent use: each is owned by the hook calls that read it, which a
// mutex orders.
type jsonlTail struct {
	path string
	// off is how far the file has been read; partial is a line the last
	// read cut, kept for the next. Read is the bytes read in all.
	off     int64
	partial []byte
	read    int64
}

// lines reads what was appended since the last call and returns its
// whole lines, in order. A line cut by the read is kept for the next
// call.
func (t *jsonlTail) lines() (iter.Seq[[]byte], error) {
	f, err := os.Open(t.path)
	if err != nil {
		return nil, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("stat: %w", err)
	}
	if fi.Size() < t.off {
		// Cut short or written anew: read it afresh.
		t.off, t.partial = 0, nil
	}
	// What was appended, up to maxTailRead: a turn's few KiB, not a
	// buffer of the bound's size at each read.
	buf := make([]byte, min(fi.Size()-t.off, maxTailRead))
	n, err := f.ReadAt(buf, t.off)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read: %w", err)
	}
	t.off += int64(n)
	t.read += int64(n)
	data := append(t.partial, buf[:n]...)
	end := bytes.LastIndexByte(data, '\n')
	if end < 0 {
		t.partial = keepPartial(data)
		return func(func([]byte) bool) {}, nil
	}
	t.partial = keepPartial(data[end+1:])
	return bytes.SplitSeq(data[:end], []byte{'\n'}), nil
}

// wholeLinesEnd is the offset just past the last whole line read: where
// a reader that lost its partial line would start again.
func (t *jsonlTail) wholeLinesEnd() int64 { return t.off - int64(len(t.partial)) }

// keepPartial keeps a cut line for the next read, unless it is too long
// to be a line agentmux reads.
func keepPartial(b []byte) []byte {
	if len(b) > maxTailLine {
		return nil
	}
	return append([]byte(nil), b...)
}
