package memory

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
	kiB = 1024
	miB = 1024 * kiB
	giB = 1024 * miB
)

// fixture returns the path of a fixture tree under testdata/cgroup.
func fixture(name string) string {
	return filepath.Join("testdata", name)
}

// fakeHost returns a host reader giving fixed figures.
func fakeHost(total, available uint64, err error) func() (uint64, uint64, error) {
	return func() (uint64, uint64, error) { return total, available, err }
}

func TestCgroupSamplerFixtures(t *testing.T) {
	host8G := fakeHost(8*giB, 6*giB, nil)
	tests := []struct {
		root      string
		host      func() (uint64, uint64, error)
		wantUsed  uint64
		wantLimit uint64
		wantSrc   Source
	}{
		// memory.current 104857600 - inactive_file 10485760.
		{"v2-limit", host8G, 94371840, 268435456, SourceCgroup2},
		{"v2-nested", host8G, 536870912 - 36870912, 1073741824, SourceCgroup2},
		{"v2-mountroot", host8G, 1073741824 - 73741824, 2147483648, SourceCgroup2},
		{"v2-max", host8G, 2 * giB, 8 * giB, SourceHost},
		{"v2-clamp", host8G, 0, 268435456, SourceCgroup2},
		// usage 300000000 - total_inactive_file 50000000 (not inactive_file 1).
		{"v1-limit", host8G, 250000000, 536870912, SourceCgroup1},
		{"v1-nolimit", host8G, 2 * giB, 8 * giB, SourceHost},
		{"v1-rootdir", host8G, 500000000, 1073741824, SourceCgroup1},
		{"v1-flatstat", host8G, 400000000, 1073741824, SourceCgroup1},
		// No limit of its own, but a parent's: hierarchical_memory_limit.
		{"v1-parentlimit", host8G, 300000000, 1073741824, SourceCgroup1},
		{"none", host8G, 2 * giB, 8 * giB, SourceHost},
		// A limit at or above the host's memory is no limit.
		{"v1-limit", fakeHost(536870912, 136870912, nil), 400000000, 536870912, SourceHost},
		{"v2-limit", fakeHost(256*miB, 0, nil), 256 * miB, 256 * miB, SourceHost},
		// A host that cannot be read leaves the cgroup's limit in force.
		{"v2-limit", fakeHost(0, 0, errors.New("no meminfo")), 94371840, 268435456, SourceCgroup2},
	}
	for _, tc := range tests {
		t.Run(tc.root, func(t *testing.T) {
			s := &cgroupSampler{root: fixture(tc.root), host: tc.host}
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
		used, limit, src, err := NewCgroupSampler(fixture(root)).Sample()
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
	writeFile(t, dir, "proc/self/cgroup", "0::/\n")
	writeFile(t, dir, "sys/fs/cgroup/memory.max", strconv.FormatUint(vm.Total+giB, 10)+"\n")
	writeFile(t, dir, "sys/fs/cgroup/memory.current", "1000\n")
	writeFile(t, dir, "sys/fs/cgroup/memory.stat", "inactive_file 0\n")
	if _, limit, src, err := NewCgroupSampler(dir).Sample(); err != nil || src != SourceHost || limit != vm.Total {
		t.Errorf("limit above host: Sample = limit %d, %s, %v; want host, %d", limit, src, err, vm.Total)
	}
}

func writeFile(t *testing.T, root, rel, content string) {
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
	host8G := fakeHost(8*giB, 6*giB, nil)
	tests := []struct {
		root string
		host func() (uint64, uint64, error)
		want string // the file the error must name
	}{
		{fixture("v2-no-current"), host8G, filepath.Join(fixture("v2-no-current"), "sys/fs/cgroup/memory.current")},
		{fixture("v2-no-stat"), host8G, filepath.Join(fixture("v2-no-stat"), "sys/fs/cgroup/memory.stat")},
		{fixture("v2-bad-max"), host8G, filepath.Join(fixture("v2-bad-max"), "sys/fs/cgroup/memory.max")},
		{fixture("v1-no-usage"), host8G, filepath.Join(fixture("v1-no-usage"), "sys/fs/cgroup/memory/memory.usage_in_bytes")},
		{empty, host8G, filepath.Join(empty, "proc/self/cgroup")},
		// No limit, and the host cannot be read: that error comes back.
		{fixture("v2-max"), fakeHost(0, 0, errors.New("reading host memory: boom")), "reading host memory: boom"},
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
		src, used, float64(used)/miB, limit, float64(limit)/miB, float64(used)*100/float64(limit))
	if used == 0 || used > limit {
		t.Errorf("Sample = used %d, limit %d; want 0 < used <= limit", used, limit)
	}
	if !slices.Contains([]Source{SourceCgroup2, SourceCgroup1, SourceHost}, src) {
		t.Errorf("Sample source = %q", src)
	}

	// The monitor's default sampler is this one.
	m, err := NewMonitor(Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.Sample()
	if err != nil || st.Source != src || st.LimitBytes != limit || st.Percent <= 0 || st.Percent > 100 {
		t.Errorf("default monitor Sample = %+v, %v; want source %s, limit %d", st, err, src, limit)
	}
}

// fakeSampler feeds percents of a 100000-byte limit in order, then
// repeats the last; a NaN gives an error.
type fakeSampler struct {
	mu    sync.Mutex
	pcts  []float64
	next  int
	calls int
}

func (f *fakeSampler) Sample() (uint64, uint64, Source, error) {
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

func (f *fakeSampler) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// changeLog records observer calls.
type changeLog struct {
	mu     sync.Mutex
	levels []Level
	pcts   []float64
}

func (c *changeLog) record(st Status) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.levels = append(c.levels, st.Level)
	c.pcts = append(c.pcts, st.Percent)
}

func (c *changeLog) get() []Level {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.levels)
}

// feed samples every percent with a fresh monitor and returns the
// levels and the observer calls.
func feed(t *testing.T, opts Options, pcts ...float64) (levels []Level, changes *changeLog) {
	t.Helper()
	changes = &changeLog{}
	opts.Sampler = &fakeSampler{pcts: pcts}
	opts.Logger = quietLogger()
	m, err := NewMonitor(opts)
	if err != nil {
		t.Fatal(err)
	}
	m.Subscribe(changes.record)
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
	okLevel   = OK
	warnLevel = Warning
	crit      = Critical
)

func TestMemoryLevelSequence(t *testing.T) {
	levels, changes := feed(t, Options{},
		50, 88, 89, 86, 84, 93, 92, 91.5, 90.9, 86, 84.9, 95, 80)
	want := []Level{okLevel, warnLevel, warnLevel, warnLevel, okLevel, crit, crit, crit, warnLevel, warnLevel, okLevel, crit, okLevel}
	if !slices.Equal(levels, want) {
		t.Errorf("levels = %v\nwant     %v", levels, want)
	}
	wantChanges := []Level{warnLevel, okLevel, crit, warnLevel, okLevel, crit, okLevel}
	if got := changes.get(); !slices.Equal(got, wantChanges) {
		t.Errorf("observer levels = %v, want %v", got, wantChanges)
	}
	if wantPcts := []float64{88, 84, 93, 90.9, 84.9, 95, 80}; !slices.Equal(changes.pcts, wantPcts) {
		t.Errorf("observer percents = %v, want %v", changes.pcts, wantPcts)
	}
}

func TestMemoryFirstSampleChange(t *testing.T) {
	for _, tc := range []struct {
		pct  float64
		want []Level
	}{
		{10, nil},
		{86.99, nil},
		{87, []Level{warnLevel}},
		{93, []Level{crit}},
		{100, []Level{crit}},
	} {
		_, changes := feed(t, Options{}, tc.pct)
		if got := changes.get(); !slices.Equal(got, tc.want) {
			t.Errorf("first sample %v%%: observer %v, want %v", tc.pct, got, tc.want)
		}
	}
}

func TestMemoryHoverDoesNotFlap(t *testing.T) {
	levels, changes := feed(t, Options{},
		86.9, 87.0, 87.1, 86.5, 86.9, 87.0, 86.9, 85.1, 85, 87.2, 86)
	want := []Level{okLevel, warnLevel, warnLevel, warnLevel, warnLevel, warnLevel, warnLevel, warnLevel, warnLevel, warnLevel, warnLevel}
	if !slices.Equal(levels, want) {
		t.Errorf("levels = %v\nwant     %v", levels, want)
	}
	if got := changes.get(); !slices.Equal(got, []Level{warnLevel}) {
		t.Errorf("observer = %v, want one change to warning", got)
	}

	// The same at the critical threshold.
	levels, changes = feed(t, Options{},
		92.9, 93.0, 93.1, 92.5, 93.0, 92.9, 91.1, 91, 93.4)
	want = []Level{warnLevel, crit, crit, crit, crit, crit, crit, crit, crit}
	if !slices.Equal(levels, want) {
		t.Errorf("levels = %v\nwant     %v", levels, want)
	}
	if got := changes.get(); !slices.Equal(got, []Level{warnLevel, crit}) {
		t.Errorf("observer = %v, want warning then critical", got)
	}
}

// The critical level is what refuses new sessions: where it starts and
// where it ends, with default and custom options.
func TestMemoryCriticalThresholds(t *testing.T) {
	levels, _ := feed(t, Options{}, 92.99, 93, 91.01, 91, 90.99, 93, 50)
	want := []Level{warnLevel, crit, crit, crit, warnLevel, crit, okLevel}
	if !slices.Equal(levels, want) {
		t.Errorf("defaults: levels = %v\nwant     %v", levels, want)
	}

	custom := Options{WarnPercent: 70, CriticalPercent: 80, Hysteresis: 5}
	levels, changes := feed(t, custom, 69.9, 70, 79.9, 80, 75.1, 75, 74.9, 65, 64.9, 80, 74)
	want = []Level{okLevel, warnLevel, warnLevel, crit, crit, crit, warnLevel, warnLevel, okLevel, crit, warnLevel}
	if !slices.Equal(levels, want) {
		t.Errorf("custom: levels = %v\nwant     %v", levels, want)
	}
	if got, w := changes.get(), []Level{warnLevel, crit, warnLevel, okLevel, crit, warnLevel}; !slices.Equal(got, w) {
		t.Errorf("custom: observer = %v, want %v", got, w)
	}

	// Use above the limit counts as 100%.
	m, err := NewMonitor(Options{Sampler: fixedSampler{used: 2000, limit: 1000}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if st, err := m.Sample(); err != nil || st.Percent != 100 || st.Level != crit || st.UsedBytes != 2000 {
		t.Errorf("over the limit: %+v, %v", st, err)
	}
}

type fixedSampler struct {
	used, limit uint64
	err         error
}

func (s fixedSampler) Sample() (uint64, uint64, Source, error) {
	return s.used, s.limit, SourceCgroup1, s.err
}

func TestNewMemoryMonitorOptions(t *testing.T) {
	for _, o := range []Options{
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
		if _, err := NewMonitor(o); err == nil {
			t.Errorf("NewMonitor(%+v) accepted", o)
		}
	}

	m, err := NewMonitor(Options{Sampler: fixedSampler{used: 1, limit: 2}})
	if err != nil {
		t.Fatal(err)
	}
	if m.warn != 87 || m.crit != 93 || m.hyst != 2 || m.interval != 5*time.Second || m.log == nil {
		t.Errorf("defaults: warn %v crit %v hyst %v interval %v", m.warn, m.crit, m.hyst, m.interval)
	}
	if got := m.Status(); got != (Status{Level: OK}) {
		t.Errorf("Status before the first sample = %+v", got)
	}
	if _, err := NewMonitor(Options{WarnPercent: 50, CriticalPercent: 100, Hysteresis: 0.5, Interval: time.Minute}); err != nil {
		t.Errorf("valid options refused: %v", err)
	}
}

func TestMemorySampleError(t *testing.T) {
	changes := &changeLog{}
	f := &fakeSampler{pcts: []float64{90, math.NaN(), 50}}
	m, err := NewMonitor(Options{Sampler: f, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	m.Subscribe(changes.record)
	first, err := m.Sample()
	if err != nil || first.Level != warnLevel {
		t.Fatalf("first Sample = %+v, %v", first, err)
	}
	st, err := m.Sample()
	if err == nil || st != first || m.Status() != first {
		t.Errorf("failing Sample = %+v, %v; want the previous status %+v and an error", st, err, first)
	}
	if st, err := m.Sample(); err != nil || st.Level != okLevel {
		t.Errorf("Sample after the error = %+v, %v", st, err)
	}
	if got := changes.get(); !slices.Equal(got, []Level{warnLevel, okLevel}) {
		t.Errorf("observer = %v", got)
	}

	m, err = NewMonitor(Options{Sampler: fixedSampler{used: 1}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Sample(); err == nil || !strings.Contains(err.Error(), "zero limit") {
		t.Errorf("zero limit: err = %v", err)
	}
}

func TestMemoryRunStopsOnCancel(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	changes := &changeLog{}
	f := &fakeSampler{pcts: []float64{50, 90, 95, 95, 86}}
	var logs testutil.SyncBuffer
	m, err := NewMonitor(Options{
		Interval: 10 * time.Millisecond,
		Sampler:  f,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	m.Subscribe(changes.record)
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
	if got, want := changes.get(), []Level{warnLevel, crit, warnLevel}; !slices.Equal(got, want) {
		t.Errorf("observer = %v, want %v", got, want)
	}
	if st := m.Status(); st.Level != warnLevel || st.Percent != 86 {
		t.Errorf("Status after Run = %+v", st)
	}
	// Run is over: no sample after it returned (goleak also checks that
	// its goroutine and ticker are gone).
	m2, _ := NewMonitor(Options{Sampler: f, Logger: quietLogger()})
	m2.Run(ctx) // already cancelled: returns without sampling
	if f.count() != n {
		t.Errorf("samples after Run returned: %d, then %d", n, f.count())
	}
}

func TestMemoryRunSamplesAtOnce(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	f := &fakeSampler{pcts: []float64{95}}
	changes := &changeLog{}
	m, err := NewMonitor(Options{Interval: time.Hour, Sampler: f, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	m.Subscribe(changes.record)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	testutil.Eventually(t, 5*time.Second, "the first sample", func() bool { return m.Status().Level == crit })
	cancel()
	<-done
	if f.count() != 1 {
		t.Errorf("samples = %d, want 1", f.count())
	}
	if got := changes.get(); !slices.Equal(got, []Level{crit}) {
		t.Errorf("observer = %v", got)
	}
}

// Run logs a sampling error once, not every interval, and the recovery.
func TestMemoryRunLogsErrorsOnce(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())

	f := &fakeSampler{pcts: []float64{math.NaN(), math.NaN(), math.NaN(), math.NaN(), 40}}
	w := &testutil.SyncBuffer{}
	m, err := NewMonitor(Options{Interval: 5 * time.Millisecond, Sampler: f, Logger: slog.New(slog.NewTextHandler(w, nil))})
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
	root := filepath.Join(fixture("proctree"), "proc")
	page := uint64(os.Getpagesize())
	tests := []struct {
		pid  int
		want uint64
	}{
		// 100 "(weird ) name)": 2048 kB; 101: 1024 kB; 102: statm 25 pages;
		// 103: statm 10 pages; 104 vanished (its child 105: 512 kB);
		// 106 a zombie: 0. 200 ("x) S 100 (y", parent 1) is not in it.
		{100, (2048+1024+512)*kiB + 35*page},
		{101, 1024*kiB + 10*page},
		{102, 25*page + 512*kiB},
		{105, 512 * kiB},
		{200, 99999 * kiB},
	}
	// One reading of the tree answers for every pid, as ProcessTreeRSS does.
	tree, err := ReadProcessTree(root)
	if err != nil {
		t.Fatalf("ReadProcessTree: %v", err)
	}
	for _, tc := range tests {
		got, err := ProcessTreeRSS(root, tc.pid)
		if err != nil || got != tc.want {
			t.Errorf("ProcessTreeRSS(%d) = %d, %v; want %d", tc.pid, got, err, tc.want)
		}
		if got, err := tree.RSS(tc.pid); err != nil || got != tc.want {
			t.Errorf("tree.RSS(%d) = %d, %v; want %d", tc.pid, got, err, tc.want)
		}
	}
	for _, pid := range []int{999, 104, 107} {
		_, err := ProcessTreeRSS(root, pid)
		if err == nil || !strings.Contains(err.Error(), filepath.Join(root, strconv.Itoa(pid))) {
			t.Errorf("ProcessTreeRSS(%d) error = %v; want one naming its file", pid, err)
		}
		if _, err := tree.RSS(pid); err == nil || !strings.Contains(err.Error(), filepath.Join(root, strconv.Itoa(pid))) {
			t.Errorf("tree.RSS(%d) error = %v; want one naming its file", pid, err)
		}
	}
	if _, err := ProcessTreeRSS(filepath.Join(t.TempDir(), "nope"), 1); err == nil {
		t.Error("ProcessTreeRSS on a missing proc root: no error")
	}
}

// testProc reads what the real-/proc test needs of one process, with
// its own parsing: parent, state, comm and VmRSS in bytes.
func testProc(pid int) (ppid int, state, comm string, rss uint64, err error) {
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
			ppid, state, comm, _, err := testProc(pid)
			if err == nil && ppid == shell && comm == "sleep" && state == "S" {
				kids = append(kids, pid)
			}
		}
		_, state, _, _, err := testProc(shell)
		return err == nil && state == "S" && len(kids) == 2
	})

	sum := func() (total, shellRSS uint64) {
		for _, pid := range append([]int{shell}, kids...) {
			_, _, _, rss, err := testProc(pid)
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
	const tolerance = 64 * kiB
	lo, hi := min(before, after), max(before, after)
	if got+tolerance < lo || got > hi+tolerance {
		t.Errorf("tree RSS %d, want the three processes' sum %d..%d (±%d)", got, lo, hi, tolerance)
	}

	// A child's own tree is just itself.
	_, _, _, kidRSS, _ := testProc(kids[0])
	if got, err := ProcessTreeRSS("/proc", kids[0]); err != nil || got+tolerance < kidRSS || got > kidRSS+tolerance {
		t.Errorf("ProcessTreeRSS(child) = %d, %v; want about %d", got, err, kidRSS)
	}
}

// Admit follows the level: it refuses only while memory is critical,
// hysteresis included, and admits before the first sample.
func TestMemoryAdmit(t *testing.T) {
	m, err := NewMonitor(Options{Sampler: &fakeSampler{pcts: []float64{90, 93, 91.5, 90.9}}, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Admit(); err != nil {
		t.Fatalf("Admit before any sample = %v, want nil", err)
	}
	for i, want := range []error{nil, ErrCritical, ErrCritical, nil} {
		st, err := m.Sample()
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Admit(); !errors.Is(got, want) || (want == nil) != (got == nil) {
			t.Errorf("sample %d (%v%%, %s): Admit = %v, want %v", i, st.Percent, st.Level, got, want)
		}
	}
}
