package wire

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzOutputEncoding checks that a terminal.output frame is valid JSON
// whose data is exactly the input with each invalid byte as U+FFFD, the
// way a terminal shows it, and that CompleteUTF8 only ever holds back the
// start of a character that later bytes could finish.
func FuzzOutputEncoding(f *testing.F) {
	for _, seed := range []string{
		"plain", "a\x1b[31mred\x1b[0m\r\n", "日本語", "🎉", "\xe6\x97", "\xff\xfe", "\"\\\x00\x7f", "a\xe6",
	} {
		f.Add([]byte(seed), []byte("\x1b[?1049h"))
	}
	f.Fuzz(func(t *testing.T, data, prefix []byte) {
		frame := AppendOutput(nil, "id", prefix, data, 42)
		var m OutputMessage
		dec := json.NewDecoder(bytes.NewReader(frame))
		dec.DisallowUnknownFields() // the frame is an OutputMessage, nothing more
		if err := dec.Decode(&m); err != nil {
			t.Fatalf("frame %q is not JSON: %v", frame, err)
		}
		want := string([]rune(string(prefix))) + string([]rune(string(data)))
		if m.Type != TypeTerminalOutput || m.SessionID != "id" || m.Seq != 42 || m.Data != want {
			t.Fatalf("frame %q decodes to %+v, want data %q", frame, m, want)
		}

		n := CompleteUTF8(data)
		if n < len(data)-3 || n > len(data) {
			t.Fatalf("CompleteUTF8(%q) = %d", data, n)
		}
		if held := data[n:]; len(held) > 0 {
			if !utf8.RuneStart(held[0]) || utf8.FullRune(held) {
				t.Fatalf("CompleteUTF8(%q) held back %q, which is not an unfinished character", data, held)
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
				buf = AppendOutput(buf[:0], "0b7c6f7e-2a4e-4b8e-9d7c-3c1e2f4a5b6c", nil, in, 1)
			}
		})
	}
}
