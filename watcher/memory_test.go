package watcher

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/shirou/gopsutil/v3/mem"
	"go.uber.org/goleak"

	"github.com/agentmux/agentmux/internal/testutil"
)

const (
	memKiB = 1024
	memMiB = 1024 * memKiB
	memGiB = 1024 * memMiB
)

// memFixture returns the path of a fixture tree under testdata/cgroup.
func memFixture(name string) string {
	return filepath.Join("testdata", "cgroup", name)
}

// memFakeHost returns a host reader giving fixed figures.
func memFakeHost(total, available uint64, err error) func() (uint64, uint64, error) {
	return func() (uint64, uint64, error) { return total, available, err }
}

func TestCgroupSamplerFixtures(t *testing.T) {
	host8G := memFakeHost(8*memGiB, 6*memGiB, nil)
	tests := []struct {
		root      string
		host      func() (uint64, uint64, error)
		wantUsed  uint64
		wantLimit uint64
		wantSrc   MemorySource
	}{
		// memory.current 104857600 - inactive_file 10485760.
		{"v2-limit", host8G, 94371840, 268435456, SourceCgroup2},
		{"v2-nested", host8G, 536870912 - 36870912, 1073741824, SourceCgroup2},
		{"v2-mountroot", host8G, 1073741824 - 73741824, 2147483648, SourceCgroup2},
		{"v2-max", host8G, 2 * memGiB, 8 * memGiB, SourceHost},
		{"v2-clamp", host8G, 0, 268435456, SourceCgroup2},
		// usage 300000000 - total_inactive_file 50000000 (not inactive_file 1).
		{"v1-limit", host8G, 250000000, 536870912, SourceCgroup1},
		{"v1-nolimit", host8G, 2 * memGiB, 8 * memGiB, SourceHost},
		{"v1-rootdir", host8G, 500000000, 1073741824, SourceCgroup1},
		{"v1-flatstat", host8G, 400000000, 1073741824, SourceCgroup1},
		// No limit of its own, but a parent's: hierarchical_memory_limit.
		{"v1-parentlimit", host8G, 300000000, 1073741824, SourceCgroup1},
		{"none", host8G, 2 * memGiB, 8 * memGiB, SourceHost},
		// A limit at or above the host's memory is no limit.
		{"v1-limit", memFakeHost(536870912, 136870912, nil), 400000000, 536870912, SourceHost},
		{"v2-limit", memFakeHost(256*memMiB, 0, nil), 256 * memMiB, 256 * memMiB, SourceHost},
		// A host that cannot be read leaves the cgroup's limit in force.
		{"v2-limit", memFakeHost(0, 0, errors.New("no meminfo")), 94371840, 268435456, SourceCgroup2},
	}
	for _, tc := range tests {
		t.Run(tc.root, func(t *testing.T) {
			s := &cgroupSampler{root: memFixture(tc.root), host: tc.host}
			used, limit, src, err := s.Sample()
			if err != nil {
				t.Fatalf("Sample: %v", err)
			}
			if used != tc.wantUsed || limit != tc.wantLimit || src != tc.wantSrc {
				t.Errorf("Sample = used %d, limit %d, %s; want used %d, limit %d, %s",
					used, limit, src, tc.wantUsed, tc.wantLimit, tc.wantSrc)
			}
		})
	}
}

// The host fallback through gopsutil: the limit is the machine's total.
func TestCgroupSamplerRealHostFallback(t *testing.T) {
	vm, err := mem.VirtualMemory()
	if err != nil {
		t.Fatalf("mem.VirtualMemory: %v", err)
	}
	for _, root := range []string{"v2-max", "v1-nolimit", "none"} {
		used, limit, src, err := NewCgroupSampler(memFixture(root)).Sample()
		if err != nil {
			t.Fatalf("%s: Sample: %v", root, err)
		}
		if src != SourceHost || limit != vm.Total || used == 0 || used > limit {
			t.Errorf("%s: Sample = used %d, limit %d, %s; want host with limit %d and 0 < used <= limit",
				root, used, limit, src, vm.Total)
		}
	}
	// A fixture limit far above any real host is no limit either.
	dir := t.TempDir()
	memWriteFile(t, dir, "proc/self/cgroup", "0::/\n")
	memWriteFile(t, dir, "sys/fs/cgroup/memory.max", strconv.FormatUint(vm.Total+memGiB, 10)+"\n")
	memWriteFile(t, dir, "sys/fs/cgroup/memory.current", "1000\n")
	memWriteFile(t, dir, "sys/fs/cgroup/memory.stat", "inactive_file 0\n")
	if _, limit, src, err := NewCgroupSampler(dir).Sample(); err != nil || src != SourceHost || limit != vm.Total {
		t.Errorf("limit above host: Sample = limit %d, %s, %v; want host, %d", limit, src, err, vm.Total)
	}
}

func memWriteFile(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCgroupSamplerErrorsNameTheFile(t *testing.T) {
	empty := t.TempDir()
	host8G := memFakeHost(8*memGiB, 6*memGiB, nil)
	tests := []struct {
		root string
		host func() (uint64, uint64, error)
		want string // the file the error must name
	}{
		{memFixture("v2-no-current"), host8G, filepath.Join(memFixture("v2-no-current"), "sys/fs/cgroup/memory.current")},
		{memFixture("v2-no-stat"), host8G, filepath.Join(memFixture("v2-no-stat"), "sys/fs/cgroup/memory.stat")},
		{memFixture("v2-bad-max"), host8G, filepath.Join(memFixture("v2-bad-max"), "sys/fs/cgroup/memory.max")},
		{memFixture("v1-no-usage"), host8G, filepath.Join(memFixture("v1-no-usage"), "sys/fs/cgroup/memory/memory.usage_in_bytes")},
		{empty, host8G, filepath.Join(empty, "proc/self/cgroup")},
		// No limit, and the host cannot be read: that error comes back.
		{memFixture("v2-max"), memFakeHost(0, 0, errors.New("reading host memory: boom")), "reading host memory: boom"},
	}
	for _, tc := range tests {
		s := &cgroupSampler{root: tc.root, host: tc.host}
		_, _, _, err := s.Sample()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Sample error = %v; want one naming %q", tc.root, err, tc.want)
		}
	}
}

// The real machine: whatever it uses, the reading makes sense.
func TestCgroupSamplerRealMachine(t *testing.T) {
	used, limit, src, err := NewCgroupSampler("/").Sample()
	if err != nil {
		t.Fatalf("Sample: %v", err)
	}
	t.Logf("this machine: source %s, used %d (%.1f MiB), limit %d (%.1f MiB), %.1f%%",
		src, used, float64(used)/memMiB, limit, float64(limit)/memMiB, float64(used)*100/float64(limit))
	if used == 0 || used > limit {
		t.Errorf("Sample = used %d, limit %d; want 0 < used <= limit", used, limit)
	}
	if !slices.Contains([]MemorySource{SourceCgroup2, SourceCgroup1, SourceHost}, src) {
		t.Errorf("Sample source = %q", src)
	}

	// The monitor's default sampler is this one.
	m, err := NewMemoryMonitor(MemoryOptions{Logger: memQuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Sample()
	if err != nil || st.Source != src || st.LimitBytes != limit || st.Percent <= 0 || st.Percent > 100 {
		t.Errorf("default monitor Sample = %+v, %v; want source %s, limit %d", st, err, src, limit)
	}
}

// memFakeSampler feeds percents of a 100000-byte limit in order, then
// repeats the last; a NaN gives an error.
type memFakeSampler struct {
	mu    sync.Mutex
	pcts  []float64
	next  int
	calls int
}

func (f *memFakeSampler) Sample() (uint64, uint64, MemorySource, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	p := f.pcts[min(f.next, len(f.pcts)-1)]
	f.next++
	if math.IsNaN(p) {
		return 0, 0, "", errors.New("fake sampler failure")
	}
	return uint64(math.Round(p * 1000)), 100000, SourceCgroup2, nil
}

func (f *memFakeSampler) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func memQuietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// memChanges records OnChange calls.
type memChanges struct {
	mu     sync.Mutex
	levels []MemoryLevel
	pcts   []float64
}

func (c *memChanges) record(st MemoryStatus) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.levels = append(c.levels, st.Level)
	c.pcts = append(c.pcts, st.Percent)
}

func (c *memChanges) get() []MemoryLevel {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.levels)
}

// memFeed samples every percent with a fresh monitor and returns the
// levels and the OnChange calls.
func memFeed(t *testing.T, opts MemoryOptions, pcts ...float64) (levels []MemoryLevel, changes *memChanges) {
	t.Helper()
	changes = &memChanges{}
	opts.Sampler = &memFakeSampler{pcts: pcts}
	opts.OnChange = changes.record
	opts.Logger = memQuietLogger()
	m, err := NewMemoryMonitor(opts)
	if err != nil {
		t.Fatal(err)
	}
	for i, p := range pcts {
		st, err := m.Sample()
		if err != nil {
			t.Fatalf("Sample %d: %v", i, err)
		}
		if st.Percent != p {
			t.Fatalf("Sample %d: percent %v, want %v", i, st.Percent, p)
		}
		if got := m.Status(); got != st {
			t.Fatalf("Status %+v after Sample %+v", got, st)
		}
		levels = append(levels, st.Level)
	}
	return levels, changes
}

const (
	memOK   = MemoryOK
	memWarn = MemoryWarning
	memCrit = MemoryCritical
)

func TestMemoryLevelSequence(t *testing.T) {
	levels, changes := memFeed(t, MemoryOptions{},
		50, 88, 89, 86, 84, 93, 92, 91.5, 90.9, 86, 84.9, 95, 80)
	want := []MemoryLevel{memOK, memWarn, memWarn, memWarn, memOK, memCrit, memCrit, memCrit, memWarn, memWarn, memOK, memCrit, memOK}
	if !slices.Equal(levels, want) {
		t.Errorf("levels = %v\nwant     %v", levels, want)
	}
	wantChanges := []MemoryLevel{memWarn, memOK, memCrit, memWarn, memOK, memCrit, memOK}
	if got := changes.get(); !slices.Equal(got, wantChanges) {
		t.Errorf("OnChange levels = %v, want %v", got, wantChanges)
	}
	if wantPcts := []float64{88, 84, 93, 90.9, 84.9, 95, 80}; !slices.Equal(changes.pcts, wantPcts) {
		t.Errorf("OnChange percents = %v, want %v", changes.pcts, wantPcts)
	}
}

func TestMemoryFirstSampleChange(t *testing.T) {
	for _, tc := range []struct {
		pct  float64
		want []MemoryLevel
	}{
		{10, nil},
		{86.99, nil},
		{87, []MemoryLevel{memWarn}},
		{93, []MemoryLevel{memCrit}},
		{100, []MemoryLevel{memCrit}},
	} {
		_, changes := memFeed(t, MemoryOptions{}, tc.pct)
		if got := changes.get(); !slices.Equal(got, tc.want) {
			t.Errorf("first sample %v%%: OnChange %v, want %v", tc.pct, got, tc.want)
		}
	}
}

func TestMemoryHoverDoesNotFlap(t *testing.T) {
	levels, changes := memFeed(t, MemoryOptions{},
		86.9, 87.0, 87.1, 86.5, 86.9, 87.0, 86.9, 85.1, 85, 87.2, 86)
	want := []MemoryLevel{memOK, memWarn, memWarn, memWarn, memWarn, memWarn, memWarn, memWarn, memWarn, memWarn, memWarn}
	if !slices.Equal(levels, want) {
		t.Errorf("levels = %v\nwant     %v", levels, want)
	}
	if got := changes.get(); !slices.Equal(got, []MemoryLevel{memWarn}) {
		t.Errorf("OnChange = %v, want one change to warning", got)
	}

	// The same at the critical threshold.
	levels, changes = memFeed(t, MemoryOptions{},
		92.9, 93.0, 93.1, 92.5, 93.0, 92.9, 91.1, 91, 93.4)
	want = []MemoryLevel{memWarn, memCrit, memCrit, memCrit, memCrit, memCrit, memCrit, memCrit, memCrit}
	if !slices.Equal(levels, want) {
		t.Errorf("levels = %v\nwant     %v", levels, want)
	}
	if got := changes.get(); !slices.Equal(got, []MemoryLevel{memWarn, memCrit}) {
		t.Errorf("OnChange = %v, want warning then critical", got)
	}
}

// The critical level is what refuses new sessions: where it starts and
// where it ends, with default and custom options.
func TestMemoryCriticalThresholds(t *testing.T) {
	levels, _ := memFeed(t, MemoryOptions{}, 92.99, 93, 91.01, 91, 90.99, 93, 50)
	want := []MemoryLevel{memWarn, memCrit, memCrit, memCrit, memWarn, memCrit, memOK}
	if !slices.Equal(levels, want) {
		t.Errorf("defaults: levels = %v\nwant     %v", levels, want)
	}

	custom := MemoryOptions{WarnPercent: 70, CriticalPercent: 80, Hysteresis: 5}
	levels, changes := memFeed(t, custom, 69.9, 70, 79.9, 80, 75.1, 75, 74.9, 65, 64.9, 80, 74)
	want = []MemoryLevel{memOK, memWarn, memWarn, memCrit, memCrit, memCrit, memWarn, memWarn, memOK, memCrit, memWarn}
	if !slices.Equal(levels, want) {
		t.Errorf("custom: levels = %v\nwant     %v", levels, want)
	}
	if got, w := changes.get(), []MemoryLevel{memWarn, memCrit, memWarn, memOK, memCrit, memWarn}; !slices.Equal(got, w) {
		t.Errorf("custom: OnChange = %v, want %v", got, w)
	}

	// Use above the limit counts as 100%.
	m, err := NewMemoryMonitor(MemoryOptions{Sampler: memFixedSampler{used: 2000, limit: 1000}, Logger: memQuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := m.Sample(); err != nil || st.Percent != 100 || st.Level != memCrit || st.UsedBytes != 2000 {
		t.Errorf("over the limit: %+v, %v", st, err)
	}
}

type memFixedSampler struct {
	used, limit uint64
	err         error
}

func (s memFixedSampler) Sample() (uint64, uint64, MemorySource, error) {
	return s.used, s.limit, SourceCgroup1, s.err
}

func TestNewMemoryMonitorOptions(t *testing.T) {
	for _, o := range []MemoryOptions{
		{WarnPercent: 90, CriticalPercent: 90},
		{WarnPercent: 95, CriticalPercent: 90},
		{WarnPercent: 95}, // above the default critical 93
		{CriticalPercent: 80},
		{CriticalPercent: 101},
		{WarnPercent: -1},
		{WarnPercent: math.NaN()},
		{Hysteresis: -1},
		{Interval: -time.Second},
	} {
		if _, err := NewMemoryMonitor(o); err == nil {
			t.Errorf("NewMemoryMonitor(%+v) accepted", o)
		}
	}

	m, err := NewMemoryMonitor(MemoryOptions{Sampler: memFixedSampler{used: 1, limit: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if m.warn != 87 || m.crit != 93 || m.hyst != 2 || m.interval != 5*time.Second || m.log == nil {
		t.Errorf("defaults: warn %v crit %v hyst %v interval %v", m.warn, m.crit, m.hyst, m.interval)
	}
	if got := m.Status(); got != (MemoryStatus{Level: MemoryOK}) {
		t.Errorf("Status before the first sample = %+v", got)
	}
	if _, err := NewMemoryMonitor(MemoryOptions{WarnPercent: 50, CriticalPercent: 100, Hysteresis: 0.5, Interval: time.Minute}); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
}

func TestMemorySampleError(t *testing.T) {
	changes := &memChanges{}
	f := &memFakeSampler{pcts: []float64{90, math.NaN(), 50}}
	m, err := NewMemoryMonitor(MemoryOptions{Sampler: f, OnChange: changes.record, Logger: memQuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	first, err := m.Sample()
	if err != nil || first.Level != memWarn {
		t.Fatalf("first Sample = %+v, %v", first, err)
	}
	st, err := m.Sample()
	if err == nil || st != first || m.Status() != first {
		t.Errorf("failing Sample = %+v, %v; want the previous status %+v and an error", st, err, first)
	}
	if st, err := m.Sample(); err != nil || st.Level != memOK {
		t.Errorf("Sample after the error = %+v, %v", st, err)
	}
	if got := changes.get(); !slices.Equal(got, []MemoryLevel{memWarn, memOK}) {
		t.Errorf("OnChange = %v", got)
	}

	m, err = NewMemoryMonitor(MemoryOptions{Sampler: memFixedSampler{used: 1}, Logger: memQuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Sample(); err == nil || !strings.Contains(err.Error(), "zero limit") {
		t.Errorf("zero limit: err = %v", err)
	}
}

func TestMemoryRunStopsOnCancel(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	changes := &memChanges{}
	f := &memFakeSampler{pcts: []float64{50, 90, 95, 95, 86}}
	var logs testutil.SyncBuffer
	m, err := NewMemoryMonitor(MemoryOptions{
		Interval: 10 * time.Millisecond,
		Sampler:  f,
		OnChange: changes.record,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	testutil.Eventually(t, 5*time.Second, "five samples", func() bool {
		_ = m.Status() // concurrent with Run, for the race detector
		return f.count() >= 5
	})
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	n := f.count()
	if got, want := changes.get(), []MemoryLevel{memWarn, memCrit, memWarn}; !slices.Equal(got, want) {
		t.Errorf("OnChange = %v, want %v", got, want)
	}
	if st := m.Status(); st.Level != memWarn || st.Percent != 86 {
		t.Errorf("Status after Run = %+v", st)
	}
	// Run is over: no sample after it returned (goleak also checks that
	// its goroutine and ticker are gone).
	m2, _ := NewMemoryMonitor(MemoryOptions{Sampler: f, Logger: memQuietLogger()})
	m2.Run(ctx) // already cancelled: returns without sampling
	if f.count() != n {
		t.Errorf("samples after Run returned: %d, then %d", n, f.count())
	}
}

func TestMemoryRunSamplesAtOnce(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	f := &memFakeSampler{pcts: []float64{95}}
	changes := &memChanges{}
	m, err := NewMemoryMonitor(MemoryOptions{Interval: time.Hour, Sampler: f, OnChange: changes.record, Logger: memQuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	testutil.Eventually(t, 5*time.Second, "the first sample", func() bool { return m.Status().Level == memCrit })
	cancel()
	<-done
	if f.count() != 1 {
		t.Errorf("samples = %d, want 1", f.count())
	}
	if got := changes.get(); !slices.Equal(got, []MemoryLevel{memCrit}) {
		t.Errorf("OnChange = %v", got)
	}
}

// Run logs a sampling error once, not every interval, and the recovery.
func TestMemoryRunLogsErrorsOnce(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	f := &memFakeSampler{pcts: []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN(), 40}}
	w := &testutil.SyncBuffer{}
	m, err := NewMemoryMonitor(MemoryOptions{Interval: 5 * time.Millisecond, Sampler: f, Logger: slog.New(slog.NewTextHandler(w, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	testutil.Eventually(t, 5*time.Second, "a good sample", func() bool { return m.Status().Percent == 40 })
	cancel()
	<-done
	out := w.String()
	if c := strings.Count(out, "cannot sample"); c != 1 {
		t.Errorf("error logged %d times:\n%s", c, out)
	}
	if !strings.Contains(out, "sampling memory use again") {
		t.Errorf("recovery not logged:\n%s", out)
	}
}

func TestProcessTreeRSSFixture(t *testing.T) {
	root := filepath.Join(memFixture("proctree"), "proc")
	page := uint64(os.Getpagesize())
	tests := []struct {
		pid  int
		want uint64
	}{
		// 100 "(weird ) name)": 2048 kB; 101: 1024 kB; 102: statm 25 pages;
		// 103: statm 10 pages; 104 vanished (its child 105: 512 kB);
		// 106 a zombie: 0. 200 ("x) S 100 (y", parent 1) is not in it.
		{100, (2048+1024+512)*memKiB + 35*page},
		{101, 1024*memKiB + 10*page},
		{102, 25*page + 512*memKiB},
		{105, 512 * memKiB},
		{200, 99999 * memKiB},
	}
	for _, tc := range tests {
		got, err := ProcessTreeRSS(root, tc.pid)
		if err != nil || got != tc.want {
			t.Errorf("ProcessTreeRSS(%d) = %d, %v; want %d", tc.pid, got, err, tc.want)
		}
	}
	for _, pid := range []int{999, 104, 107} {
		_, err := ProcessTreeRSS(root, pid)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(root, strconv.Itoa(pid))) {
			t.Errorf("ProcessTreeRSS(%d) error = %v; want one naming its file", pid, err)
		}
	}
	if _, err := ProcessTreeRSS(filepath.Join(t.TempDir(), "nope"), 1); err == nil {
		t.Error("ProcessTreeRSS on a missing proc root: no error")
	}
}

// memTestProc reads what the real-/proc test needs of one process, with
// its own parsing: parent, state, comm and VmRSS in bytes.
func memTestProc(pid int) (ppid int, state, comm string, rss uint64, err error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, "", "", 0, err
	}
	lp, rp := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	comm = string(stat[lp+1 : rp])
	f := strings.Fields(string(stat[rp+1:]))
	state = f[0]
	ppid, _ = strconv.Atoi(f[1])
	status, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, "", "", 0, err
	}
	defer status.Close()
	sc := bufio.NewScanner(status)
	for sc.Scan() {
		if v, found := strings.CutPrefix(sc.Text(), "VmRSS:"); found {
			kb, _ := strconv.ParseUint(strings.Fields(v)[0], 10, 64)
			rss = kb * 1024
		}
	}
	return ppid, state, comm, rss, sc.Err()
}

func TestProcessTreeRSSReal(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 60 & sleep 60 & wait")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	shell := cmd.Process.Pid
	t.Cleanup(func() {
		_ = syscall.Kill(-shell, syscall.SIGKILL) // its process group: the shell and both sleeps
		_ = cmd.Wait()
	})

	// The shell's children, once both have become sleeping `sleep`s and
	// the shell waits for them.
	var kids []int
	testutil.Eventually(t, 10*time.Second, "the shell's two sleeping children", func() bool {
		kids = kids[:0]
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return false
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			ppid, state, comm, _, err := memTestProc(pid)
			if err == nil && ppid == shell && comm == "sleep" && state == "S" {
				kids = append(kids, pid)
			}
		}
		_, state, _, _, err := memTestProc(shell)
		return err == nil && state == "S" && len(kids) == 2
	})

	sum := func() (total, shellRSS uint64) {
		for _, pid := range append([]int{shell}, kids...) {
			_, _, _, rss, err := memTestProc(pid)
			if err != nil {
				t.Fatalf("reading %d: %v", pid, err)
			}
			total += rss
			if pid == shell {
				shellRSS = rss
			}
		}
		return total, shellRSS
	}
	before, shellRSS := sum()
	got, err := ProcessTreeRSS("/proc", shell)
	if err != nil {
		t.Fatalf("ProcessTreeRSS: %v", err)
	}
	after, _ := sum()
	t.Logf("shell %d (%d B), children %v: tree %d B, own sum %d..%d B", shell, shellRSS, kids, got, before, after)
	if got <= shellRSS {
		t.Errorf("tree RSS %d not above the shell's own %d", got, shellRSS)
	}
	const tolerance = 64 * memKiB
	lo, hi := min(before, after), max(before, after)
	if got+tolerance < lo || got > hi+tolerance {
		t.Errorf("tree RSS %d, want the three processes' sum %d..%d (±%d)", got, lo, hi, tolerance)
	}

	// A child's own tree is just itself.
	_, _, _, kidRSS, _ := memTestProc(kids[0])
	if got, err := ProcessTreeRSS("/proc", kids[0]); err != nil || got+tolerance < kidRSS || got > kidRSS+tolerance {
		t.Errorf("ProcessTreeRSS(child) = %d, %v; want about %d", got, err, kidRSS)
	}
}
