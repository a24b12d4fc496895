package sessions

import (
	"bytes"
	"strings"
	"unicode"

	"github.com/agentmux/agentmux/internal/clip"
)

// alertScanner finds the ways a program asks for its user's attention in
// its output: a BEL, or a desktop notification (OSC 9 as iTerm2 and
// Windows Terminal take it, OSC 99 as kitty does, OSC 777;notify as
// urxvt and foot do). It keeps its state between reads, so a sequence
// split across two reads is still found, and it follows escape sequences
// closely enough that the BEL ending an OSC (a window title, a hyperlink)
// is never taken for a bell.
//
// The zero value is ready; it is used by one goroutine, the run's reader.
type alertScanner struct {
	state alertState
	// osc collects an OSC's text, up to oscMax bytes; longer ones are
	// followed to their end but only their start is kept.
	osc [oscMax]byte
	n   int
}

type alertState uint8

const (
	alertGround alertState = iota
	alertEscape
	alertCSI
	alertOSC
	alertOSCEscape
	alertString // DCS, SOS, PM or APC: ends at ST
	alertStringEscape
)

// oscMax bounds the part of an OSC kept for reading; a notification's text
// beyond it is cut.
const oscMax = 512

// alertKind tells which signal an alert came from.
type alertKind uint8

const (
	alertBell alertKind = iota + 1
	alertNotification
)

// alert is one request for attention found in output.
type alert struct {
	kind alertKind
	// text is a notification's message; empty for a bell or a
	// notification without one.
	text string
}

// scan feeds p and returns the first alert in it, if any; the scanner's
// state still covers all of p. One is enough: a session that starts
// waiting ignores every further alert until its user answers.
func (a *alertScanner) scan(p []byte) (alert, bool) {
	var found alert
	ok := false
	note := func(al alert) {
		if !ok {
			found, ok = al, true
		}
	}
	for len(p) > 0 {
		switch a.state {
		case alertGround:
			// Text is most of any output: jump to the next byte that
			// matters with the vectorised IndexByte, the bell searched
			// for only up to the next escape.
			esc := bytes.IndexByte(p, 0x1b)
			text := p
			if esc >= 0 {
				text = p[:esc]
			}
			if !ok && bytes.IndexByte(text, 0x07) >= 0 {
				note(alert{kind: alertBell})
			}
			if esc < 0 {
				return found, ok
			}
			a.state = alertEscape
			p = p[esc+1:]
		case alertCSI:
			// Colours and cursor moves are most escape sequences: find
			// their final byte without a call per parameter byte.
			i := 0
			for i < len(p) && p[i] >= 0x20 && p[i] < 0x40 {
				i++
			}
			p = p[i:]
			if len(p) > 0 {
				if al, hit := a.step(p[0]); hit {
					note(al)
				}
				p = p[1:]
			}
		default:
			if al, hit := a.step(p[0]); hit {
				note(al)
			}
			p = p[1:]
		}
	}
	return found, ok
}

// step advances over one byte outside ground text.
func (a *alertScanner) step(c byte) (alert, bool) {
	// CAN and SUB abort any sequence, as in a terminal.
	if c == 0x18 || c == 0x1a {
		a.state = alertGround
		return alert{}, false
	}
	switch a.state {
	case alertEscape:
		a.escape(c)
	case alertCSI:
		switch {
		case c == 0x1b:
			a.state = alertEscape
		case c == 0x07:
			// A C0 control inside CSI is executed, as a terminal does.
			return alert{kind: alertBell}, true
		case c >= 0x40 && c <= 0x7e:
			a.state = alertGround
		}
	case alertOSC:
		switch c {
		case 0x07: // BEL ends the OSC; it rings nothing
			a.state = alertGround
			return a.endOSC()
		case 0x1b:
			a.state = alertOSCEscape
		default:
			if a.n < oscMax {
				a.osc[a.n] = c
				a.n++
			}
		}
	case alertOSCEscape:
		if c == '\\' { // ST
			a.state = alertGround
			return a.endOSC()
		}
		// Not ST: the OSC was cut off and a new sequence begins.
		a.escape(c)
	case alertString:
		if c == 0x1b {
			a.state = alertStringEscape
		}
	case alertStringEscape:
		if c == '\\' {
			a.state = alertGround
		} else {
			a.escape(c)
		}
	}
	return alert{}, false
}

func (a *alertScanner) escape(c byte) {
	switch c {
	case '[':
		a.state = alertCSI
	case ']':
		a.state, a.n = alertOSC, 0
	case 'P', 'X', '^', '_':
		a.state = alertString
	case 0x1b:
		a.state = alertEscape
	default:
		if c >= 0x20 && c <= 0x2f {
			return // an intermediate byte: the final one follows
		}
		a.state = alertGround
	}
}

// endOSC reads the OSC just ended and reports it when it is a desktop
// notification.
func (a *alertScanner) endOSC() (alert, bool) {
	code, rest, _ := strings.Cut(string(a.osc[:a.n]), ";")
	switch code {
	case "9":
		// ConEmu and Windows Terminal use OSC 9;<number>;... for other
		// things (9;4 is a progress bar); a notification is free text.
		if sub, _, _ := strings.Cut(rest, ";"); isDigits(sub) {
			return alert{}, false
		}
		return alert{kind: alertNotification, text: cleanText(rest)}, true
	case "99":
		// kitty: OSC 99 ; metadata ; payload. p=? asks what the terminal
		// supports, p=alive and p=close manage earlier notifications.
		meta, payload, _ := strings.Cut(rest, ";")
		for kv := range strings.SplitSeq(meta, ":") {
			if kv == "p=?" || kv == "p=alive" || kv == "p=close" {
				return alert{}, false
			}
		}
		return alert{kind: alertNotification, text: cleanText(payload)}, true
	case "777":
		// urxvt: OSC 777 ; notify ; title ; body
		sub, msg, _ := strings.Cut(rest, ";")
		if sub != "notify" {
			return alert{}, false
		}
		title, body, _ := strings.Cut(msg, ";")
		return alert{kind: alertNotification, text: cleanText(strings.TrimSpace(title + ": " + body))}, true
	}
	return alert{}, false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// maxAlertText bounds the text of a notification shown to users.
const maxAlertText = 200

// cleanText makes program-supplied text safe to show: valid UTF-8, no
// control characters, at most maxAlertText bytes, cut at a character.
func cleanText(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return clip.String(strings.Trim(s, " :"), maxAlertText, "…")
}

// lastLine returns the last line of text in tail with the escape sequences
// taken out, trimmed; tail is the end of a session's output. Text after a
// carriage return replaces the line, as a spinner's next frame does on a
// terminal; a CR before a line feed changes nothing.
func lastLine(tail []byte) string {
	var (
		line  []byte
		lines [][]byte
		cr    bool // a CR came and no text since
		st    alertScanner
	)
	for _, c := range tail {
		if st.state != alertGround {
			st.step(c)
			continue
		}
		switch {
		case c == 0x1b:
			st.state = alertEscape
		case c == '\n':
			lines = append(lines, line)
			line, cr = nil, false
		case c == '\r':
			cr = true
		case c < 0x20 && c != '\t' || c == 0x7f:
		default:
			if cr {
				line, cr = line[:0], false
			}
			if c == '\t' {
				c = ' '
			}
			line = append(line, c)
		}
	}
	lines = append(lines, line)
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(string(lines[i])); s != "" {
			return cleanText(s)
		}
	}
	return ""
}

// asksQuestion reports whether a program whose output ends with tail, and
// which has gone quiet, seems to wait for an answer: its last line ends
// with a question mark.
func asksQuestion(tail []byte) (string, bool) {
	line := lastLine(tail)
	return line, strings.HasSuffix(line, "?")
}

// IsTerminalReport is isTerminalReport, for the WebSocket server: a
// terminal's own replies are not a user typing, so they take no size.
func IsTerminalReport(p []byte) bool { return isTerminalReport(p) }

// isTerminalReport reports whether p, written to a terminal, is nothing but
// replies a terminal (here xterm.js) sends on its own: focus in and out,
// cursor position and device attribute reports, OSC and DCS answers. Such
// input does not mean the user answered.
func isTerminalReport(p []byte) bool {
	if len(p) == 0 {
		return true
	}
	for len(p) > 0 {
		n := reportLen(p)
		if n == 0 {
			return false
		}
		p = p[n:]
	}
	return true
}

// reportLen returns the length of the terminal report p starts with, or 0.
func reportLen(p []byte) int {
	if len(p) < 3 || p[0] != 0x1b {
		return 0
	}
	switch p[1] {
	case '[':
		// ESC [ I and ESC [ O: focus. ESC [ row;col R: cursor position.
		// ESC [ ? ... c and ESC [ > ... c: device attributes. ESC [ ? ... $y:
		// mode reports.
		i := 2
		for i < len(p) && (p[i] >= '0' && p[i] <= '9' || p[i] == ';' || p[i] == '?' || p[i] == '>' || p[i] == '$') {
			i++
		}
		if i == len(p) {
			return 0
		}
		params := p[2:i]
		switch p[i] {
		case 'I', 'O':
			if len(params) == 0 {
				return i + 1
			}
		case 'R':
			if len(params) > 0 && params[0] != '?' && params[0] != '>' {
				return i + 1
			}
		case 'c':
			if len(params) > 0 && (params[0] == '?' || params[0] == '>') {
				return i + 1
			}
		case 'y':
			if bytes.HasSuffix(params, []byte("$")) {
				return i + 1
			}
		}
		return 0
	case ']', 'P':
		// An OSC answer (a colour query's) or a DCS one, to BEL or ST.
		for i := 2; i < len(p); i++ {
			if p[i] == 0x07 && p[1] == ']' {
				return i + 1
			}
			if p[i] == 0x1b && i+1 < len(p) && p[i+1] == '\\' {
				return i + 2
			}
		}
	}
	return 0
}
