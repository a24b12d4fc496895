package main

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// scaleFixture is a scale measurement of 4, 16 and 32 sessions on a
// 1 MiB scrollback whose raw figures make round derived ones.
func scaleFixture() *scaleResult {
	return &scaleResult{
		ClientsPerSession: 2, ScrollbackBytes: 1 << 20, GoalMiBPerSession: 3, WindowSeconds: 10, SettleWindowSeconds: 6, AfterSeconds: 30,
		Steps: []scaleStep{
			{Sessions: 4, Clients: 8, IdleMiB: 10, NeedMiB: 16, NeedSettled: true, BusyPeakMiB: 19, PeakMiB: 20, AfterStopMiB: 18, AfterStopSeconds: 30,
				TrickleSeconds: 10, TrickleCPUSeconds: 0.4, TricklePrintedBytes: 80e3, TrickleDiskBytes: 8e6,
				BusySeconds: 10, BusyCPUSeconds: 0.8, BusyDiskBytes: 4e6, PrintedBytes: 16e6, SessionMBpsMedian: 0.4, SessionMBpsMin: 0.38, MachineBusyCores: 1.2,
				QuietSeconds: 10, QuietCPUSeconds: 0.02, DatabaseBytes: 8 << 20},
			{Sessions: 16, Clients: 32, IdleMiB: 10, NeedMiB: 32, NeedSettled: true, BusyPeakMiB: 42, PeakMiB: 44, AfterStopMiB: 40, AfterStopSeconds: 30,
				TrickleSeconds: 10, TrickleCPUSeconds: 0.8, TricklePrintedBytes: 320e3, TrickleDiskBytes: 320e3,
				BusySeconds: 10, BusyCPUSeconds: 2.0, BusyDiskBytes: 40e6, PrintedBytes: 40e6, SessionMBpsMedian: 0.25, SessionMBpsMin: 0.2, MachineBusyCores: 2,
				QuietSeconds: 10, QuietCPUSeconds: 0.08},
			{Sessions: 32, Clients: 64, IdleMiB: 10, NeedMiB: 60, NeedSettled: false, NeedSettleSeconds: 30, BusyPeakMiB: 100, PeakMiB: 106, AfterStopMiB: 90, AfterStopSeconds: 30.5,
				TrickleSeconds: 10, TrickleCPUSeconds: 1.6, TricklePrintedBytes: 640e3,
				BusySeconds: 10, BusyCPUSeconds: 2.4, PrintedBytes: 48e6, SessionMBpsMedian: 0.15, SessionMBpsMin: 0.1, MachineBusyCores: 2, MachineStealCores: 0.2,
				QuietSeconds: 10, Resyncs: 1, LostBytes: 4096},
		},
	}
}

// TestDeriveScale divides what the sessions add by their count, and the
// growth between counts by the sessions added.
func TestDeriveScale(t *testing.T) {
	r := scaleFixture()
	deriveScale(r)
	near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
	for i, want := range []struct {
		mib, cpu, cpuPerSession, msPerMB, quiet, quietPerSession float64
		afterRatio                                               float64
		afterMet                                                 bool
		trickleCPU, trickleCPUPerSession, tricklePrinted         float64
		trickleDisk, trickleDiskPerSession, trickleDiskPerPrint  float64
		busyPrinted, busyDisk, busyDiskPerSession, busyDiskPer   float64
	}{
		{2.5, 8, 2, 50, 0.2, 0.05, 1.125, true, 4, 1, 0.002, 0.8, 0.2, 100, 0.4, 0.4, 0.1, 0.25},
		{2.125, 20, 1.25, 50, 0.8, 0.05, 1.25, true, 8, 0.5, 0.002, 0.032, 0.002, 1, 0.25, 4, 0.25, 1},
		{3, 24, 0.75, 50, 0, 0, 1.5, false, 16, 0.5, 0.002, 0, 0, 0, 0.15, 0, 0, 0},
	} {
		s := r.Steps[i]
		if !near(s.MiBPerSession, want.mib) || !near(s.BusyCPUPercent, want.cpu) || !near(s.BusyCPUPercentPerSession, want.cpuPerSession) ||
			!near(s.BusyCPUMsPerMB, want.msPerMB) || !near(s.QuietCPUPercent, want.quiet) || !near(s.QuietCPUPercentPerSession, want.quietPerSession) ||
			!near(s.AfterStopRatio, want.afterRatio) || s.AfterStopMet != want.afterMet ||
			!near(s.TrickleCPUPercent, want.trickleCPU) || !near(s.TrickleCPUPercentPerSession, want.trickleCPUPerSession) ||
			!near(s.TricklePrintedMBpsPerSession, want.tricklePrinted) || !near(s.TrickleDiskMBps, want.trickleDisk) ||
			!near(s.TrickleDiskMBpsPerSession, want.trickleDiskPerSession) || !near(s.TrickleDiskPerPrinted, want.trickleDiskPerPrint) ||
			!near(s.BusyPrintedMBpsPerSession, want.busyPrinted) || !near(s.BusyDiskMBps, want.busyDisk) ||
			!near(s.BusyDiskMBpsPerSession, want.busyDiskPerSession) || !near(s.BusyDiskPerPrinted, want.busyDiskPer) {
			t.Errorf("%d sessions: %+v, want %+v", s.Sessions, s, want)
		}
	}
	if len(r.Increments) != 2 {
		t.Fatalf("increments %+v, want 2", r.Increments)
	}
	for i, want := range []scaleIncrement{
		{FromSessions: 4, ToSessions: 16, MiBPerSession: 2, BusyCPUPercentPerSession: 1, QuietCPUPercentPerSession: 0.05},
		{FromSessions: 16, ToSessions: 32, MiBPerSession: 3.875, BusyCPUPercentPerSession: 0.25, QuietCPUPercentPerSession: -0.05},
	} {
		in := r.Increments[i]
		if in.FromSessions != want.FromSessions || in.ToSessions != want.ToSessions || !near(in.MiBPerSession, want.MiBPerSession) ||
			!near(in.BusyCPUPercentPerSession, want.BusyCPUPercentPerSession) || !near(in.QuietCPUPercentPerSession, want.QuietCPUPercentPerSession) {
			t.Errorf("increment %d: %+v, want %+v", i, in, want)
		}
	}

	// Derived twice, the figures stay; a count measured alone has no
	// increment; without a need read, the figure after the stop has no
	// ratio and does not meet the goal.
	deriveScale(r)
	if len(r.Increments) != 2 || !near(r.Steps[0].MiBPerSession, 2.5) || !r.Steps[0].AfterStopMet {
		t.Errorf("derived again: %+v", r)
	}
	one := &scaleResult{GoalMiBPerSession: 3, Steps: r.Steps[:1]}
	deriveScale(one)
	if len(one.Increments) != 0 {
		t.Errorf("one count: increments %+v", one.Increments)
	}
	none := &scaleResult{Steps: []scaleStep{{Sessions: 1, AfterStopMiB: 20}}}
	deriveScale(none)
	if s := none.Steps[0]; s.AfterStopRatio != 0 || s.AfterStopMet {
		t.Errorf("no need read: %+v", s)
	}
}

// TestScaleRows writes a row for each count and one for the growth, with
// the goals met or missed, clients that lost output called wrong, and
// quiet CPU below a clock tick said so.
func TestScaleRows(t *testing.T) {
	r := scaleFixture()
	deriveScale(r)
	rows := scaleRows(r, 2)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4: %q", len(rows), rows)
	}
	for i, want := range []struct {
		what    string
		results []string
		not     []string
	}{
		{"scale: 4 sessions with full rings, 2 acknowledging clients each", []string{
			"RSS 10.0 MiB before the sessions, 16.0 with the rings full, idle (what they need), 19.0 printing (peak), " +
				"18.0 30 s after the stop (1.12 times the need, goal within 25 %: met; the database's map 0.0), 20.0 at the most: 2.50 MiB a session, of which 1 MiB is its scrollback (goal under 3 MiB: met)",
			"trickling 2.0 kB/s a session: server CPU 4.0 % of a core, 1.00 % a session, disk writes 800.0 kB/s, 200.0 a session, 100.0 times what was printed;",
			"printing: server CPU 8.0 % of a core, 2.00 % a session, 50 ms a MB printed; the sessions printed 0.400 MB/s each (mean; median 0.400, min 0.380), the machine busy 1.2 of 2 cores;",
			"disk writes 0.40 MB/s, 0.100 a session, 0.25 times what was printed;",
			"quiet, the clients attached: server CPU 0.20 % of a core, 0.050 % a session; the data directory 8 MiB at the end",
		}, []string{"WRONG", "taken by the host", "still moving"}},
		{"scale: 16 sessions", []string{"2.12 MiB a session", "goal under 3 MiB: met", "1.25 % a session", "1.25 times the need, goal within 25 %: met",
			"disk writes 32.0 kB/s, 2.0 a session, 1.0 times what was printed", "disk writes 4.00 MB/s, 0.250 a session, 1.00 times what was printed"}, []string{"WRONG"}},
		{"scale: 32 sessions", []string{
			"60.0 with the rings full, idle (what they need) (still moving after 30 s)", "90.0 30 s after the stop (1.50 times the need, goal within 25 %: MISSED",
			"106.0 at the most: 3.00 MiB a session", "goal under 3 MiB: MISSED",
			"the machine busy 2.0 of 2 cores, 0.2 taken by the host", "server CPU under 0.10 % of a core (one clock tick in 10 s)",
			"WRONG: acknowledging clients lost 4 KiB in 1 resyncs",
		}, nil},
		{"scale: what each session added, from 4 to 16 / 16 to 32 sessions", []string{
			"RSS 2.00 / 3.88 MiB (goal under 3 MiB: MISSED); server CPU printing 1.00 / 0.25 % of a core, quiet 0.050 / -0.050 %",
		}, nil},
	} {
		row := rows[i]
		if !strings.HasPrefix(row[0], want.what) {
			t.Errorf("row %d is %q, want %q", i, row[0], want.what)
		}
		for _, s := range want.results {
			if !strings.Contains(row[1], s) {
				t.Errorf("row %q lacks %q:\n%s", row[0], s, row[1])
			}
		}
		for _, s := range want.not {
			if strings.Contains(row[1], s) {
				t.Errorf("row %q has %q:\n%s", row[0], s, row[1])
			}
		}
	}
}

// TestProcessCPU counts this process's CPU time as it spins, and the
// machine's with it.
func TestProcessCPU(t *testing.T) {
	const spin = 50 * time.Millisecond
	m0, err := machineCPU()
	if err != nil {
		t.Fatal(err)
	}
	c0, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	var c1 time.Duration
	for c1-c0 < spin {
		if time.Now().After(deadline) {
			t.Fatalf("CPU time went from %v to %v in 10 s of spinning, want %v more", c0, c1, spin)
		}
		for i := 0; i < 1e6; i++ {
			_ = i * i
		}
		if c1, err = processCPU(os.Getpid()); err != nil {
			t.Fatal(err)
		}
	}
	m1, err := machineCPU()
	if err != nil {
		t.Fatal(err)
	}
	if m1.busy <= m0.busy {
		t.Errorf("the machine's busy ticks went from %d to %d while this process spun", m0.busy, m1.busy)
	}
	if _, err := processCPU(-1); err == nil {
		t.Error("process -1 read")
	}
}

// TestProcessDiskWrites counts what this process wrote to a file once it
// is on the disk.
func TestProcessDiskWrites(t *testing.T) {
	const size = 1 << 20
	before, err := processDiskWrites(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "written"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(bytes.Repeat([]byte("x"), size)); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	after, err := processDiskWrites(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after-before < size {
		t.Errorf("write_bytes went from %d to %d after writing and syncing %d bytes (is %s on tmpfs?)", before, after, size, os.TempDir())
	}
	if _, err := processDiskWrites(-1); err == nil {
		t.Error("process -1 read")
	}
}
