package sessions

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// BenchmarkTranscriptTurn measures reading what one turn of Claude Code
// spent from its transcript: a turn of a long conversation appends a
// user line and three assistant messages (five lines, one per block,
// each about 1.5 KiB as Claude writes them) to a transcript that already
// holds 200 turns. It reports the bytes read per turn against the
// transcript's growth: 1.00 is each byte read once, however long the
// conversation.
func BenchmarkTranscriptTurn(b *testing.B) {
	path := filepath.Join(b.TempDir(), "conversation.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	pad := strings.Repeat("x", 1200) // the text and tool calls of a block
	turn := func(n int) string {
		var sb strings.Builder
		sb.WriteString(`{"type":"user","message":{"role":"user","content":"` + pad + `"}}` + "\n")
		for m := range 3 {
			id := fmt.Sprintf("msg_%d_%d", n, m)
			blocks := 1 + m%2
			for range blocks {
				fmt.Fprintf(&sb, `{"type":"assistant","message":{"id":%q,"content":[{"type":"text","text":%q}],"usage":{"input_tokens":12,"cache_creation_input_tokens":300,"cache_read_input_tokens":40000,"output_tokens":250}}}`+"\n", id, pad)
			}
		}
		return sb.String()
	}
	for n := range 200 {
		if _, err := f.WriteString(turn(n)); err != nil {
			b.Fatal(err)
		}
	}
	tr := &transcript{tail: jsonlTail{path: path}}
	if _, err := tr.read(); err != nil { // the conversation so far, once
		b.Fatal(err)
	}
	readBefore := tr.tail.read
	fi, _ := f.Stat()
	sizeBefore := fi.Size()
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		if _, err := f.WriteString(turn(200 + i)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if counted, err := tr.read(); err != nil || !counted {
			b.Fatalf("turn %d: counted %v, %v", i, counted, err)
		}
	}
	b.StopTimer()
	fi, _ = f.Stat()
	grew := fi.Size() - sizeBefore
	b.ReportMetric(float64(tr.tail.read-readBefore)/float64(grew), "read/growth")
	b.ReportMetric(float64(grew)/float64(b.N), "B-grown/turn")
	// 3 messages a turn, each of 40312 input tokens.
	if want := int64(3*(200+b.N)) * 40312; tr.in != want {
		b.Fatalf("counted %d input tokens, want %d", tr.in, want)
	}
}
