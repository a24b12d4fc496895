package sessions

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestAlertScanner(t *testing.T) {
	tests := []struct {
		name string
		out  string
		want alert // zero: no alert
	}{
		{"plain text", "hello world\r\n", alert{}},
		{"bell", "done\a", alert{kind: alertBell}},
		{"bell after colours", "\x1b[1;32mok\x1b[0m\a", alert{kind: alertBell}},
		{"title ended by BEL is no bell", "\x1b]0;vim - main.go\a", alert{}},
		{"hyperlink ended by BEL is no bell", "\x1b]8;;https://x.test\alink\x1b]8;;\a", alert{}},
		{"title ended by ST", "\x1b]2;title\x1b\\", alert{}},
		{"OSC 9 with BEL", "\x1b]9;Build finished\a", alert{kind: alertNotification, text: "Build finished"}},
		{"OSC 9 with ST", "\x1b]9;Tests failed\x1b\\", alert{kind: alertNotification, text: "Tests failed"}},
		{"OSC 9;4 progress is no notification", "\x1b]9;4;1;50\a", alert{}},
		{"OSC 9;9 cwd is no notification", "\x1b]9;9;/home/x\a", alert{}},
		{"OSC 99 kitty", "\x1b]99;i=1:d=0;Approve the plan?\x1b\\", alert{kind: alertNotification, text: "Approve the plan?"}},
		{"OSC 99 query", "\x1b]99;i=1:p=?;\x1b\\", alert{}},
		{"OSC 777 notify", "\x1b]777;notify;Claude;Needs your permission\a", alert{kind: alertNotification, text: "Claude: Needs your permission"}},
		{"OSC 777 other", "\x1b]777;preexec\a", alert{}},
		{"BEL inside DCS is data", "\x1bPq#0\a#1\x1b\\", alert{}},
		{"BEL inside APC is data", "\x1b_G\a\x1b\\", alert{}},
		{"CAN aborts the OSC, then a bell", "\x1b]0;tit\x18\a", alert{kind: alertBell}},
		{"an OSC cut by ESC [ then a bell", "\x1b]0;t\x1b[0m\a", alert{kind: alertBell}},
		{"notification text is cleaned", "\x1b]9;a\x01b\a", alert{kind: alertNotification, text: "a b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Every way of splitting the output in two reads finds the
			// same thing: sequences straddle reads in real output.
			for cut := 0; cut <= len(tt.out); cut++ {
				var sc alertScanner
				got, ok1 := sc.scan([]byte(tt.out[:cut]))
				got2, ok2 := sc.scan([]byte(tt.out[cut:]))
				if !ok1 {
					got = got2
				}
				if (ok1 || ok2) != (tt.want.kind != 0) || got != tt.want {
					t.Errorf("split at %d: got %+v (found %v), want %+v", cut, got, ok1 || ok2, tt.want)
				}
			}
		})
	}
}

func TestAlertScannerLongOSC(t *testing.T) {
	var sc alertScanner
	long := "\x1b]9;" + strings.Repeat("x", 5000) + "\a"
	a, ok := sc.scan([]byte(long))
	if !ok || a.kind != alertNotification {
		t.Fatalf("long notification: got %+v %v", a, ok)
	}
	if len(a.text) > maxAlertText+len("…") {
		t.Errorf("text is %d bytes, want at most %d", len(a.text), maxAlertText)
	}
	// The scanner is back on the ground: a bell right after is found.
	if a, ok := sc.scan([]byte("\a")); !ok || a.kind != alertBell {
		t.Errorf("bell after a long OSC: got %+v %v", a, ok)
	}
}

func TestAsksQuestion(t *testing.T) {
	tests := []struct {
		tail string
		want bool
		line string
	}{
		{"Overwrite config.yaml? ", true, "Overwrite config.yaml?"},
		{"Proceed? [y/N]", false, "Proceed? [y/N]"},
		{"Do you want to continue?\r\n", true, "Do you want to continue?"},
		{"\x1b[1mShall I commit?\x1b[0m\r\n\r\n", true, "Shall I commit?"},
		{"what?\nno, done.\n", false, "no, done."},
		{"⠋ thinking\r⠙ thinking\r\x1b[KReady?", true, "Ready?"},
		{"\x1b]0;title?\a$ ", false, "$"},
		{"", false, ""},
	}
	for _, tt := range tests {
		line, got := asksQuestion([]byte(tt.tail))
		if got != tt.want || line != tt.line {
			t.Errorf("asksQuestion(%q) = %q, %v; want %q, %v", tt.tail, line, got, tt.line, tt.want)
		}
	}
}

func TestIsTerminalReport(t *testing.T) {
	reports := []string{
		"\x1b[I", "\x1b[O", "\x1b[12;40R", "\x1b[?1;2c", "\x1b[>0;276;0c",
		"\x1b]11;rgb:0000/0000/0000\x1b\\", "\x1b]10;rgb:ffff/ffff/ffff\a",
		"\x1bP1$r0m\x1b\\", "\x1b[?2004;1$y", "\x1b[I\x1b[12;1R",
	}
	for _, r := range reports {
		if !isTerminalReport([]byte(r)) {
			t.Errorf("%q: not taken for a terminal report", r)
		}
	}
	typed := []string{
		"y", "\r", "\x03", "\x1b", "\x1b[A", "\x1b[<0;10;5M", "\x1b[M !!", "\x1b[I y",
		"\x1b[200~pasted\x1b[201~", "\x1b[2~", "\x1b]11;unterminated",
	}
	for _, k := range typed {
		if isTerminalReport([]byte(k)) {
			t.Errorf("%q: taken for a terminal report, but a user typed it", k)
		}
	}
}

// FuzzAlertScanner checks the scanner against itself: however the output
// is cut into reads, it finds the same first alert and ends in the same
// state, and what it reports is bounded, clean text. Its seed corpus runs
// with the normal tests.
func FuzzAlertScanner(f *testing.F) {
	for _, seed := range []string{
		"plain\r\n", "ding\a", "\x1b]0;title\a", "\x1b]9;Build finished\a", "\x1b]9;4;1;50\x1b\\",
		"\x1b]99;i=1:p=?;\x1b\\", "\x1b]777;notify;T;B\a", "\x1bPq\a\x1b\\", "\x1b[31m\a\x1b[0m",
		"\x1b]0;t\x1b[0m\a", "\x1b]9;a\x18\a", "\x1b\x1b]9;x\a", "\x1b]9;\xff\xfe\a",
	} {
		f.Add([]byte(seed), uint16(1))
	}
	f.Fuzz(func(t *testing.T, out []byte, cut uint16) {
		var whole alertScanner
		want, wantOK := whole.scan(out)

		var split alertScanner
		c := int(cut) % (len(out) + 1)
		got, ok := split.scan(out[:c])
		got2, ok2 := split.scan(out[c:])
		if !ok {
			got = got2
		}
		if ok || ok2 {
			ok = true
		}
		if ok != wantOK || got != want {
			t.Fatalf("cut at %d: %+v %v, whole: %+v %v", c, got, ok, want, wantOK)
		}
		if split.state != whole.state {
			t.Fatalf("cut at %d: ends in state %d, whole in %d", c, split.state, whole.state)
		}
		if len(want.text) > maxAlertText+len("…") || !utf8.ValidString(want.text) ||
			strings.ContainsFunc(want.text, unicode.IsControl) {
			t.Fatalf("alert text %q is not bounded, clean UTF-8", want.text)
		}
		// lastLine and isTerminalReport take any bytes.
		if line := lastLine(out); strings.ContainsFunc(line, unicode.IsControl) || !utf8.ValidString(line) {
			t.Fatalf("lastLine(%q) = %q", out, line)
		}
		_ = isTerminalReport(out)
	})
}

// BenchmarkAlertScan measures the scanner on what the run's reader feeds
// it on every read: 32 KiB of plain text and of colourful output.
func BenchmarkAlertScan(b *testing.B) {
	inputs := map[string][]byte{
		"ascii": []byte(strings.Repeat("func (s *Session) Write(p []byte) error { return nil } // ok\n", 600)[:32<<10]),
		"ansi":  []byte(strings.Repeat("\x1b[32m✓\x1b[0m \x1b[1mPASS\x1b[0m ws/stream_test.go:42 (0.01s)\r\n", 600)[:32<<10]),
	}
	for _, name := range []string{"ascii", "ansi"} {
		in := inputs[name]
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(in)))
			var sc alertScanner
			for b.Loop() {
				sc.scan(in)
			}
		})
	}
}
