package output

import "fmt"

// Saver follows a ring for a copy of its output kept elsewhere, a save at
// a time, so that a save writes what is new rather than the whole ring.
// A save is whole (what a replay would show, from the replay start with
// the modes in force there) the first time, when asked, and when the ring
// has moved past where the last save ended; otherwise it is a piece: the
// output since the last save, with the modes in force where it begins,
// which the Saver keeps track of by parsing what it saves.
//
// A Saver is not safe for concurrent use; its owner serialises saves.
type Saver struct {
	end    uint64  // where the last save ended
	modes  vtState // the terminal state at end
	primed bool    // modes is known: a piece may follow
	pieces int     // pieces saved since the last whole save
}

// Mark notes that r's output up to now is saved already, as when r was
// just restored from the save: the next save is whole, and only when
// something new follows.
func (s *Saver) Mark(r *Ring) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*s = Saver{end: r.end}
}

// End returns the stream offset where the last save ended.
func (s *Saver) End() uint64 { return s.end }

// Pieces returns how many pieces were saved since the last whole save.
func (s *Saver) Pieces() int { return s.pieces }

// Save returns what to save of r: nil when nothing is new since the last
// save, else the encoding head makes of a start and the modes' prefix,
// with room for n bytes, followed by the output. whole asks for a whole
// save; wasWhole reports whether it is one, to replace what was saved
// rather than follow it. cut reports that the save does not begin where
// a replay may, at a line's start: a piece, or a whole screen that has no
// line boundary yet. A restart replays a cut start from its first line
// boundary, as the ring would.
//
// A save ends outside any escape sequence: an unfinished one waits for
// the next save (or for the ring to move past it, which makes that save
// whole). A piece then always begins where the parser is at rest, so the
// modes' prefix is all a restart needs to carry on parsing from there,
// as it must when the piece becomes the oldest part kept.
func (s *Saver) Save(r *Ring, head func(start uint64, prefix []byte, n int) []byte, whole bool) (enc []byte, wasWhole, cut bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.end == s.end {
		return nil, false, false
	}
	start, st, cut := s.end, s.modes, true
	wasWhole = whole || !s.primed || s.end < r.start()
	if wasWhole {
		var atLine bool
		start, st, atLine = r.replayStartLocked()
		cut = !atLine
	}
	n := int(r.end - start)
	enc = head(start, st.modePrefix(), n)
	at := len(enc)
	enc = enc[:at+n]
	if _, err := r.readAtLocked(enc[at:], start); err != nil {
		// start is held: the replay start, or checked above.
		panic(fmt.Sprintf("ring save: %v", err))
	}
	n = st.feedToRest(enc[at:])
	if n == 0 && !wasWhole {
		return nil, false, false
	}
	enc = enc[:at+n]
	s.end, s.modes, s.primed = start+uint64(n), st, true
	if wasWhole {
		s.pieces = 0
	} else {
		s.pieces++
	}
	return enc, wasWhole, cut
}
