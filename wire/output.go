package wire

import (
	"encoding/binary"
	"math/bits"
	"strconv"
	"unicode/utf8"
)

// AppendOutput appends a terminal.output message (OutputMessage) carrying
// prefix and then data, both of which must end on a character boundary
// of the stream (see CompleteUTF8). Invalid UTF-8 becomes U+FFFD, as a
// terminal shows it. It writes the JSON by hand, for speed: output is
// most of what the server sends.
func AppendOutput(b []byte, sessionID string, prefix, data []byte, seq uint64) []byte {
	b = append(b, `{"type":"terminal.output","sessionId":`...)
	b = strconv.AppendQuote(b, sessionID) // a UUID: plain ASCII, quoted alike in Go and JSON
	b = append(b, `,"data":"`...)
	b = appendJSONString(b, prefix)
	b = appendJSONString(b, data)
	b = append(b, `","seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	return append(b, '}')
}

// jsonSafe marks the ASCII bytes that stand for themselves inside a JSON
// string.
var jsonSafe = func() (t [utf8.RuneSelf]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

const hexDigits = "0123456789abcdef"

// Word-at-a-time constants: every byte 0x01, every byte 0x80.
const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// escapeMask returns a mask with the high bit set in each byte of x (a
// word of valid UTF-8) that JSON needs escaped: a control character, a
// quote or a backslash; bytes above 0x7F pass. Borrows can set bits above
// a flagged byte, but the lowest set bit is always exact, which is all
// the caller uses.
func escapeMask(x uint64) uint64 {
	ctrl := (x - 0x20*lsb) & ^x    // high bit where an ASCII byte < 0x20
	quote := x ^ ('"' * lsb)       // zero byte where a byte == '"'
	slash := x ^ ('\\' * lsb)      // zero byte where a byte == '\\'
	quote = (quote - lsb) & ^quote // high bit where it was zero
	slash = (slash - lsb) & ^slash // likewise
	return (ctrl | quote | slash) & msb
}

// appendJSONString appends the JSON string body for s without quotes.
// Valid UTF-8, the usual case, is scanned eight bytes at a time, jumping
// straight to each byte JSON needs escaped; otherwise every invalid byte
// becomes U+FFFD.
func appendJSONString(b []byte, s []byte) []byte {
	valid := utf8.Valid(s)
	start := 0
	for i := 0; i < len(s); {
		if valid {
			for i+8 <= len(s) {
				if m := escapeMask(binary.LittleEndian.Uint64(s[i:])); m != 0 {
					i += bits.TrailingZeros64(m) / 8
					break
				}
				i += 8
			}
			if i >= len(s) {
				break
			}
		}
		c := s[i]
		if c >= utf8.RuneSelf {
			if valid {
				i++
				continue
			}
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				b = append(b, s[start:i]...)
				b = append(b, "\ufffd"...)
				start = i + 1
			}
			i += size
			continue
		}
		if jsonSafe[c] {
			i++
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		}
		i++
		start = i
	}
	return append(b, s[start:]...)
}

// CompleteUTF8 returns the length of the longest prefix of p that does not
// end inside a UTF-8 sequence which later bytes could still complete. Bytes
// that can never form a character are left in, to become U+FFFD.
func CompleteUTF8(p []byte) int {
	// A character is at most 4 bytes, so only the last 3 can be an
	// unfinished one; FullRune counts an impossible sequence as complete.
	for back := 1; back <= min(utf8.UTFMax-1, len(p)); back++ {
		if utf8.RuneStart(p[len(p)-back]) {
			if !utf8.FullRune(p[len(p)-back:]) {
				return len(p) - back
			}
			return len(p)
		}
	}
	return len(p)
}
