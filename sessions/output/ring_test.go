package output

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strconv"
	"testing"
	"unicode/utf8"
)

// readRing copies everything the ring holds, from its oldest byte.
func readRing(t *testing.T, r *Ring) (uint64, string) {
	t.Helper()
	st := r.State()
	p := make([]byte, st.End-st.Start+1)
	n, err := r.ReadAt(p, st.Start)
	if err != nil {
		t.Fatalf("readAt(%d): %v", st.Start, err)
	}
	return st.Start, string(p[:n])
}

// isClosed reports whether ch is closed, without waiting.
func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

func TestRingReadsAcrossWraparound(t *testing.T) {
	r := NewRing(8)
	r.Write([]byte("abcde"))
	r.Write([]byte("fghij")) // offsets 0..9; the ring holds 2..9

	if st := r.State(); st.Start != 2 || st.End != 10 {
		t.Fatalf("state = [%d, %d), want [2, 10)", st.Start, st.End)
	}
	p := make([]byte, 16)
	for _, tc := range []struct {
		off  uint64
		size int
		want string
	}{
		{off: 2, size: 16, want: "cdefghij"},
		{off: 7, size: 16, want: "hij"}, // starts at buf[7], wraps to buf[0]
		{off: 6, size: 3, want: "ghi"},  // a short p stops before the end
		{off: 9, size: 16, want: "j"},
		{off: 10, size: 16, want: ""}, // at the end: nothing yet
		{off: 11, size: 16, want: ""}, // past the end: nothing yet
	} {
		n, err := r.ReadAt(p[:tc.size], tc.off)
		if err != nil || string(p[:n]) != tc.want {
			t.Errorf("readAt(len %d, %d) = %q, %v; want %q, nil", tc.size, tc.off, p[:n], err, tc.want)
		}
	}
	for _, off := range []uint64{0, 1} {
		if n, err := r.ReadAt(p, off); n != 0 || !errors.Is(err, ErrOverrun) {
			t.Errorf("readAt(%d) of an evicted offset = %d, %v; want 0, ErrOverrun", off, n, err)
		}
	}

	// Offsets far beyond the ring's size keep mapping to the right bytes.
	for i := range 100 {
		r.Write([]byte{byte('A' + i%26), byte('a' + i%26), '0' + byte(i%10)})
	}
	start, got := readRing(t, r)
	if want := "t7Uu8Vv9"; start != 302 || got != want {
		t.Errorf("after 100 more writes: ring holds %q from %d, want %q from 302", got, start, want)
	}
}

func TestRingWriteLargerThanRing(t *testing.T) {
	for _, prefix := range []string{"", "12345", "12345678", "123456789abc"} {
		r := NewRing(8)
		r.Write([]byte(prefix))
		r.Write([]byte("ABCDEFGHIJKLMNOPQRST"))
		total := uint64(len(prefix) + 20)
		start, got := readRing(t, r)
		if start != total-8 || got != "MNOPQRST" {
			t.Errorf("prefix %q: ring holds %q from %d, want %q from %d", prefix, got, start, "MNOPQRST", total-8)
		}
		if st := r.State(); st.End != total {
			t.Errorf("prefix %q: end = %d, want %d", prefix, st.End, total)
		}
	}
}

// TestRingKeepsTheLastBytes checks, for random chunked writes, that the ring
// always holds exactly the last len(buf) bytes of everything written.
func TestRingKeepsTheLastBytes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, size := range []int{1, 2, 7, 64, 1024} {
		r := NewRing(size)
		var all []byte
		for range 300 {
			chunk := make([]byte, rng.IntN(3*size+2))
			for i := range chunk {
				chunk[i] = byte(rng.Uint32())
			}
			r.Write(chunk)
			all = append(all, chunk...)

			wantStart := uint64(max(0, len(all)-size))
			st := r.State()
			if st.Start != wantStart || st.End != uint64(len(all)) {
				t.Fatalf("size %d: state [%d, %d), want [%d, %d)", size, st.Start, st.End, wantStart, len(all))
			}
			// Read the window back in pieces of a random size.
			var got []byte
			p := make([]byte, 1+rng.IntN(size+1))
			for off := st.Start; off < st.End; {
				n, err := r.ReadAt(p, off)
				if err != nil || n == 0 {
					t.Fatalf("size %d: readAt(%d) = %d, %v", size, off, n, err)
				}
				got = append(got, p[:n]...)
				off += uint64(n)
			}
			if !bytes.Equal(got, all[wantStart:]) {
				t.Fatalf("size %d: read back %x, want %x", size, got, all[wantStart:])
			}
			if wantStart > 0 {
				if _, err := r.ReadAt(p, wantStart-1); !errors.Is(err, ErrOverrun) {
					t.Fatalf("size %d: readAt(start-1) error = %v, want ErrOverrun", size, err)
				}
			}
		}
	}
}

func TestRingWaitClosesAtTarget(t *testing.T) {
	r := NewRing(16)
	r.Write([]byte("abcde"))

	ch, cancel := r.Wait(10, 0)
	defer cancel()
	if isClosed(ch) {
		t.Fatal("wait(10) closed at end 5")
	}
	r.Write([]byte("fghi"))
	if isClosed(ch) {
		t.Fatal("wait(10) closed at end 9")
	}
	r.Write([]byte("j"))
	if !isClosed(ch) {
		t.Fatal("wait(10) still open at end 10")
	}
	if len(r.waiters) != 0 {
		t.Errorf("%d waiters left after the write that reached them all, want 0", len(r.waiters))
	}

	// A target already reached, or a stale epoch, closes at once.
	reached, cancel2 := r.Wait(10, 0)
	defer cancel2()
	stale, cancel3 := r.Wait(100, 1)
	defer cancel3()
	if !isClosed(reached) || !isClosed(stale) {
		t.Errorf("wait(10, 0) at end 10 closed: %v; wait(100, 1) at epoch 0 closed: %v; want both true", isClosed(reached), isClosed(stale))
	}
	open, cancel4 := r.Wait(11, 0)
	if isClosed(open) {
		t.Error("wait(11, 0) at end 10 and epoch 0 closed at once")
	}
	cancel4()
	if len(r.waiters) != 0 {
		t.Errorf("%d waiters left after every wait was withdrawn or closed, want 0", len(r.waiters))
	}
}

func TestRingWaitCancelRemovesWaiter(t *testing.T) {
	r := NewRing(16)
	a, cancelA := r.Wait(5, 0)
	b, cancelB := r.Wait(6, 0)
	c, cancelC := r.Wait(20, 0)
	defer cancelA()
	defer cancelC()

	cancelB()
	cancelB() // twice is harmless
	if len(r.waiters) != 2 || r.waiters[0].ch != a || r.waiters[1].ch != c {
		t.Fatalf("after withdrawing the second wait, waiters = %v, want the first and third", r.waiters)
	}

	r.Write([]byte("123456"))
	if !isClosed(a) || isClosed(b) || isClosed(c) {
		t.Errorf("at end 6: a closed %v, withdrawn b closed %v, c closed %v; want true, false, false", isClosed(a), isClosed(b), isClosed(c))
	}
	cancelA() // after the channel closed: harmless
	if len(r.waiters) != 1 || r.waiters[0].ch != c {
		t.Errorf("waiters = %v, want only the one for 20", r.waiters)
	}
	cancelC()
	if len(r.waiters) != 0 {
		t.Errorf("%d waiters left after all were withdrawn, want 0", len(r.waiters))
	}
}

func TestRingUpdateWakesAllAndBumpsEpoch(t *testing.T) {
	r := NewRing(16)
	r.Write([]byte("abc"))
	var chans []<-chan struct{}
	for _, target := range []uint64{10, 100, 1000} {
		ch, cancel := r.Wait(target, 0)
		defer cancel()
		chans = append(chans, ch)
	}

	r.Update(func(st *State) { st.RunEnded, st.Exit = true, ExitStatus{Code: 3} })

	for i, ch := range chans {
		if !isClosed(ch) {
			t.Errorf("waiter %d still open after update", i)
		}
	}
	if len(r.waiters) != 0 {
		t.Errorf("%d waiters left after update, want 0", len(r.waiters))
	}
	want := State{Start: 0, End: 3, Epoch: 1, RunEnded: true, Exit: ExitStatus{Code: 3}}
	if st := r.State(); st != want {
		t.Errorf("state = %+v, want %+v", st, want)
	}

	r.Update(func(st *State) { st.Closed = true })
	want.Epoch, want.Closed = 2, true
	if st := r.State(); st != want {
		t.Errorf("after a second update, state = %+v, want %+v", st, want)
	}
	ch, cancel := r.Wait(100, 2)
	defer cancel()
	if isClosed(ch) {
		t.Error("wait at the current epoch closed at once")
	}
}

func TestRingReplayStartWithNothingEvicted(t *testing.T) {
	for _, data := range []string{"", "ab\ncd", "\x1b[?1049h", "0123456789abcdef"} {
		r := NewRing(16)
		r.Write([]byte(data))
		start, prefix, _ := r.ReplayStart(0)
		if start != 0 || prefix != nil {
			t.Errorf("after writing %q to a 16-byte ring: replayStart = %d, %q; want 0, nil", data, start, prefix)
		}
	}
}

func TestRingReplayStart(t *testing.T) {
	for _, tc := range []struct {
		name string
		// evicted is written first and pushed out by kept, which fills the
		// ring exactly.
		evicted, kept string
		// replay is the tail of kept a replay must send; prefix the modes
		// it must re-enter first.
		replay, prefix string
	}{
		{
			name:    "after the first newline",
			evicted: "xxxx", kept: "abc\ndef\nghi",
			replay: "def\nghi",
		},
		{
			name:    "mid-character start",
			evicted: "\xc3", kept: "\xa9t\xc3\xaa\nnext",
			replay: "next",
		},
		{
			name:    "CSI straddling the eviction point",
			evicted: "hello\x1b[?10", kept: "49h\nrest",
			replay: "rest", prefix: "\x1b[?1049h",
		},
		{
			name:    "newline inside an OSC is not a line boundary",
			evicted: "\x1b]0;ti", kept: "tle\nstill title\x07after\nline2",
			replay: "line2",
		},
		{
			name:    "newline inside an OSC ended by ST",
			evicted: "\x1b]2;a", kept: "\nb\x1b\\c\nd",
			replay: "d",
		},
		{
			name:    "newline inside a CSI is not a line boundary",
			evicted: "ab\x1b[1", kept: "\n;2Hx\ny",
			replay: "y",
		},
		{
			name:    "newline inside a DCS; BEL does not end it",
			evicted: "\x1bP", kept: "1$r\n\x07q\x1b\\z\nw",
			replay: "w",
		},
		{
			name:    "CAN aborts a sequence",
			evicted: "\x1b]0;", kept: "t\n\x18u\nv",
			replay: "v",
		},
		{
			name:    "no newline: first character start",
			evicted: "ab\xe2\x82", kept: "\xacxyz",
			replay: "xyz",
		},
		{
			name:    "no newline: ground text from the start",
			evicted: "abc", kept: "defg",
			replay: "defg",
		},
		{
			name:    "no newline: first character after a sequence",
			evicted: "\x1b[3", kept: "1mred",
			replay: "red",
		},
		{
			name:    "no newline: modes set before the fallback",
			evicted: "\x1b[?25", kept: "lxyz",
			replay: "xyz", prefix: "\x1b[?25l",
		},
		{
			name:    "no boundary at all",
			evicted: "\x1b]0;", kept: "a long title",
			replay: "",
		},
		{
			name:    "modes set in evicted bytes",
			evicted: "\x1b[?1049h\x1b[?25l\x1b[?2004htext", kept: "more\nscreen",
			replay: "screen", prefix: "\x1b[?1049h\x1b[?25l\x1b[?2004h",
		},
		{
			name:    "modes set then reset in evicted bytes",
			evicted: "\x1b[?1049h\x1b[?25l\x1b[?1049l\x1b[?25hx", kept: "y\nz",
			replay: "z",
		},
		{
			name:    "modes set in the ring before the boundary",
			evicted: "abc", kept: "\x1b[?2004hd\ne",
			replay: "e", prefix: "\x1b[?2004h",
		},
		{
			name:    "modes set after the boundary are replayed, not prefixed",
			evicted: "abc", kept: "d\n\x1b[?2004he",
			replay: "\x1b[?2004he",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := tc.evicted + tc.kept
			// The same bytes in one write, one byte at a time and in
			// threes must give the same replay.
			for _, chunk := range []int{len(data), 1, 3} {
				r := NewRing(len(tc.kept))
				for i := 0; i < len(data); i += chunk {
					r.Write([]byte(data[i:min(len(data), i+chunk)]))
				}
				for range 2 { // replayStart must not move the tail
					start, prefix, _ := r.ReplayStart(0)
					wantStart := uint64(len(data) - len(tc.replay))
					p := make([]byte, len(data))
					n, err := r.ReadAt(p, start)
					if start != wantStart || err != nil || string(p[:n]) != tc.replay || string(prefix) != tc.prefix {
						t.Fatalf("chunks of %d: replay from %d is %q (err %v) with prefix %q; want from %d %q with prefix %q",
							chunk, start, p[:n], err, prefix, wantStart, tc.replay, tc.prefix)
					}
				}
			}
		})
	}
}

// TestRingReplayStartMatchesFullParse writes random terminal output in random
// chunks and checks the replay start against a parser that saw the whole
// stream: the start is the first line boundary outside a sequence in the ring
// (or else the first character start), and the prefix re-enters exactly the
// modes in force there.
func TestRingReplayStartMatchesFullParse(t *testing.T) {
	pieces := []string{
		"abc", "\n", "\n", "\xc3\xa9", "\xe2\x82\xac",
		"\x1b[?1049h", "\x1b[?1049l", "\x1b[?25l", "\x1b[?25h", "\x1b[?2004h",
		"\x1b[?1000h", "\x1b[?1003h", "\x1b[?1000l", "\x1b[?1006h", "\x1b=", "\x1b>",
		"\x1b[1;31m", "\x1b]0;t\nx\x07", "\x1b]8;;u\x1b\\", "\x1bPq\n\x1b\\", "\x1bc",
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for iter := range 500 {
		var data []byte
		for range rng.IntN(40) {
			data = append(data, pieces[rng.IntN(len(pieces))]...)
		}
		size := 8 + rng.IntN(56)
		r := NewRing(size)
		for i := 0; i < len(data); {
			n := min(len(data)-i, rng.IntN(2*size))
			r.Write(data[i : i+n])
			i += n
		}

		start, prefix, _ := r.ReplayStart(0)
		ringStart := max(0, len(data)-size)
		if ringStart == 0 {
			if start != 0 || prefix != nil {
				t.Fatalf("iteration %d: nothing evicted, replayStart = %d, %q; want 0, nil", iter, start, prefix)
			}
			continue
		}
		var ref vtState
		ref.feed(data[:ringStart])
		want, fallback := -1, -1
		for off := ringStart; off < len(data); off++ {
			if fallback < 0 && ref.isGround() && utf8.RuneStart(data[off]) {
				fallback = off
			}
			wasGround := ref.isGround()
			ref.feed(data[off : off+1])
			if data[off] == '\n' && wasGround {
				want = off + 1
				break
			}
		}
		switch {
		case want >= 0: // a line boundary
		case fallback >= 0:
			want = fallback
		default:
			want = len(data)
		}
		var at vtState
		at.feed(data[:want])
		if start != uint64(want) || !bytes.Equal(prefix, at.modePrefix()) {
			t.Fatalf("iteration %d: stream %q in a %d-byte ring: replayStart = %d, %q; want %d, %q",
				iter, data, size, start, prefix, want, at.modePrefix())
		}
		if want < len(data) && !at.isGround() {
			t.Fatalf("iteration %d: replay starts at %d inside a sequence", iter, want)
		}
	}
}

// TestLive: output is live (its terminal queries still wait for an answer)
// from where the current run began or the furthest any client was sent,
// whichever is later; nothing is live once the run ended, or in a screen
// restored after a restart.
func TestLive(t *testing.T) {
	r := NewRing(64)
	r.StartRun(true, nil)
	r.Write([]byte("\x1b[c hello"))
	if st := r.State(); st.RunStart != 0 || st.Live() != 0 {
		t.Fatalf("first run: %+v, live %d, want run start 0 and everything live", st, st.Live())
	}
	r.NoteDelivered(4)
	r.NoteDelivered(2) // an older attachment catching up changes nothing
	if st := r.State(); st.Live() != 4 {
		t.Errorf("after delivering 4: live %d", st.Live())
	}
	r.Update(func(st *State) { st.RunEnded = true })
	if st := r.State(); st.Live() != st.End {
		t.Errorf("run ended: live %d, want the end %d", st.Live(), st.End)
	}
	r.StartRun(false, nil)
	st := r.State()
	if want := uint64(len("\x1b[c hello") + len(RunResetBase) + len("\r\n")); st.RunStart != want || st.Live() != want {
		t.Errorf("second run: run start %d, live %d, want both %d (after the reset)", st.RunStart, st.Live(), want)
	}

	restored := NewRing(64)
	restored.Restore(100, nil, []byte("\x1b[6n old screen"), false)
	if st := restored.State(); st.RunStart != 115 || st.Live() != 115 {
		t.Errorf("restored: run start %d, live %d, want both 115", st.RunStart, st.Live())
	}
}

// TestReplayStartKeepsOnlyTheLinesAClientKeeps: a client that keeps n
// lines gets a replay of the last n complete lines, from a line boundary
// outside any escape sequence, with the modes in force there; the same
// screen a whole replay would leave it.
func TestReplayStartKeepsOnlyTheLinesAClientKeeps(t *testing.T) {
	r := NewRing(1 << 16)
	r.Write([]byte("\x1b[?2004h"))
	for i := range 100 {
		r.Write([]byte(strconv.Itoa(i) + "\n"))
	}
	// A newline inside a string is not a line.
	r.Write([]byte("\x1b]0;two\nlines\x07last\n"))
	start, prefix, cut := r.ReplayStart(3)
	if !cut {
		t.Error("a replay of 3 of 101 lines does not say it left lines out")
	}
	data := make([]byte, r.end-start)
	n, err := r.ReadAt(data, start)
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data[:n]); got != "98\n99\n\x1b]0;two\nlines\x07last\n" {
		t.Errorf("replay of 3 lines = %q", got)
	}
	if string(prefix) != "\x1b[?2004h" {
		t.Errorf("prefix %q, want bracketed paste re-entered", prefix)
	}
	for _, lines := range []int{0, 101, 102, 1000} {
		if s, _, cut := r.ReplayStart(lines); s != 0 || cut {
			t.Errorf("replayStart(%d) = %d, want the whole stream (0)", lines, s)
		}
	}
	if s, _, cut := r.ReplayStart(100); !cut || s != uint64(len("\x1b[?2004h0\n")) {
		t.Errorf("replayStart(100) = %d, want just after the first line", s)
	}
}

// replayCutSlow is replayStart's cut as it was first written: every byte
// of the ring through the parser, one at a time. The reference for
// FuzzReplayStartLines.
func replayCutSlow(data []byte, st vtState, lines int) (int, bool) {
	after := make([]int, lines+1)
	count := 0
	for i, c := range data {
		ground := st.isGround()
		st.feed(data[i : i+1])
		if c == '\n' && ground {
			after[count%len(after)] = i + 1
			count++
		}
	}
	if count <= lines {
		return 0, false
	}
	return after[(count-lines-1)%len(after)], true
}

// FuzzReplayStartLines: replayStart, which scans byte by byte only near
// the end, cuts where the scan of every byte does, with the same modes,
// escape sequences with newlines in them included.
func FuzzReplayStartLines(f *testing.F) {
	f.Add([]byte("1\n2\n3\n\x1b]0;a\nb\x07\n4\n"), uint(2))
	f.Add(append([]byte("x\ny\n\x1b]0;"), bytes.Repeat([]byte("\n"), 40)...), uint(1))
	f.Add([]byte("\x1b[?1049h\x1bPq\n\n\n\x1b\\a\nb\nc\n\x1b[?1049l"), uint(2))
	f.Fuzz(func(t *testing.T, data []byte, lines uint) {
		// A small ring: longer inputs evict, and the ring starts in the
		// tail's state.
		r := NewRing(64 + len(data)/2)
		r.Write(data)
		n := int(lines%50) + 1
		start, prefix, cut := r.ReplayStart(n)

		from, st, _ := r.replayStartLocked()
		held := make([]byte, r.end-from)
		k, err := r.ReadAt(held, from)
		if err != nil {
			t.Fatal(err)
		}
		held = held[:k]
		wantFrom, wantCut := from, false
		if at, ok := replayCutSlow(held, st, n); ok && uint64(len(held)) > uint64(n) {
			wantFrom, wantCut = from+uint64(at), true
			st.feed(held[:at])
		}
		if start != wantFrom || cut != wantCut || !bytes.Equal(prefix, st.modePrefix()) {
			t.Fatalf("%q, %d lines: replay from %d (cut %v, prefix %q), want %d (cut %v, prefix %q)", data, n, start, cut, prefix, wantFrom, wantCut, st.modePrefix())
		}
	})
}

// TestReplayStartPastManyNewlinesInAString: when more newlines than the
// look-back allows for sit inside an escape sequence at the end, the cut
// is still found, by scanning from the ring's start.
func TestReplayStartPastManyNewlinesInAString(t *testing.T) {
	r := NewRing(1 << 12)
	r.Write([]byte("a\nb\nc\n\x1b]0;"))
	r.Write(bytes.Repeat([]byte("\n"), 3*replaySlack))
	r.Write([]byte("\x07d\n"))
	start, _, cut := r.ReplayStart(2)
	// The last two lines: "c", and the string with its newlines, then d.
	if want := uint64(len("a\nb\n")); !cut || start != want {
		t.Errorf("replayStart(2) = %d (cut %v), want %d", start, cut, want)
	}
}

// BenchmarkReplayStartLines: a reload's screen-first attach (two screens
// of lines) on a full ring of short lines, the case a build log or seq
// makes.
func BenchmarkReplayStartLines(b *testing.B) {
	r := NewRing(1 << 20)
	for i := 0; r.end < 3<<20; i++ {
		r.Write([]byte(strconv.Itoa(i) + "\n"))
	}
	for b.Loop() {
		r.ReplayStart(80)
	}
}

// TestEchoWakesEveryReader: output after input is likely its echo, which
// must not wait for a reader's batch to fill, so it wakes readers whatever
// their target; output with no input before it wakes only those it
// reaches.
func TestEchoWakesEveryReader(t *testing.T) {
	r := NewRing(64)
	far, cancelFar := r.Wait(1<<20, 0)
	defer cancelFar()
	r.Write([]byte("x"))
	select {
	case <-far:
		t.Fatal("a write with no input before it woke a reader it does not reach")
	default:
	}
	r.NoteInput()
	r.Write([]byte("y"))
	select {
	case <-far:
	default:
		t.Fatal("the echo of input did not wake a reader waiting for a full batch")
	}
}

// TestWatchSignalsOneSharedChannel covers a reader that follows two rings
// through one wake-up channel: each watch fires once per arm, at its
// target, on an echo or an epoch's move, at once when already met, and
// never after Close.
func TestWatchSignalsOneSharedChannel(t *testing.T) {
	wake := make(chan struct{}, 1)
	woken := func() bool {
		select {
		case <-wake:
			return true
		default:
			return false
		}
	}
	a, b := NewRing(64), NewRing(64)
	wa, wb := a.Watch(wake), b.Watch(wake)

	wa.Arm(4, 0)
	wb.Arm(1, 0)
	for _, w := range []struct {
		r     *Ring
		p     string
		woken bool
		what  string
	}{
		{a, "abc", false, "ring a at end 3, short of its watch's 4"},
		{b, "x", true, "ring b at its watch's target"},
		{b, "y", false, "ring b again, its watch fired once already"},
		{a, "d", true, "ring a at its watch's target"},
	} {
		w.r.Write([]byte(w.p))
		if got := woken(); got != w.woken {
			t.Fatalf("%s: woken %v, want %v", w.what, got, w.woken)
		}
	}
	if len(a.watches) != 0 || len(b.watches) != 0 {
		t.Errorf("fired watches still listed: %d on a, %d on b", len(a.watches), len(b.watches))
	}

	// Already met, by the end or by the epoch: at once, and not listed.
	wa.Arm(4, 0)
	if !woken() || len(a.watches) != 0 {
		t.Errorf("a watch armed for a reached target did not fire at once, or is listed (%d)", len(a.watches))
	}
	wa.Arm(100, 7)
	if !woken() || len(a.watches) != 0 {
		t.Error("a watch armed at a stale epoch did not fire at once")
	}

	// An echo wakes it short of its target; so does a move of the epoch.
	wa.Arm(100, 0)
	a.NoteInput()
	a.Write([]byte("e"))
	if !woken() {
		t.Error("the echo of input did not fire a watch waiting for more")
	}
	wa.Arm(100, 0)
	wa.Arm(200, 0) // a second arm replaces the first, listed once
	if len(a.watches) != 1 {
		t.Fatalf("a watch armed twice is listed %d times, want 1", len(a.watches))
	}
	a.Update(func(st *State) { st.RunEnded = true })
	if !woken() || len(a.watches) != 0 {
		t.Error("an update did not fire an armed watch")
	}

	// Closed: the ring lets go of it and it stays quiet.
	wb.Arm(100, 0)
	wb.Close()
	if len(b.watches) != 0 {
		t.Errorf("a closed watch is still listed (%d)", len(b.watches))
	}
	wb.Arm(1, 0)
	b.Update(func(st *State) { st.Closed = true })
	if woken() {
		t.Error("a closed watch signalled")
	}
}
