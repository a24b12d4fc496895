package output

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
)

// head encodes a save as the store does: start, prefix length, prefix.
func head(start uint64, prefix []byte, n int) []byte {
	b := make([]byte, 0, 12+len(prefix)+n)
	b = binary.BigEndian.AppendUint64(b, start)
	b = binary.BigEndian.AppendUint32(b, uint32(len(prefix)))
	return append(b, prefix...)
}

// part is a save decoded.
type part struct {
	start  uint64
	prefix []byte
	data   []byte
	whole  bool // a replay may begin at start
}

func decode(enc []byte, whole bool) part {
	n := binary.BigEndian.Uint32(enc[8:])
	return part{start: binary.BigEndian.Uint64(enc), prefix: enc[12 : 12+n], data: enc[12+n:], whole: whole}
}

// A Saver saves the whole screen first, then only what is new, each piece
// with the modes in force where it begins; nothing when nothing is new;
// and a whole screen again when asked or when the ring went past its last
// save.
func TestSaverSavesWhatIsNew(t *testing.T) {
	r := NewRing(64)
	var s Saver
	if enc, _, _ := s.Save(r, head, false); enc != nil {
		t.Fatalf("empty ring saved %q", enc)
	}
	r.Write([]byte("one\r\n\x1b[?1049htwo\r\n"))
	enc, whole, _ := s.Save(r, head, false)
	if p := decode(enc, whole); !whole || p.start != 0 || len(p.prefix) != 0 || string(p.data) != "one\r\n\x1b[?1049htwo\r\n" {
		t.Fatalf("first save = %+v, want the whole screen", p)
	}
	if enc, _, _ := s.Save(r, head, false); enc != nil {
		t.Fatalf("nothing new, yet saved %q", enc)
	}
	r.Write([]byte("three\r\n"))
	enc, whole, _ = s.Save(r, head, false)
	if p := decode(enc, whole); whole || p.start != 18 || string(p.prefix) != "\x1b[?1049h" || string(p.data) != "three\r\n" || s.Pieces() != 1 {
		t.Fatalf("second save = %+v (pieces %d), want the new line from 18 in the alternate screen", p, s.Pieces())
	}
	r.Write([]byte("four\r\n"))
	if enc, whole, _ = s.Save(r, head, true); !whole || decode(enc, whole).start != 0 || s.Pieces() != 0 {
		t.Fatalf("a whole save asked for = %+v", decode(enc, whole))
	}
	r.Write(bytes.Repeat([]byte("overrun\r\n"), 10))
	enc, whole, _ = s.Save(r, head, false)
	if p := decode(enc, whole); !whole || p.start < 34 || string(p.prefix) != "\x1b[?1049h" {
		t.Fatalf("after the ring went past the last save: %+v, want a whole screen from the replay start", p)
	}
}

// A save stops before an unfinished escape sequence, which waits for the
// next: a piece never begins inside one.
func TestSaverEndsOutsideEscapeSequences(t *testing.T) {
	r := NewRing(256)
	var s Saver
	r.Write([]byte("text\x1b[?10"))
	enc, whole, _ := s.Save(r, head, false)
	if p := decode(enc, whole); string(p.data) != "text" {
		t.Fatalf("first save = %q, want the text before the unfinished sequence", p.data)
	}
	if enc, _, _ := s.Save(r, head, false); enc != nil {
		t.Fatalf("with only an unfinished sequence new, saved %q", enc)
	}
	r.Write([]byte("49hmore"))
	enc, whole, _ = s.Save(r, head, false)
	if p := decode(enc, whole); whole || p.start != 4 || len(p.prefix) != 0 || string(p.data) != "\x1b[?1049hmore" {
		t.Fatalf("second save = %+v, want the whole sequence from 4", p)
	}
	r.Write([]byte("!"))
	enc, whole, _ = s.Save(r, head, false)
	if p := decode(enc, whole); string(p.prefix) != "\x1b[?1049h" || string(p.data) != "!" {
		t.Fatalf("third save = %+v, want the alternate screen's prefix", p)
	}
}

// What a restart restores from the saved parts, kept as the store keeps
// them (a part goes once the part after it starts before the ring's
// start), replays exactly as the ring that was saved: same start, same
// modes, same bytes, for streams full of escape sequences saved at
// random moments.
func TestSavedPartsRestoreTheSameReplay(t *testing.T) {
	pieces := []string{
		"abc", "\n", "\r\n", "\xc3\xa9", "\xe2\x82\xac",
		"\x1b[?1049h", "\x1b[?1049l", "\x1b[?25l", "\x1b[?25h", "\x1b[?2004h",
		"\x1b[?1000h", "\x1b[?1006h", "\x1b=", "\x1b>",
		"\x1b[1;31m", "\x1b]0;t\nx\x07", "\x1b]8;;u\x1b\\", "\x1bPq\n\x1b\\",
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for iter := range 300 {
		size := 16 + rng.IntN(112)
		r := NewRing(size)
		var s Saver
		var kept []part
		save := func(whole bool) {
			enc, whole, cut := s.Save(r, head, whole)
			if enc == nil {
				return
			}
			p := decode(bytes.Clone(enc), whole && !cut)
			if whole {
				kept = kept[:0]
			} else if cut != true {
				t.Fatalf("iteration %d: a piece not cut", iter)
			} else if last := kept[len(kept)-1]; last.start+uint64(len(last.data)) != p.start {
				t.Fatalf("iteration %d: piece from %d does not follow the last part, which ends at %d", iter, p.start, last.start+uint64(len(last.data)))
			}
			kept = append(kept, p)
			keep := r.State().Start
			for len(kept) > 1 && kept[1].start < keep {
				kept = kept[1:]
			}
		}
		for range 1 + rng.IntN(30) {
			var data []byte
			for range rng.IntN(12) {
				data = append(data, pieces[rng.IntN(len(pieces))]...)
			}
			r.Write(data)
			save(rng.IntN(10) == 0)
		}
		// CAN ends any sequence, so the last save takes everything.
		r.Write([]byte{0x18})
		save(false)
		if len(kept) == 0 {
			continue
		}
		var data []byte
		for _, p := range kept {
			data = append(data, p.data...)
		}
		restored := NewRing(size)
		restored.Restore(kept[0].start, kept[0].prefix, data, !kept[0].whole)

		if last := kept[len(kept)-1]; last.start+uint64(len(last.data)) != r.State().End {
			t.Fatalf("iteration %d: the last save ends at %d, the output at %d", iter, last.start+uint64(len(last.data)), r.State().End)
		}
		wantOff, wantPrefix, _ := r.ReplayStart(0)
		gotOff, gotPrefix, _ := restored.ReplayStart(0)
		if gotOff != wantOff || !bytes.Equal(gotPrefix, wantPrefix) {
			t.Fatalf("iteration %d (ring %d, parts %+v, ring state %+v base %d): restored replay from %d with %q, want %d with %q", iter, size, kept, r.State(), r.base, gotOff, gotPrefix, wantOff, wantPrefix)
		}
		if got, want := restored.Since(gotOff, size), r.Since(wantOff, size); !bytes.Equal(got, want) {
			t.Fatalf("iteration %d: restored replay %q, want %q", iter, got, want)
		}
	}
}
