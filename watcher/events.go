// Package watcher watches the workspace and the container's memory and
// emits typed events: files added, changed and removed, the progress of a
// BMAD-style workflow read from its status files, and the memory level.
// It imports no other package of this module; the ws package turns its
// events into protocol messages.
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

// StepStatus is a workflow step's state.
type StepStatus string

// The step states of the protocol's workflow.updated.
const (
	StepCompleted  StepStatus = "completed"
	StepInProgress StepStatus = "in_progress"
	StepPending    StepStatus = "pending"
)

// Step is one step of a workflow.
type Step struct {
	// Name identifies the step, e.g. "prd" or "1-2-some-story".
	Name   string
	Status StepStatus
	// DisplayName is a human-readable name, when the file gives one.
	DisplayName string
}

// Workflow is a workflow's progress.
type Workflow struct {
	// CurrentStep is the first step in progress, else the first pending
	// one, else empty.
	CurrentStep    string
	CompletedSteps []string
	Steps          []Step
}

// MemoryLevel grades memory use against the configured thresholds.
type MemoryLevel string

// The levels of resource.warning.
const (
	MemoryOK       MemoryLevel = "ok"
	MemoryWarning  MemoryLevel = "warning"
	MemoryCritical MemoryLevel = "critical"
)

// MemorySource says where a memory reading came from.
type MemorySource string

// The sources of GET /api/resources.
const (
	SourceCgroup2 MemorySource = "cgroup2"
	SourceCgroup1 MemorySource = "cgroup1"
	SourceHost    MemorySource = "host"
)

// MemoryStatus is one memory reading and the level it gives.
type MemoryStatus struct {
	// UsedBytes is the working set: usage less inactive file cache.
	UsedBytes  uint64
	LimitBytes uint64
	// Percent is UsedBytes over LimitBytes, 0 to 100.
	Percent float64
	Source  MemorySource
	Level   MemoryLevel
	Time    time.Time
}
