package ws

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmux/agentmux/wire"
)

// FuzzDecodeClientMessage checks that no input crashes the decoder and that
// whatever it accepts is a complete, valid message.
func FuzzDecodeClientMessage(f *testing.F) {
	for _, seed := range []string{
		`{"type":"terminal.input","sessionId":"a","data":"ls\r"}`,
		`{"type":"terminal.resize","sessionId":"a","cols":80,"rows":24}`,
		`{"type":"session.attach","sessionId":"a","since":123}`,
		`{"type":"heartbeat","timestamp":1.5}`,
		`{"type":"terminal.resize","sessionId":"a","cols":"80"}`,
		`{"type":`, `null`, `[]`, `{"type":"x"}`, "\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, perr := decodeClientMessage(b)
		if (m == nil) == (perr == nil) {
			t.Fatalf("decode %q: message %v and error %v", b, m, perr)
		}
		if perr != nil {
			if perr.code != wire.CodeInvalidMessage || perr.msg == "" {
				t.Fatalf("decode %q: error %+v", b, perr)
			}
			return
		}
		if m.Type == wire.TypeHeartbeat {
			return
		}
		if m.SessionID == nil || *m.SessionID == "" {
			t.Fatalf("accepted %q without a sessionId", b)
		}
		switch m.Type {
		case wire.TypeTerminalInput:
			if m.Data == nil {
				t.Fatalf("accepted input %q without data", b)
			}
		case wire.TypeTerminalResize:
			if m.Cols == nil || m.Rows == nil || *m.Cols < 1 || *m.Cols > 1000 || *m.Rows < 1 || *m.Rows > 1000 {
				t.Fatalf("accepted resize %q out of bounds", b)
			}
		case wire.TypeTerminalInterrupt, wire.TypeSessionAttach, wire.TypeSessionDetach, wire.TypeSessionResume:
		default:
			t.Fatalf("accepted unknown type %q", m.Type)
		}
	})
}

// FuzzOutputEncoding checks that a terminal.output frame is valid JSON
// whose data is exactly the input with each invalid byte as U+FFFD, the
// way a terminal shows it, and that completeUTF8 only ever holds back the
// start of a character that later bytes could finish.
func FuzzOutputEncoding(f *testing.F) {
	for _, seed := range []string{
		"plain", "a\x1b[31mred\x1b[0m\r\n", "日本語", "🎉", "\xe6\x97", "\xff\xfe", "\"\\\x00\x7f", "a\xe6",
	} {
		f.Add([]byte(seed), []byte("\x1b[?1049h"))
	}
	f.Fuzz(func(t *testing.T, data, prefix []byte) {
		frame := appendOutput(nil, "id", prefix, data, 42)
		var m struct {
			Type, SessionID, Data string
			Seq                   uint64
		}
		if err := json.Unmarshal(frame, &m); err != nil {
			t.Fatalf("frame %q is not JSON: %v", frame, err)
		}
		want := string([]rune(string(prefix))) + string([]rune(string(data)))
		if m.Type != wire.TypeTerminalOutput || m.SessionID != "id" || m.Seq != 42 || m.Data != want {
			t.Fatalf("frame %q decodes to %+v, want data %q", frame, m, want)
		}

		n := completeUTF8(data)
		if n < len(data)-3 || n > len(data) {
			t.Fatalf("completeUTF8(%q) = %d", data, n)
		}
		if held := data[n:]; len(held) > 0 {
			if !utf8.RuneStart(held[0]) || utf8.FullRune(held) {
				t.Fatalf("completeUTF8(%q) held back %q, which is not an unfinished character", data, held)
			}
		}
	})
}

// BenchmarkAppendOutput measures frame encoding on three kinds of output:
// plain text, text heavy in multi-byte characters, and colourful terminal
// output full of escape sequences.
func BenchmarkAppendOutput(b *testing.B) {
	inputs := map[string][]byte{
		"ascii":     []byte(strings.Repeat("func (s *Session) Write(p []byte) error { return nil } // ok\n", 4096)),
		"multibyte": []byte(strings.Repeat("0000001 héllo wörld 日本語のテキスト ✓ 🎉🚀 ĀāĂă ÆØÅ\n", 4096)),
		"ansi":      []byte(strings.Repeat("\x1b[32m✓\x1b[0m \x1b[1mPASS\x1b[0m ws/stream_test.go:42 (0.01s)\r\n", 4096)),
		"code":      []byte(strings.Repeat("1234567\tif err := s.Write(p); err != nil { return fmt.Errorf(\"write: %w\", err) }\n", 4096)),
	}
	for _, name := range []string{"ascii", "multibyte", "ansi", "code"} {
		in := inputs[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			buf := make([]byte, 0, 8*len(in))
			for b.Loop() {
				buf = appendOutput(buf[:0], "0b7c6f7e-2a4e-4b8e-9d7c-3c1e2f4a5b6c", nil, in, 1)
			}
		})
	}
}
