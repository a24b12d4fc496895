// Package watcher will hold the workspace watcher (fsnotify) and the memory
// monitor (cgroup files and gopsutil), each emitting typed events for the
// ws package to send. Nothing is built here yet; see README.md.
package watcher
