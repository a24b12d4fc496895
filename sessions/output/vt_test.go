package output

import (
	"strings"
	"testing"
)

// feedAll feeds each chunk in turn to a fresh vtState.
func feedAll(chunks ...string) vtState {
	var v vtState
	for _, c := range chunks {
		v.feed([]byte(c))
	}
	return v
}

func TestVTGround(t *testing.T) {
	for _, tc := range []struct {
		name   string
		in     string
		ground bool
	}{
		{"plain text", "hello\r\nworld", true},
		{"SGR", "a\x1b[1;31mred\x1b[0m", true},
		{"lone ESC", "a\x1b", false},
		{"unfinished CSI", "\x1b[1;3", false},
		{"unfinished private CSI", "\x1b[?10", false},
		{"C0 inside CSI does not end it", "\x1b[1\n;2", false},
		{"CSI with an intermediate", "\x1b[?1049$p", true},
		{"CSI with an intermediate, unfinished", "\x1b[?1049$", false},
		{"ESC with an intermediate", "\x1b(B", true},
		{"ESC with an intermediate, unfinished", "\x1b(", false},
		{"OSC unfinished", "\x1b]0;title", false},
		{"OSC with a newline, unfinished", "\x1b]0;ti\ntle", false},
		{"OSC ended by BEL", "\x1b]0;title\x07", true},
		{"OSC ended by ST", "\x1b]0;title\x1b\\", true},
		{"OSC, half an ST", "\x1b]0;title\x1b", false},
		{"DCS unfinished", "\x1bPq#0;2;0;0;0", false},
		{"DCS is not ended by BEL", "\x1bPq\x07", false},
		{"DCS ended by ST", "\x1bPq#0;2;0;0;0\x1b\\", true},
		{"SOS ended by ST", "\x1bXsos\x1b\\", true},
		{"PM ended by ST", "\x1b^pm\x1b\\", true},
		{"APC ended by ST", "\x1b_apc\n\x1b\\", true},
		{"APC is not ended by BEL", "\x1b_apc\x07", false},
		{"CAN aborts a CSI", "\x1b[?10\x18", true},
		{"SUB aborts a CSI", "\x1b[?10\x1a", true},
		{"CAN aborts an OSC", "\x1b]0;x\x18", true},
		{"CAN aborts a DCS", "\x1bPq\x18", true},
		{"CAN aborts a half ST", "\x1bPq\x1b\x18", true},
		{"CAN aborts an ESC", "\x1b\x18", true},
		{"a string ended by a new sequence", "\x1bPq\x1b[1", false},
	} {
		v := feedAll(tc.in)
		if got := v.isGround(); got != tc.ground {
			t.Errorf("%s: after %q isGround() = %v, want %v", tc.name, tc.in, got, tc.ground)
		}
		// Byte by byte must agree.
		var b vtState
		for i := range len(tc.in) {
			b.feed([]byte{tc.in[i]})
		}
		if b != v {
			t.Errorf("%s: byte-by-byte state %+v, whole %+v", tc.name, b, v)
		}
	}
}

func TestVTModes(t *testing.T) {
	for _, tc := range []struct {
		name   string
		chunks []string
		prefix string
	}{
		{"none", []string{"hello"}, ""},
		{"SGR sets no mode", []string{"\x1b[1;4;31m"}, ""},
		{"application cursor keys", []string{"\x1b[?1h"}, "\x1b[?1h"},
		{"application cursor keys reset", []string{"\x1b[?1h\x1b[?1l"}, ""},
		{"autowrap off", []string{"\x1b[?7l"}, "\x1b[?7l"},
		{"autowrap on is the default", []string{"\x1b[?7h"}, ""},
		{"cursor hidden", []string{"\x1b[?25l"}, "\x1b[?25l"},
		{"cursor shown again", []string{"\x1b[?25l\x1b[?25h"}, ""},
		{"alternate screen 47", []string{"\x1b[?47h"}, "\x1b[?1049h"},
		{"alternate screen 1047", []string{"\x1b[?1047h"}, "\x1b[?1049h"},
		{"alternate screen 1049", []string{"\x1b[?1049h"}, "\x1b[?1049h"},
		{"alternate screen left", []string{"\x1b[?1049h", "\x1b[?1049l"}, ""},
		{"alternate screen left by 47", []string{"\x1b[?1049h\x1b[?47l"}, ""},
		{"mouse 1000", []string{"\x1b[?1000h"}, "\x1b[?1000h"},
		{"mouse: last set wins", []string{"\x1b[?1000h\x1b[?1003h"}, "\x1b[?1003h"},
		{"mouse: last set wins, 1002", []string{"\x1b[?1003h\x1b[?1002h"}, "\x1b[?1002h"},
		{"mouse: resetting another keeps the active", []string{"\x1b[?1000h\x1b[?1003h\x1b[?1000l"}, "\x1b[?1003h"},
		{"mouse: resetting the active one", []string{"\x1b[?1000h\x1b[?1003h\x1b[?1003l"}, ""},
		{"mouse encoding SGR", []string{"\x1b[?1006h"}, "\x1b[?1006h"},
		{"mouse encoding reset", []string{"\x1b[?1006h\x1b[?1006l"}, ""},
		{"focus events", []string{"\x1b[?1004h"}, "\x1b[?1004h"},
		{"bracketed paste", []string{"\x1b[?2004h"}, "\x1b[?2004h"},
		{"application keypad", []string{"\x1b="}, "\x1b="},
		{"normal keypad", []string{"\x1b=\x1b>"}, ""},
		{"untracked private mode", []string{"\x1b[?12h\x1b[?1048h"}, ""},
		{"ANSI (not private) mode 25 is not DECTCEM", []string{"\x1b[25l\x1b[4h"}, ""},
		{"other private marker", []string{"\x1b[>1049h"}, ""},
		{"second private marker", []string{"\x1b[??1049h"}, ""},
		{"marker after a parameter", []string{"\x1b[1?1049h"}, ""},
		{"intermediate byte", []string{"\x1b[?1049$h"}, ""},
		{"parameters split across feeds", []string{"\x1b[?10", "49h"}, "\x1b[?1049h"},
		{"split at every point", []string{"\x1b", "[", "?", "2", "0", "0", "4", "h"}, "\x1b[?2004h"},
		{"several parameters set", []string{"\x1b[?1049;2004h"}, "\x1b[?1049h\x1b[?2004h"},
		{"several parameters reset", []string{"\x1b[?1049h", "\x1b[?1049;25l"}, "\x1b[?25l"},
		{"empty parameters are 0", []string{"\x1b[?;;25l"}, "\x1b[?25l"},
		{"colon separates too", []string{"\x1b[?1:25l"}, "\x1b[?25l"},
		{"parameters past the 16th are ignored", []string{"\x1b[?1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;2004;25l"}, "\x1b[?7l"},
		{"huge parameter", []string{"\x1b[?99999999999999999999h"}, ""},
		{"CAN cancels before the final byte", []string{"\x1b[?1049\x18h"}, ""},
		{"ESC restarts a CSI", []string{"\x1b[?25\x1b[?1049h"}, "\x1b[?1049h"},
		{"mode-like text inside an OSC", []string{"\x1b]0;[?1049h"}, ""},
		{"ESC inside an OSC ends it", []string{"\x1b]0;\x1b[?1049h"}, "\x1b[?1049h"},
		{"ESC inside a DCS ends it", []string{"\x1bP\x1b[?2004h"}, "\x1b[?2004h"},
		{"mode sequence after an OSC", []string{"\x1b]0;t\x07\x1b[?1049h"}, "\x1b[?1049h"},
		{"mode sequence after an ST", []string{"\x1b]0;t\x1b\\\x1b[?1049h"}, "\x1b[?1049h"},
		{"RIS clears everything", []string{"\x1b[?1049h\x1b[?25l\x1b[?7l\x1b[?1h\x1b=\x1b[?1002h\x1b[?1006h\x1b[?1004h\x1b[?2004h", "\x1bc"}, ""},
		{"modes after RIS", []string{"\x1b[?2004h\x1bc\x1b[?25l"}, "\x1b[?25l"},
		// DECSTR as xterm.js has it: the keys, focus and paste modes,
		// the cursor and autowrap go back to their defaults; the screen
		// and the mouse stay.
		{"DECSTR resets keys, focus, paste, cursor, autowrap", []string{"\x1b[?1h\x1b=\x1b[?1004h\x1b[?2004h\x1b[?25l\x1b[?7l", "\x1b[!p"}, ""},
		{"DECSTR keeps the screen and the mouse", []string{"\x1b[?1049h\x1b[?1002h\x1b[?1006h\x1b[?1004h\x1b[!p"}, "\x1b[?1049h\x1b[?1002h\x1b[?1006h"},
		{"DECSTR split across feeds", []string{"\x1b[?1004h\x1b[", "!", "p"}, ""},
		{"DECSTR with a parameter", []string{"\x1b[?2004h\x1b[0!p"}, ""},
		{"modes after DECSTR", []string{"\x1b[?2004h\x1b[!p\x1b[?1004h"}, "\x1b[?1004h"},
		{"other final after !", []string{"\x1b[?1004h\x1b[!q"}, "\x1b[?1004h"},
		{"private marker before !p", []string{"\x1b[?1004h\x1b[?!p"}, "\x1b[?1004h"},
		{"two intermediates before p", []string{"\x1b[?1004h\x1b[!!p"}, "\x1b[?1004h"},
		{"DECRQM is not DECSTR", []string{"\x1b[?1004h\x1b[?1004$p"}, "\x1b[?1004h"},
		{
			"every mode, in prefix order",
			[]string{"\x1b[?2004h\x1b[?1004h\x1b[?1006h\x1b[?1002h\x1b=\x1b[?1h\x1b[?7l\x1b[?25l\x1b[?1049h"},
			"\x1b[?1049h\x1b[?25l\x1b[?7l\x1b[?1h\x1b=\x1b[?1002h\x1b[?1006h\x1b[?1004h\x1b[?2004h",
		},
	} {
		v := feedAll(tc.chunks...)
		if got := string(v.modePrefix()); got != tc.prefix {
			t.Errorf("%s: after %q modePrefix() = %q, want %q", tc.name, tc.chunks, got, tc.prefix)
		}
	}
}

// TestVTStringEndedByNewEscape checks the DEC parser's rule that ESC inside
// a string ends it and starts a new sequence, even when the next byte is ESC
// again: an OSC ended by "ESC ESC [" is followed by a CSI.
func TestVTStringEndedByNewEscape(t *testing.T) {
	for _, in := range []string{
		"\x1b]0;title\x1b\x1b[?1049h",
		"\x1bPq\x1b\x1b[?1049h",
	} {
		v := feedAll(in)
		if got, want := string(v.modePrefix()), "\x1b[?1049h"; got != want || !v.isGround() {
			t.Errorf("after %q: modePrefix() = %q, isGround() = %v; want %q, true", in, got, v.isGround(), want)
		}
	}
}

func TestVTModePrefixIsNilWhenNothingIsSet(t *testing.T) {
	v := feedAll("\x1b[?1049h\x1b[?1049l")
	if p := v.modePrefix(); p != nil {
		t.Errorf("modePrefix() = %q, want nil", p)
	}
}

// FuzzVTFeed checks that the state after a stream does not depend on how it
// was split, and that the mode prefix of any state takes a reset terminal
// into exactly that state's modes.
func FuzzVTFeed(f *testing.F) {
	f.Add([]byte("\x1b[?1049h\x1b[?25lhello\n"), uint(5))
	f.Add([]byte("\x1b]0;title\nmore\x07text"), uint(7))
	f.Add([]byte("\x1bPq#0;2\x1b\\\x1b[?1000;1006h"), uint(12))
	f.Add([]byte("\x1b[?1;2;3;4;5;6;7;8;9;10;11;12;13;14;15;16;17;2004h"), uint(30))
	f.Add([]byte("\x1b=\x1b[?2004h\x1bc\x1b[?7l\x18\x1b[?10"), uint(3))
	f.Add([]byte("\xc3\xa9\x1b]8;;http://x\x1b\\link\x1b]8;;\x1b\\"), uint(2))
	f.Fuzz(func(t *testing.T, data []byte, split uint) {
		k := int(split % uint(len(data)+1))
		var whole, halves, bytewise vtState
		whole.feed(data)
		halves.feed(data[:k])
		halves.feed(data[k:])
		for i := range data {
			bytewise.feed(data[i : i+1])
		}
		if halves != whole || bytewise != whole {
			t.Fatalf("%q split at %d: whole %+v, halves %+v, byte by byte %+v", data, k, whole, halves, bytewise)
		}

		// A new run after this one starts on a clean terminal.
		var last byte
		if len(data) > 0 {
			last = data[len(data)-1]
		}
		after := whole
		after.feed(whole.runReset(last))
		if !after.isGround() || after.modes != (vtModes{}) || after.run != (vtRunModes{}) {
			t.Fatalf("%q then its run reset %q: modes %+v %+v (ground %v), want all reset", data, whole.runReset(last), after.modes, after.run, after.isGround())
		}

		var replay vtState
		replay.feed(whole.modePrefix())
		if !replay.isGround() || replay.modes != whole.modes {
			t.Fatalf("%q: prefix %q gives modes %+v (ground %v), want %+v", data, whole.modePrefix(), replay.modes, replay.isGround(), whole.modes)
		}
	})
}

// TestRunReset: the reset a new run starts with turns off what the last
// run left on, and only that, keeps the main screen, and starts a new line
// when the last run stopped mid-line.
func TestRunReset(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string // in the reset, in this order
		not       []string
	}{
		{"nothing on, ended at a line", "$ ls\r\nfile\r\n", []string{RunResetBase}, []string{"\x1b[?", "\r\n"}},
		{"nothing on, ended mid-line", "$ ", []string{RunResetBase, "\r\n"}, []string{"\x1b[?"}},
		{"vim killed", "\x1b[?1049h\x1b[?1h\x1b=\x1b[?25l\x1b[?1000h\x1b[?1006h\x1b[?1004h\x1b[?2004h\x1b[1;23r\x1b[38;5;1mtext",
			[]string{RunResetBase, "\x1b[?1049l", "\x1b7\x1b[r\x1b8", "\x1b[?25h", "\x1b[?1l", "\x1b>", "\x1b[?1000l", "\x1b[?1006l", "\x1b[?1004l", "\x1b[?2004l"},
			[]string{"\r\n", "\x1b[?6l"}},
		{"kitty keys, sync, insert, origin", "\x1b[>1u\x1b[?2026h\x1b[4h\x1b[?6h\x1b[>4;2m", []string{"\x1b[?6l", "\x1b[4l", "\x1b[?2026l", "\x1b[=0;1u", "\x1b[>4;0m"}, nil},
		{"killed inside a sequence", "\x1b]0;tit", []string{"\x18"}, nil},
		{"soft reset before the kill", "\x1b[?6h\x1b[4h\x1b[?2026h\x1b[1;9r\x1b[?1004h\x1b[!p\n", []string{RunResetBase}, []string{"\x1b[?", "\x1b[4l", "\x1b[r"}},
		{"modes turned off again", "\x1b[?1049h\x1b[?1000h\x1b[?1049l\x1b[?1000l\n", []string{RunResetBase}, []string{"\x1b[?"}},
	} {
		var v vtState
		v.feed([]byte(tc.out))
		got := string(v.runReset(tc.out[len(tc.out)-1]))
		at := 0
		for _, w := range tc.want {
			i := strings.Index(got[at:], w)
			if i < 0 {
				t.Errorf("%s: reset %q lacks %q (in order)", tc.name, got, w)
				break
			}
			at += i + len(w)
		}
		for _, n := range tc.not {
			if strings.Contains(got, n) {
				t.Errorf("%s: reset %q has %q", tc.name, got, n)
			}
		}
	}
}
