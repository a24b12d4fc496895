// The workspace's recent file events, kept for the clients that connect
// later (file.recent): a page reloaded shows the activity it had.

package collab

import "github.com/agentmux/agentmux/wire"

// The bounds of the recent file events: as many as the UI's feed shows,
// and at most this many bytes of them, however long their paths.
const (
	// MaxRecentFiles is how many file events a new connection is sent.
	MaxRecentFiles = 100
	// MaxRecentFileBytes bounds the bytes of the events kept: their
	// paths and timestamps, plus recentFileOverhead each.
	MaxRecentFileBytes = 32 << 10
)

// recentFileOverhead is what one event adds to file.recent besides its
// path and timestamp: its field names, quotes and event word.
const recentFileOverhead = 48

// recentFiles is a bounded list of the last file events, oldest first.
// It does not lock: the App's mu guards it.
type recentFiles struct {
	files []wire.RecentFile
	bytes int
}

// add keeps f, dropping the oldest events past the bounds.
func (r *recentFiles) add(f wire.RecentFile) {
	r.files = append(r.files, f)
	r.bytes += recentFileSize(f)
	drop := 0
	for drop < len(r.files) && (len(r.files)-drop > MaxRecentFiles || r.bytes > MaxRecentFileBytes) {
		r.bytes -= recentFileSize(r.files[drop])
		drop++
	}
	if drop > 0 {
		// Moved down, not resliced: the array does not grow with every
		// event ever seen.
		n := copy(r.files, r.files[drop:])
		clear(r.files[n:])
		r.files = r.files[:n]
	}
}

// message is file.recent with the events kept.
func (r *recentFiles) message() wire.FileRecentMessage {
	files := make([]wire.RecentFile, len(r.files))
	copy(files, r.files)
	return wire.FileRecentMessage{Type: wire.TypeFileRecent, Files: files}
}

func recentFileSize(f wire.RecentFile) int {
	return len(f.Path) + len(f.Event) + len(f.Timestamp) + recentFileOverhead
}
