package attachments

import (
	"bytes"
	"fmt"
	"unicode/utf8"
)

// Kind is what an attachment's content is, read from its bytes.
type Kind string

// The kinds taken.
const (
	PNG  Kind = "png"
	JPEG Kind = "jpeg"
	GIF  Kind = "gif"
	WebP Kind = "webp"
	PDF  Kind = "pdf"
	Text Kind = "text"
)

// IsImage reports whether k is one of the image kinds.
func (k Kind) IsImage() bool { return k == PNG || k == JPEG || k == GIF || k == WebP }

// ext is the extension a stored file of kind k has; a text file keeps
// its own when it has a plain one (cleanName decides).
func (k Kind) ext() string {
	switch k {
	case JPEG:
		return ".jpg"
	case Text:
		return ".txt"
	}
	return "." + string(k)
}

// magic are the first bytes of each binary kind; WebP is a RIFF file
// whose form type (bytes 8 to 12) says WEBP.
var magic = []struct {
	kind   Kind
	at     int
	prefix string
}{
	{PNG, 0, "\x89PNG\r\n\x1a\n"},
	{JPEG, 0, "\xff\xd8\xff"},
	{GIF, 0, "GIF87a"},
	{GIF, 0, "GIF89a"},
	{WebP, 8, "WEBP"},
	{PDF, 0, "%PDF-"},
}

// headLen is how many first bytes the sniffer keeps: enough for every
// magic number above.
const headLen = 16

// sniffer tells an attachment's kind from the bytes written to it, as
// they stream: the first bytes for the binary kinds, and every byte for
// text, which must be UTF-8 without NUL to its end.
type sniffer struct {
	head []byte
	// carry is an incomplete UTF-8 character at the end of the last
	// write, completed by the next.
	carry  []byte
	n      int64
	notUTF bool
	nul    bool
}

// Write takes the next bytes; it never fails.
func (s *sniffer) Write(p []byte) (int, error) {
	if len(s.head) < headLen {
		s.head = append(s.head, p[:min(len(p), headLen-len(s.head))]...)
	}
	s.n += int64(len(p))
	if s.notUTF || s.nul {
		return len(p), nil
	}
	if bytes.IndexByte(p, 0) >= 0 {
		s.nul = true
		return len(p), nil
	}
	b := p
	if len(s.carry) > 0 {
		b = append(s.carry, p...)
		s.carry = nil
	}
	// Keep a last character cut by the end of p for the next write.
	cut := len(b)
	for i := len(b) - 1; i >= 0 && i >= len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				cut = i
			}
			break
		}
	}
	if !utf8.Valid(b[:cut]) {
		s.notUTF = true
		return len(p), nil
	}
	s.carry = append([]byte(nil), b[cut:]...)
	return len(p), nil
}

// kind returns what the bytes written were, or ErrType.
func (s *sniffer) kind() (Kind, error) {
	for _, m := range magic {
		if len(s.head) >= m.at+len(m.prefix) && string(s.head[m.at:m.at+len(m.prefix)]) == m.prefix {
			if m.kind == WebP && string(s.head[:4]) != "RIFF" {
				continue
			}
			return m.kind, nil
		}
	}
	switch {
	case s.nul:
		return "", fmt.Errorf("%w: the file is not an image (PNG, JPEG, GIF, WebP), a PDF or text (it holds NUL bytes, as programs and archives do); its name does not count, only what it holds", ErrType)
	case s.notUTF || len(s.carry) > 0:
		return "", fmt.Errorf("%w: the file is not an image (PNG, JPEG, GIF, WebP), a PDF or UTF-8 text; its name does not count, only what it holds", ErrType)
	}
	return Text, nil
}
