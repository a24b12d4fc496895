package output

import (
	"bytes"
	"strconv"
)

// vtState follows a terminal output stream far enough to know two things: whether
// a position is inside an escape sequence, and which terminal modes a
// screen replayed from that position must re-enter. It is a small subset of
// the DEC/xterm parser (see vt100.net's state diagram): it recognises the
// shapes of ESC, CSI, OSC and the other string sequences, and records the
// DEC private modes that change how a screen looks or what keys send.
//
// The zero value is a terminal just reset. vtState is a value type so a copy
// can scan ahead without moving the original.
type vtState struct {
	state vtParse
	// params holds the CSI's numeric parameters and nparams counts them;
	// parameters beyond the array are ignored.
	params  [16]int
	nparams int
	// prefix is the CSI's private marker ('?', '>', '=' or '<'), or 0.
	prefix byte
	// inter is the CSI's intermediate byte, or 0; only one is kept.
	inter byte
	modes vtModes
	run   vtRunModes
}

type vtParse uint8

const (
	vtGround vtParse = iota
	vtEscape
	vtEscapeIntermediate
	vtCSI
	vtCSIIntermediate // a CSI after its intermediate byte
	vtCSIIgnore
	vtOSC    // ESC ]: ends at BEL or ST
	vtString // ESC P, X, ^ or _: ends at ST
	vtStringEscape
)

// vtModes is the set of tracked terminal modes away from their defaults.
type vtModes struct {
	altScreen      bool
	cursorHidden   bool
	appCursorKeys  bool // DECCKM, mode 1
	appKeypad      bool // DECKPAM, ESC =
	bracketedPaste bool // 2004
	focusEvents    bool // 1004
	mouseTracking  int  // 0, or one of 9, 1000, 1002, 1003: the last one set wins
	mouseEncoding  int  // 0, or one of 1005, 1006, 1015, 1016
	noAutowrap     bool // DECAWM reset, mode 7
}

// vtRunModes are modes a replay need not re-enter (the replayed bytes set
// them again where they matter) but a new run must not inherit.
type vtRunModes struct {
	originMode      bool // DECOM, mode 6
	scrollRegion    bool // DECSTBM with margins
	insertMode      bool // IRM, CSI 4 h
	syncOutput      bool // mode 2026
	kittyKeyboard   bool // CSI > flags u, CSI = flags u
	modifyOtherKeys bool // CSI > 4 ; n m
}

// isGround reports whether the parser is outside every escape sequence.
func (v *vtState) isGround() bool { return v.state == vtGround }

// feed advances the state over p.
func (v *vtState) feed(p []byte) {
	for len(p) > 0 {
		if v.state == vtGround {
			// Most output is text: skip to the next ESC in one step.
			i := bytes.IndexByte(p, 0x1b)
			if i < 0 {
				return
			}
			p = p[i+1:]
			v.state = vtEscape
			continue
		}
		v.step(p[0])
		p = p[1:]
	}
}

// feedToRest advances the state over the longest start of p that ends
// outside any escape sequence, and returns its length.
func (v *vtState) feedToRest(p []byte) int {
	end := *v
	end.feed(p)
	if end.isGround() {
		*v = end
		return len(p)
	}
	// Rare: the output stops inside a sequence. Find where the parser
	// last rested, byte by byte.
	rest, at := *v, 0
	for i := range p {
		v.feed(p[i : i+1])
		if v.isGround() {
			rest, at = *v, i+1
		}
	}
	*v = rest
	return at
}

func (v *vtState) step(c byte) {
	// CAN and SUB abort any sequence; ESC starts a new one, except inside
	// strings, where it may be the first half of ST.
	switch {
	case c == 0x18 || c == 0x1a:
		v.state = vtGround
		return
	case c == 0x1b && v.state != vtOSC && v.state != vtString && v.state != vtStringEscape:
		v.state = vtEscape
		return
	}
	switch v.state {
	case vtEscape:
		v.escape(c)
	case vtEscapeIntermediate:
		if c >= 0x30 && c <= 0x7e {
			v.state = vtGround
		}
	case vtCSI:
		v.csi(c)
	case vtCSIIntermediate:
		switch {
		case c >= 0x40 && c <= 0x7e:
			v.final(c)
			v.state = vtGround
		case c >= 0x20 && c <= 0x7e: // a second intermediate, or a parameter after one
			v.state = vtCSIIgnore
		}
	case vtCSIIgnore:
		if c >= 0x40 && c <= 0x7e {
			v.state = vtGround
		}
	case vtOSC:
		switch c {
		case 0x07:
			v.state = vtGround
		case 0x1b:
			v.state = vtStringEscape
		}
	case vtString:
		if c == 0x1b {
			v.state = vtStringEscape
		}
	case vtStringEscape:
		switch c {
		case '\\':
			v.state = vtGround
		case 0x1b:
			v.state = vtEscape // the string ended; this ESC starts a new sequence
		default:
			// Not ST: the string ended and a new escape began.
			v.state = vtEscape
			v.escape(c)
		}
	}
}

func (v *vtState) escape(c byte) {
	switch {
	case c == '[':
		v.state, v.prefix, v.inter, v.nparams, v.params[0] = vtCSI, 0, 0, 0, 0
	case c == ']':
		v.state = vtOSC
	case c == 'P' || c == 'X' || c == '^' || c == '_':
		v.state = vtString
	case c >= 0x20 && c <= 0x2f:
		v.state = vtEscapeIntermediate
	case c == 'c': // RIS: full reset
		v.modes, v.run = vtModes{}, vtRunModes{}
		v.state = vtGround
	case c == '=':
		v.modes.appKeypad = true
		v.state = vtGround
	case c == '>':
		v.modes.appKeypad = false
		v.state = vtGround
	default:
		v.state = vtGround
	}
}

func (v *vtState) csi(c byte) {
	switch {
	case c >= '0' && c <= '9':
		if v.nparams == 0 {
			v.nparams = 1
		}
		if i := v.nparams - 1; i < len(v.params) && v.params[i] < 100000 {
			v.params[i] = v.params[i]*10 + int(c-'0')
		}
	case c == ';' || c == ':':
		if v.nparams == 0 {
			v.nparams = 1
		}
		if v.nparams < len(v.params) {
			v.params[v.nparams] = 0
		}
		v.nparams++
	case c >= 0x3c && c <= 0x3f && v.nparams == 0 && v.prefix == 0:
		v.prefix = c // one of < = > ?
	case c >= 0x3c && c <= 0x3f: // a marker after parameters: malformed
		v.state = vtCSIIgnore
	case c >= 0x20 && c <= 0x2f:
		v.inter = c
		v.state = vtCSIIntermediate
	case c >= 0x40 && c <= 0x7e:
		v.final(c)
		v.state = vtGround
	default:
		// C0 controls inside CSI are executed by a terminal and do not
		// end the sequence.
	}
}

// final acts on a complete CSI sequence ending in c.
func (v *vtState) final(c byte) {
	n := min(v.nparams, len(v.params))
	if v.inter != 0 {
		if v.inter == '!' && c == 'p' && v.prefix == 0 {
			v.softReset()
		}
		return
	}
	switch {
	case v.prefix == '?' && (c == 'h' || c == 'l'):
		for _, mode := range v.params[:n] {
			v.modes.set(mode, c == 'h')
			switch mode {
			case 6:
				v.run.originMode = c == 'h'
			case 2026:
				v.run.syncOutput = c == 'h'
			}
		}
	case v.prefix == 0 && (c == 'h' || c == 'l'):
		for _, mode := range v.params[:n] {
			if mode == 4 {
				v.run.insertMode = c == 'h'
			}
		}
	case v.prefix == 0 && c == 'r':
		// DECSTBM: none, or a top of 1 alone, is the whole screen. A
		// bottom margin cannot be told from the screen's height here,
		// so any explicit one counts as a region.
		v.run.scrollRegion = n > 1 && v.params[1] != 0 || n == 1 && v.params[0] > 1
	case (v.prefix == '>' || v.prefix == '=') && c == 'u':
		// Pushing or setting flags; popping may leave some, so only a
		// reset would tell for sure: any use counts.
		v.run.kittyKeyboard = true
	case v.prefix == '>' && c == 'm' && n >= 1 && v.params[0] == 4:
		v.run.modifyOtherKeys = n >= 2 && v.params[1] != 0
	}
}

// softReset acts on DECSTR (CSI ! p) as xterm.js does, since a replay must
// leave a client's xterm.js where the program's output left it: the keys,
// focus and paste modes, the cursor, autowrap, origin, margins, insert and
// synchronized output go back to their defaults; the screen and the mouse
// modes stay. (xterm itself keeps focus reporting and bracketed paste.)
func (v *vtState) softReset() {
	v.modes = vtModes{
		altScreen:     v.modes.altScreen,
		mouseTracking: v.modes.mouseTracking,
		mouseEncoding: v.modes.mouseEncoding,
	}
	v.run.originMode, v.run.scrollRegion, v.run.insertMode, v.run.syncOutput = false, false, false, false
}

func (m *vtModes) set(mode int, on bool) {
	switch mode {
	case 1:
		m.appCursorKeys = on
	case 7:
		m.noAutowrap = !on
	case 25:
		m.cursorHidden = !on
	case 47, 1047, 1049:
		m.altScreen = on
	case 9, 1000, 1002, 1003:
		switch {
		case on:
			m.mouseTracking = mode
		case m.mouseTracking == mode:
			m.mouseTracking = 0
		}
	case 1005, 1006, 1015, 1016:
		switch {
		case on:
			m.mouseEncoding = mode
		case m.mouseEncoding == mode:
			m.mouseEncoding = 0
		}
	case 1004:
		m.focusEvents = on
	case 2004:
		m.bracketedPaste = on
	}
}

// RunResetBase begins every run after a session's first in its output
// stream: CAN ends any escape sequence or string the last run left open,
// then attributes, the G0 character set and shift-in go back to their
// defaults (they are not tracked, and cheap to reset). What follows it
// turns off the modes the last run left on.
const RunResetBase = "\x18\x1b[0m\x1b(B\x0f"

// runReset returns what puts a terminal left by a dead run in any state
// back to the defaults a new run expects, keeping what the old run left on
// the main screen: it aborts an unfinished sequence, leaves the alternate
// screen (restoring the cursor, as the program would have on exit),
// resets attributes and character sets, turns off every tracked input,
// mouse and display mode the run left on, and starts a new line unless
// the last run ended at one (lastByte is its last byte, 0 for none).
func (v *vtState) runReset(lastByte byte) []byte {
	m, r := v.modes, v.run
	b := []byte(RunResetBase)
	if m.altScreen {
		b = append(b, "\x1b[?1049l"...)
	}
	if r.originMode {
		b = append(b, "\x1b[?6l"...) // homes the cursor: unavoidable
	}
	if r.scrollRegion {
		b = append(b, "\x1b7\x1b[r\x1b8"...) // DECSTBM homes the cursor; keep it
	}
	if r.insertMode {
		b = append(b, "\x1b[4l"...)
	}
	if r.syncOutput {
		b = append(b, "\x1b[?2026l"...)
	}
	if r.kittyKeyboard {
		b = append(b, "\x1b[=0;1u"...)
	}
	if r.modifyOtherKeys {
		b = append(b, "\x1b[>4;0m"...)
	}
	// The modes a replay re-enters, turned off: what modePrefix would
	// turn on, in reverse.
	if m.cursorHidden {
		b = append(b, "\x1b[?25h"...)
	}
	if m.noAutowrap {
		b = append(b, "\x1b[?7h"...)
	}
	if m.appCursorKeys {
		b = append(b, "\x1b[?1l"...)
	}
	if m.appKeypad {
		b = append(b, "\x1b>"...)
	}
	// Only the last mouse mode set is tracked, but a program may have set
	// several (xterm keeps each): all of them off.
	if m.mouseTracking != 0 {
		b = append(b, "\x1b[?9l\x1b[?1000l\x1b[?1002l\x1b[?1003l"...)
	}
	if m.mouseEncoding != 0 {
		b = append(b, "\x1b[?1005l\x1b[?1006l\x1b[?1015l\x1b[?1016l"...)
	}
	if m.focusEvents {
		b = append(b, "\x1b[?1004l"...)
	}
	if m.bracketedPaste {
		b = append(b, "\x1b[?2004l"...)
	}
	if !m.altScreen && lastByte != 0 && lastByte != '\n' {
		b = append(b, "\r\n"...)
	}
	return b
}

// modePrefix returns the sequences that take a freshly reset terminal into
// the tracked modes. The alternate screen comes first, since the other
// modes are set on whichever screen is showing.
func (v *vtState) modePrefix() []byte {
	m := v.modes
	var b []byte
	setMode := func(mode int, on bool) {
		b = append(b, "\x1b[?"...)
		b = strconv.AppendInt(b, int64(mode), 10)
		if on {
			b = append(b, 'h')
		} else {
			b = append(b, 'l')
		}
	}
	if m.altScreen {
		setMode(1049, true)
	}
	if m.cursorHidden {
		setMode(25, false)
	}
	if m.noAutowrap {
		setMode(7, false)
	}
	if m.appCursorKeys {
		setMode(1, true)
	}
	if m.appKeypad {
		b = append(b, "\x1b="...)
	}
	if m.mouseTracking != 0 {
		setMode(m.mouseTracking, true)
	}
	if m.mouseEncoding != 0 {
		setMode(m.mouseEncoding, true)
	}
	if m.focusEvents {
		setMode(1004, true)
	}
	if m.bracketedPaste {
		setMode(2004, true)
	}
	return b
}
