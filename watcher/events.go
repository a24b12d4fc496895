// Package watcher watches the workspace and emits typed events: files
// added, changed and removed, and the progress of a BMAD-style workflow
// read from its status files (parsed by package workflow). The memory
// monitor is package memory. The ws package turns the events into
// protocol messages.
package watcher

import "time"

// FileOp is what happened to a file.
type FileOp string

// The file operations of the protocol's file.changed.
const (
	FileAdded   FileOp = "add"
	FileChanged FileOp = "change"
	FileRemoved FileOp = "unlink"
)

// FileEvent reports a change to one file of the workspace.
type FileEvent struct {
	// Path is absolute.
	Path string
	// Rel is Path relative to the workspace root, with forward slashes.
	Rel  string
	Op   FileOp
	Time time.Time
}
