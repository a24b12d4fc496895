// Package memory watches how much memory the server's container uses, so
// that agents are not started into the OOM killer.
//
// A Monitor reads the use from the container's cgroup (v2, else v1), or
// from the host when the cgroup sets no limit, grades it against two
// thresholds (warning and critical) with hysteresis, and tells its
// subscribers when the level changes. While the level is critical, Admit
// refuses new agents. ReadProcessTree and ProcessTreeRSS measure the
// memory of one session's processes.
package memory

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/shirou/gopsutil/v3/mem"

	"github.com/agentmux/agentmux/internal/observe"
	"github.com/agentmux/agentmux/internal/procfs"
)

// The defaults of Options.
const (
	defaultWarnPercent     = 87
	defaultCriticalPercent = 93
	defaultInterval        = 5 * time.Second
	defaultHysteresis      = 2
)

// cgroupV1NoLimit is the smallest memory.limit_in_bytes taken to mean "no
// limit": the kernel reports an unlimited v1 cgroup as the largest
// page-aligned int64, 9223372036854771712.
const cgroupV1NoLimit = uint64(1) << 60

// Options configure a Monitor. Zero values are documented.
type Options struct {
	// WarnPercent and CriticalPercent are the thresholds, in percent of
	// the limit; 0 means 87 and 93. After defaults, 0 < Warn < Critical ≤
	// 100 must hold, else NewMonitor returns an error.
	WarnPercent, CriticalPercent float64
	// Interval is the sampling interval of Run; 0 means 5s.
	Interval time.Duration
	// Hysteresis is how many percentage points below a threshold the use
	// must fall before the level drops; 0 means 2.
	Hysteresis float64
	// Sampler reads memory use; nil means NewCgroupSampler("/").
	Sampler Sampler
	// Logger receives level changes and sampling errors; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Sampler reads memory use once.
type Sampler interface {
	Sample() (used, limit uint64, src Source, err error)
}

// NewCgroupSampler returns the real sampler, reading files under root
// (normally "/"; tests pass a fixture tree holding proc/self/cgroup and
// sys/fs/cgroup/...).
//
// cgroup v2 is used when proc/self/cgroup has a "0::<path>" line and
// memory.max exists in sys/fs/cgroup/<path> (or, failing that, directly
// in sys/fs/cgroup, which is where a container usually sees its own
// cgroup): the limit is memory.max, the use memory.current less
// memory.stat's inactive_file. Otherwise cgroup v1 is used when
// proc/self/cgroup names the memory controller and memory.limit_in_bytes
// exists in sys/fs/cgroup/memory/<path> or sys/fs/cgroup/memory: the limit
// is memory.limit_in_bytes (or memory.stat's hierarchical_memory_limit when
// an ancestor sets a lower one), the use memory.usage_in_bytes less
// memory.stat's total_inactive_file (inactive_file when it has no total_). When there is no limit ("max" in v2, 2^60 or more in
// v1, a limit at or above the host's total memory in either, or no memory
// cgroup at all) the host is read instead: used is total less available,
// the limit is the total. Use is clamped at 0 when the inactive file cache
// exceeds it. Errors name the file they concern.
func NewCgroupSampler(root string) Sampler {
	return &cgroupSampler{root: root, host: hostVirtual}
}

// cgroupSampler is the Sampler of NewCgroupSampler.
type cgroupSampler struct {
	root string
	// host reads the host's total and available memory.
	host func() (total, available uint64, err error)
}

// hostVirtual reads the host's memory through gopsutil.
func hostVirtual() (total, available uint64, err error) {
	v, err := mem.VirtualMemory()
	if err != nil {
		return 0, 0, fmt.Errorf("reading host memory: %w", err)
	}
	return v.Total, v.Available, nil
}

// Sample implements Sampler.
func (s *cgroupSampler) Sample() (used, limit uint64, src Source, err error) {
	cgFile := filepath.Join(s.root, "proc", "self", "cgroup")
	data, err := os.ReadFile(cgFile)
	if err != nil {
		return 0, 0, "", fmt.Errorf("reading cgroup membership: %w", err)
	}
	v2Path, v1Path, hasV2, hasV1 := cgroupParseSelf(data)

	var ok bool
	if hasV2 {
		used, limit, ok, err = s.sampleV2(v2Path)
		if err != nil {
			return 0, 0, "", err
		}
		if ok {
			if limit, ok = s.belowHost(limit); ok {
				return used, limit, SourceCgroup2, nil
			}
			return s.sampleHost()
		}
	}
	if hasV1 {
		used, limit, ok, err = s.sampleV1(v1Path)
		if err != nil {
			return 0, 0, "", err
		}
		if ok {
			if limit, ok = s.belowHost(limit); ok {
				return used, limit, SourceCgroup1, nil
			}
			return s.sampleHost()
		}
	}
	return s.sampleHost()
}

// belowHost reports whether a cgroup limit is a real one: below 2^60 and
// below the host's total memory (a larger limit can never be reached, so
// the host is what binds). When the host cannot be read the limit is kept.
func (s *cgroupSampler) belowHost(limit uint64) (uint64, bool) {
	if limit == 0 || limit >= cgroupV1NoLimit {
		return 0, false
	}
	total, _, err := s.host()
	if err == nil && total > 0 && limit >= total {
		return 0, false
	}
	return limit, true
}

// sampleHost reads the host's memory.
func (s *cgroupSampler) sampleHost() (used, limit uint64, src Source, err error) {
	total, available, err := s.host()
	if err != nil {
		return 0, 0, "", err
	}
	if total == 0 {
		return 0, 0, "", errors.New("reading host memory: total is 0")
	}
	if available < total {
		used = total - available
	}
	return used, total, SourceHost, nil
}

// sampleV2 reads a cgroup v2 memory controller. ok is false when no
// memory.max is found or it says "max".
func (s *cgroupSampler) sampleV2(path string) (used, limit uint64, ok bool, err error) {
	mount := filepath.Join(s.root, "sys", "fs", "cgroup")
	dir, found, err := cgroupFindDir("memory.max", filepath.Join(mount, path), mount)
	if err != nil || !found {
		return 0, 0, false, err
	}
	maxFile := filepath.Join(dir, "memory.max")
	raw, err := cgroupReadValue(maxFile)
	if err != nil {
		return 0, 0, false, err
	}
	if raw == "max" {
		return 0, 0, false, nil
	}
	limit, err = cgroupParseUint(maxFile, raw)
	if err != nil {
		return 0, 0, false, err
	}
	used, _, err = cgroupWorkingSet(dir, "memory.current", "inactive_file")
	if err != nil {
		return 0, 0, false, err
	}
	return used, limit, true, nil
}

// sampleV1 reads a cgroup v1 memory controller. ok is false when no
// memory.limit_in_bytes is found.
func (s *cgroupSampler) sampleV1(path string) (used, limit uint64, ok bool, err error) {
	mount := filepath.Join(s.root, "sys", "fs", "cgroup", "memory")
	dir, found, err := cgroupFindDir("memory.limit_in_bytes", filepath.Join(mount, path), mount)
	if err != nil || !found {
		return 0, 0, false, err
	}
	limitFile := filepath.Join(dir, "memory.limit_in_bytes")
	raw, err := cgroupReadValue(limitFile)
	if err != nil {
		return 0, 0, false, err
	}
	limit, err = cgroupParseUint(limitFile, raw)
	if err != nil {
		return 0, 0, false, err
	}
	used, stat, err := cgroupWorkingSet(dir, "memory.usage_in_bytes", "total_inactive_file", "inactive_file")
	if err != nil {
		return 0, 0, false, err
	}
	// A parent's lower limit binds too; the kernel gives the tightest one.
	statFile := filepath.Join(dir, "memory.stat")
	if h, err := cgroupStatValue(statFile, stat, "hierarchical_memory_limit"); err != nil {
		return 0, 0, false, err
	} else if h > 0 && h < limit {
		limit = h
	}
	return used, limit, true, nil
}

// cgroupFindDir returns the first of dirs holding the file name. A file
// that exists but cannot be examined is an error.
func cgroupFindDir(name string, dirs ...string) (string, bool, error) {
	for _, d := range dirs {
		f := filepath.Join(d, name)
		_, err := os.Stat(f)
		if err == nil {
			return d, true, nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			return "", false, fmt.Errorf("reading cgroup memory: %w", err)
		}
	}
	return "", false, nil
}

// cgroupWorkingSet returns the usage file's value less the first of
// inactiveKeys found in dir's memory.stat (0 when none is), clamped at 0,
// and the content of memory.stat.
func cgroupWorkingSet(dir, usageName string, inactiveKeys ...string) (uint64, []byte, error) {
	usageFile := filepath.Join(dir, usageName)
	raw, err := cgroupReadValue(usageFile)
	if err != nil {
		return 0, nil, err
	}
	usage, err := cgroupParseUint(usageFile, raw)
	if err != nil {
		return 0, nil, err
	}
	statFile := filepath.Join(dir, "memory.stat")
	stat, err := os.ReadFile(statFile)
	if err != nil {
		return 0, nil, fmt.Errorf("reading cgroup memory: %w", err)
	}
	inactive, err := cgroupStatValue(statFile, stat, inactiveKeys...)
	if err != nil {
		return 0, nil, err
	}
	if inactive >= usage {
		return 0, stat, nil
	}
	return usage - inactive, stat, nil
}

// cgroupStatValue returns the value of the first of keys present in a
// memory.stat file's "key value" lines, or 0 when none is.
func cgroupStatValue(file string, data []byte, keys ...string) (uint64, error) {
	found := make(map[string]string, len(keys))
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), " ")
		if !ok {
			continue
		}
		for _, want := range keys {
			if k == want {
				found[k] = strings.TrimSpace(v)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("reading cgroup memory: %s: %w", file, err)
	}
	for _, k := range keys {
		if v, ok := found[k]; ok {
			n, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				return 0, fmt.Errorf("reading cgroup memory: %s: bad %s value %q", file, k, v)
			}
			return n, nil
		}
	}
	return 0, nil
}

// cgroupReadValue reads a one-value cgroup file, trimmed.
func cgroupReadValue(file string) (string, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("reading cgroup memory: %w", err)
	}
	return strings.TrimSpace(string(data)), nil
}

// cgroupParseUint parses a cgroup file's number.
func cgroupParseUint(file, raw string) (uint64, error) {
	n, err := strconv.ParseUint(raw, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("reading cgroup memory: %s: not a number: %q", file, raw)
	}
	return n, nil
}

// cgroupParseSelf reads /proc/self/cgroup: the v2 path ("0::<path>") and
// the v1 memory controller's path ("<id>:...memory...:<path>"). Paths are
// cleaned and rooted, so a "/../.." (a cgroup outside the namespace) never
// climbs out of the mount.
func cgroupParseSelf(data []byte) (v2, v1 string, hasV2, hasV1 bool) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		parts := strings.SplitN(strings.TrimSpace(sc.Text()), ":", 3)
		if len(parts) != 3 {
			continue
		}
		p := filepath.Clean("/" + parts[2])
		if parts[0] == "0" && parts[1] == "" {
			v2, hasV2 = p, true
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "memory" && !hasV1 {
				v1, hasV1 = p, true
			}
		}
	}
	return v2, v1, hasV2, hasV1
}

// Monitor samples memory use and grades it against thresholds.
type Monitor struct {
	warn, crit, hyst float64
	interval         time.Duration
	sampler          Sampler
	log              *slog.Logger
	// observers are told of level changes, under sampleMu.
	observers observe.List[Status]

	// sampleMu serializes Sample, so levels and observer calls follow the
	// order of the readings.
	sampleMu sync.Mutex
	// lastErr is the last sampling error Run logged (under sampleMu).
	lastErr string

	// mu protects status, the level last graded, which Status and Admit
	// read while Sample writes it.
	mu     sync.Mutex
	status Status
}

// NewMonitor checks opts, applies their defaults and returns a
// monitor whose level is ok until its first sample.
func NewMonitor(opts Options) (*Monitor, error) {
	m := &Monitor{
		warn:     opts.WarnPercent,
		crit:     opts.CriticalPercent,
		hyst:     opts.Hysteresis,
		interval: opts.Interval,
		sampler:  opts.Sampler,
		log:      opts.Logger,
		status:   Status{Level: OK},
	}
	if m.warn == 0 {
		m.warn = defaultWarnPercent
	}
	if m.crit == 0 {
		m.crit = defaultCriticalPercent
	}
	if m.hyst == 0 {
		m.hyst = defaultHysteresis
	}
	if m.interval == 0 {
		m.interval = defaultInterval
	}
	switch {
	case math.IsNaN(m.warn) || math.IsNaN(m.crit) || m.warn <= 0 || m.crit > 100:
		return nil, fmt.Errorf("memory thresholds must be within 0 to 100 percent (warn %g, critical %g)", m.warn, m.crit)
	case m.warn >= m.crit:
		return nil, fmt.Errorf("memory warn threshold (%g%%) must be below the critical one (%g%%)", m.warn, m.crit)
	case math.IsNaN(m.hyst) || m.hyst < 0:
		return nil, fmt.Errorf("memory hysteresis must not be negative (%g)", m.hyst)
	case m.interval < 0:
		return nil, fmt.Errorf("memory sampling interval must not be negative (%s)", m.interval)
	}
	if m.sampler == nil {
		m.sampler = NewCgroupSampler("/")
	}
	if m.log == nil {
		m.log = slog.Default()
	}
	return m, nil
}

// Run samples every Interval until ctx ends, the first time at once. The
// owner runs it in one goroutine and cancels ctx to stop it; Run returns
// after its last sample and takes none after ctx ends. Sampling errors are
// logged once each, until a sample succeeds again.
func (m *Monitor) Run(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	m.runSample()
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if ctx.Err() != nil {
				return
			}
			m.runSample()
		}
	}
}

// runSample samples for Run and logs a new error or the recovery from one.
func (m *Monitor) runSample() {
	_, err := m.Sample()
	m.sampleMu.Lock()
	defer m.sampleMu.Unlock()
	switch {
	case err != nil && err.Error() != m.lastErr:
		m.lastErr = err.Error()
		m.log.Warn("memory monitor: cannot sample memory use", "err", err)
	case err == nil && m.lastErr != "":
		m.lastErr = ""
		m.log.Info("memory monitor: sampling memory use again")
	}
}

// Status returns the latest reading and level: Level ok with zero values
// before the first sample.
func (m *Monitor) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.status
}

// Subscribe has fn called with the new status each time the level changes,
// until cancel is called, from the goroutine that sampled (Run's,
// normally). Calls are serialized and in order; fn must not block.
func (m *Monitor) Subscribe(fn func(Status)) (cancel func()) {
	return m.observers.Subscribe(fn)
}

// ErrCritical is Admit's refusal.
var ErrCritical = errors.New("memory is critical: no new agents until some is freed")

// Admit refuses new agents with ErrCritical while the level is critical,
// so that starting one does not push the container into the OOM killer.
// It is quick and takes no sample.
func (m *Monitor) Admit() error {
	if m.Status().Level == Critical {
		return ErrCritical
	}
	return nil
}

// Sample takes one reading now, updates the level, tells the observers when
// the level changed and returns the new status. On an error the status and
// level stay as they were, and that status is returned with the error.
func (m *Monitor) Sample() (Status, error) {
	m.sampleMu.Lock()
	defer m.sampleMu.Unlock()

	used, limit, src, err := m.sampler.Sample()
	if err == nil && limit == 0 {
		err = fmt.Errorf("memory sampler (%s) reported a zero limit", src)
	}
	if err != nil {
		return m.Status(), err
	}
	pct := float64(used) * 100 / float64(limit)
	if pct > 100 {
		pct = 100
	}

	m.mu.Lock()
	prev := m.status.Level
	st := Status{
		UsedBytes:  used,
		LimitBytes: limit,
		Percent:    pct,
		Source:     src,
		Level:      nextLevel(prev, pct, m.warn, m.crit, m.hyst),
		Time:       time.Now(),
	}
	m.status = st
	m.mu.Unlock()

	if st.Level != prev {
		lvl := slog.LevelWarn
		if st.Level == OK {
			lvl = slog.LevelInfo
		}
		m.log.Log(context.Background(), lvl, "memory level changed",
			"from", string(prev), "to", string(st.Level),
			"percent", math.Round(pct*10)/10, "usedBytes", used, "limitBytes", limit, "source", string(src))
		m.observers.Notify(st)
	}
	return st, nil
}

// nextLevel grades pct given the current level. Rising is immediate:
// at or above crit is critical, at or above warn is warning. Falling needs
// pct below the threshold less hyst: critical stays until pct < crit-hyst,
// and warning (or critical falling past warn) stays until pct < warn-hyst.
func nextLevel(cur Level, pct, warn, crit, hyst float64) Level {
	switch {
	case pct >= crit:
		return Critical
	case cur == Critical && pct >= crit-hyst:
		return Critical
	case pct >= warn:
		return Warning
	case cur != OK && pct >= warn-hyst:
		return Warning
	default:
		return OK
	}
}

// ProcessTreeRSS returns the resident set size in bytes of pid and all its
// descendants, found by reading every <procRoot>/<n>/stat for its parent
// (procRoot is "/proc" outside tests). A process's RSS is VmRSS from its
// status file, else the resident pages of its statm file. Descendants that
// vanish during the walk are skipped; pid itself missing is an error that
// names the file.
func ProcessTreeRSS(procRoot string, pid int) (uint64, error) {
	t, err := ReadProcessTree(procRoot)
	if err != nil {
		return 0, err
	}
	return t.RSS(pid)
}

// ProcessTree is which process is whose parent, read once from every
// <procRoot>/<n>/stat. Reading it is most of the cost of a tree's RSS (a
// few milliseconds with a hundred processes): the trees of several
// sessions share one reading.
type ProcessTree struct {
	procRoot string
	children map[int][]int
	listed   map[int]bool
}

// ReadProcessTree reads the parent of every process under procRoot.
func ReadProcessTree(procRoot string) (*ProcessTree, error) {
	all, err := procfs.Processes(procRoot)
	if err != nil {
		return nil, fmt.Errorf("process tree: %w", err)
	}
	t := &ProcessTree{procRoot: procRoot, children: make(map[int][]int), listed: make(map[int]bool, len(all))}
	for _, st := range all {
		t.listed[st.PID] = true
		if st.PID != st.PPID {
			t.children[st.PPID] = append(t.children[st.PPID], st.PID)
		}
	}
	return t, nil
}

// RSS returns the resident set size of pid and its descendants as the tree
// was read; see ProcessTreeRSS.
func (t *ProcessTree) RSS(pid int) (uint64, error) {
	if !t.listed[pid] {
		// Read it directly: this also gives the error naming its file.
		if _, err := procfs.ReadStat(t.procRoot, pid); err != nil {
			return 0, fmt.Errorf("process tree of %d: %w", pid, err)
		}
	}

	var total uint64
	seen := map[int]bool{pid: true}
	queue := []int{pid}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		rss, err := processRSS(t.procRoot, p)
		switch {
		case err == nil:
			total += rss
		case p == pid:
			return 0, fmt.Errorf("process tree of %d: %w", pid, err)
		}
		// A descendant that vanished adds nothing, but its children, seen
		// in the listing, are still walked.
		for _, c := range t.children[p] {
			if !seen[c] {
				seen[c] = true
				queue = append(queue, c)
			}
		}
	}
	return total, nil
}

// processRSS returns one process's resident set size in bytes: VmRSS
// from status, else statm's resident pages times the page size (a zombie
// or kernel thread has no VmRSS line, and its statm reads 0).
func processRSS(procRoot string, pid int) (uint64, error) {
	dir := filepath.Join(procRoot, strconv.Itoa(pid))
	statusFile := filepath.Join(dir, "status")
	if data, err := os.ReadFile(statusFile); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
			if !ok {
				continue
			}
			f := strings.Fields(rest)
			if len(f) >= 1 {
				kb, err := strconv.ParseUint(f[0], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("%s: bad VmRSS %q", statusFile, rest)
				}
				return kb * 1024, nil
			}
		}
	}
	statmFile := filepath.Join(dir, "statm")
	data, err := os.ReadFile(statmFile)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data))
	if len(f) < 2 {
		return 0, fmt.Errorf("%s: too few fields", statmFile)
	}
	pages, err := strconv.ParseUint(f[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: bad resident pages %q", statmFile, f[1])
	}
	return pages * uint64(os.Getpagesize()), nil
}

// Level grades memory use against the configured thresholds.
type Level string

// The levels of resource.warning.
const (
	OK       Level = "ok"
	Warning  Level = "warning"
	Critical Level = "critical"
)

// Source says where a memory reading came from.
type Source string

// The sources of GET /api/resources.
const (
	SourceCgroup2 Source = "cgroup2"
	SourceCgroup1 Source = "cgroup1"
	SourceHost    Source = "host"
)

// Status is one memory reading and the level it gives.
type Status struct {
	// UsedBytes is the working set: usage less inactive file cache.
	UsedBytes  uint64
	LimitBytes uint64
	// Percent is UsedBytes over LimitBytes, 0 to 100.
	Percent float64
	Source  Source
	Level   Level
	Time    time.Time
}
