package store

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"

	bolt "go.etcd.io/bbolt"
)

// A session's screen is kept in a bucket of its own in bucketScreens: a
// whole screen, then the output that followed it, piece by piece, so a
// save writes what is new rather than the whole ring again.
//
// Each part (the whole screen or a piece) is a bucket of its own too,
// under its stream offset (partKey, so parts sort in stream order),
// holding its encoding under partBase or partPiece. bbolt keeps a value
// inside its leaf page and rewrites a leaf whole: parts side by side as
// values would make every append rewrite the megabyte of the whole
// screen next to it, and screens side by side in one leaf made every save
// rewrite every session's. A part's own bucket has its own pages; an
// append writes the piece and the small leaf of bucket headers.
//
// Files written before pieces keep the whole screen as a plain value
// under screenKey in the session's bucket, and files older still as a
// plain value in bucketScreens under the session's id; both are read as
// ever, and go at the session's next whole save.
var (
	screenKey = []byte("screen")
	partBase  = []byte("base")
	partPiece = []byte("piece")
)

// partKey is the key of a part starting at stream offset start.
func partKey(start uint64) []byte { return binary.BigEndian.AppendUint64(nil, start) }

// Screen is a session's last screen as stored: the output from where a
// replay starts, with the terminal modes in force there.
type Screen struct {
	// Start is the stream offset of Data[0].
	Start uint64
	// Prefix holds the sequences that re-enter the terminal modes in
	// force at Start.
	Prefix []byte
	// Data is the output from Start on. It may hold more than a ring:
	// the oldest part is kept until what follows it covers the ring.
	Data []byte
	// Cut reports that Data begins where a save began, not where a
	// replay may (a line's start, outside any escape sequence): a
	// replay of it must begin at the first line boundary in it.
	Cut bool
}

// Screen encoding: start (8 bytes), prefix length (4), prefix, data. A
// piece of output is encoded the same way.
func (sc Screen) marshal() []byte {
	return append(ScreenHead(sc.Start, sc.Prefix, len(sc.Data)), sc.Data...)
}

// screenHeadBytes is the fixed part of an encoded screen: its start, then
// the length of its prefix.
const screenHeadBytes = 8 + 4

// ScreenHead returns the encoding of a screen, or of a piece of output
// that follows one, up to its data, with room for n bytes of data after
// it: appending the data makes the value Journal.PutSnapshot and
// Journal.AppendScreen take. A caller that reads the output straight
// into the room saves a copy of it.
func ScreenHead(start uint64, prefix []byte, n int) []byte {
	b := make([]byte, 0, screenHeadBytes+len(prefix)+n)
	b = binary.BigEndian.AppendUint64(b, start)
	b = binary.BigEndian.AppendUint32(b, uint32(len(prefix)))
	return append(b, prefix...)
}

// decodeScreen reads an encoded screen or piece; its slices are b's.
func decodeScreen(b []byte) (Screen, error) {
	if len(b) < screenHeadBytes {
		return Screen{}, fmt.Errorf("screen record of %d bytes is too short", len(b))
	}
	n := binary.BigEndian.Uint32(b[8:])
	if uint64(n) > uint64(len(b)-screenHeadBytes) {
		return Screen{}, fmt.Errorf("screen record's prefix of %d bytes overruns it", n)
	}
	return Screen{
		Start:  binary.BigEndian.Uint64(b),
		Prefix: b[screenHeadBytes : screenHeadBytes+n],
		Data:   b[screenHeadBytes+n:],
	}, nil
}

// screenStart returns the stream offset an encoded screen or piece starts
// at, 0 when it is too short to say.
func screenStart(b []byte) uint64 {
	if len(b) < 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

// screenPart is one stored part of a session's screen. value is bbolt's,
// valid in the transaction.
type screenPart struct {
	value []byte
	// base reports a whole screen, which a replay may begin.
	base bool
}

// screenParts lists what is stored of a session's screen, in stream
// order: by start, since the whole screen an earlier build keeps under
// screenKey may have been written after the parts it cannot see.
func screenParts(screens *bolt.Bucket, id []byte) []screenPart {
	b := screens.Bucket(id)
	if b == nil {
		if v := screens.Get(id); v != nil {
			return []screenPart{{value: v, base: true}}
		}
		return nil
	}
	var out []screenPart
	if v := b.Get(screenKey); v != nil {
		out = append(out, screenPart{value: v, base: true})
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v != nil || len(k) != len(partKey(0)) {
			continue // screenKey's value, or nothing this version writes
		}
		p := b.Bucket(k)
		if v := p.Get(partBase); v != nil {
			out = append(out, screenPart{value: v, base: true})
		} else if v := p.Get(partPiece); v != nil {
			out = append(out, screenPart{value: v})
		}
	}
	slices.SortStableFunc(out, func(a, b screenPart) int { return cmp.Compare(screenStart(a.value), screenStart(b.value)) })
	return out
}

// loadScreen reads a session's stored screen: the newest run of parts
// each starting where the one before it ended. A zero Screen means none
// was stored.
func loadScreen(screens *bolt.Bucket, id []byte) (Screen, error) {
	stored := screenParts(screens, id)
	if len(stored) == 0 {
		return Screen{}, nil
	}
	parts := make([]Screen, len(stored))
	for i, p := range stored {
		sc, err := decodeScreen(p.value)
		if err != nil {
			return Screen{}, err
		}
		parts[i] = sc
	}
	// A piece lost to a failed write would leave a gap; what follows it
	// is the newer output, and a replay needs it whole.
	k := len(parts) - 1
	for k > 0 && parts[k-1].Start+uint64(len(parts[k-1].Data)) == parts[k].Start {
		k--
	}
	n := 0
	for _, p := range parts[k:] {
		n += len(p.Data)
	}
	// Copies: bbolt's memory is only valid inside the transaction.
	out := Screen{
		Start:  parts[k].Start,
		Prefix: bytes.Clone(parts[k].Prefix),
		Data:   make([]byte, 0, n),
		Cut:    !stored[k].base,
	}
	for _, p := range parts[k:] {
		out.Data = append(out.Data, p.Data...)
	}
	return out, nil
}

// writeScreen carries out w on a session's stored screen.
func writeScreen(screens *bolt.Bucket, id []byte, w *screenWrite) error {
	if w.reset {
		if err := deleteScreen(screens, id); err != nil {
			return err
		}
	}
	b, err := sessionScreens(screens, id)
	if err != nil {
		return err
	}
	if w.base != nil {
		if err := putPart(b, partBase, w.base); err != nil {
			return err
		}
	}
	for _, p := range w.pieces {
		if err := putPart(b, partPiece, p); err != nil {
			return err
		}
	}
	return trimScreen(screens, id, w.keep)
}

// sessionScreens returns a session's screen bucket, made when missing;
// the oldest files' screen, a plain value in its place, moves into it.
func sessionScreens(screens *bolt.Bucket, id []byte) (*bolt.Bucket, error) {
	if b := screens.Bucket(id); b != nil {
		return b, nil
	}
	old := bytes.Clone(screens.Get(id))
	if old != nil {
		if err := screens.Delete(id); err != nil {
			return nil, err
		}
	}
	b, err := screens.CreateBucket(id)
	if err != nil {
		return nil, err
	}
	if old != nil {
		if err := b.Put(screenKey, old); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// putPart stores an encoded part in a bucket of its own, under its start,
// as kind (partBase or partPiece).
func putPart(b *bolt.Bucket, kind, enc []byte) error {
	if len(enc) < screenHeadBytes {
		return fmt.Errorf("part of a screen of %d bytes is too short", len(enc))
	}
	key := partKey(screenStart(enc))
	if b.Bucket(key) != nil {
		if err := b.DeleteBucket(key); err != nil {
			return err
		}
	}
	p, err := b.CreateBucket(key)
	if err != nil {
		return err
	}
	return p.Put(kind, enc)
}

// trimScreen forgets the stored parts of a screen that a restart no
// longer needs: each one whose successor starts before keep, the oldest
// offset the ring still holds. What stays covers the ring and a little
// more, so a restored ring is full and its replay begins at a line
// boundary its own eviction finds.
//
// It reads keys only (a part's key is its start) and stops at the first
// part that must stay: reading every part, as a load does, touched a page
// of each through the memory map at every append, for a session that
// trickles about a hundred of them.
func trimScreen(screens *bolt.Bucket, id []byte, keep uint64) error {
	b := screens.Bucket(id)
	if b == nil {
		return nil
	}
	type part struct {
		key      []byte
		start    uint64
		inBucket bool
	}
	var parts []part
	if v := b.Get(screenKey); v != nil {
		parts = append(parts, part{key: screenKey, start: screenStart(v)})
	}
	c := b.Cursor()
	for k, v := c.First(); k != nil; k, v = c.Next() {
		if v != nil || len(k) != len(partKey(0)) {
			continue
		}
		start := binary.BigEndian.Uint64(k)
		// Cloned: deleting moves the cursor's page under it.
		parts = append(parts, part{key: bytes.Clone(k), start: start, inBucket: true})
		if start >= keep {
			break // it stays, and so does everything after it
		}
	}
	// The whole screen an earlier build wrote may come after pieces.
	slices.SortStableFunc(parts, func(a, b part) int { return cmp.Compare(a.start, b.start) })
	for i := 0; i+1 < len(parts) && parts[i+1].start < keep; i++ {
		var err error
		if parts[i].inBucket {
			err = b.DeleteBucket(parts[i].key)
		} else {
			err = b.Delete(parts[i].key)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// deleteScreen forgets a session's stored screen, in any form.
func deleteScreen(screens *bolt.Bucket, id []byte) error {
	if screens.Bucket(id) != nil {
		return screens.DeleteBucket(id)
	}
	return screens.Delete(id)
}
