package main

import (
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

// scaleFixture is a scale measurement of 4, 16 and 32 sessions on a
// 1 MiB scrollback whose raw figures make round derived ones.
func scaleFixture() *scaleResult {
	return &scaleResult{
		ClientsPerSession: 2, ScrollbackBytes: 1 << 20, GoalMiBPerSession: 3, WindowSeconds: 10, SettleWindowSeconds: 6,
		Steps: []scaleStep{
			{Sessions: 4, Clients: 8, IdleMiB: 10, BusyPeakMiB: 19, PeakMiB: 20, QuietMiB: 18, QuietSettled: true,
				BusySeconds: 10, BusyCPUSeconds: 0.8, PrintedBytes: 16e6, SessionMBpsMedian: 0.4, SessionMBpsMin: 0.38, MachineBusyCores: 1.2,
				QuietSeconds: 10, QuietCPUSeconds: 0.02},
			{Sessions: 16, Clients: 32, IdleMiB: 10, BusyPeakMiB: 42, PeakMiB: 44, QuietMiB: 40, QuietSettled: true,
				BusySeconds: 10, BusyCPUSeconds: 2.0, PrintedBytes: 40e6, SessionMBpsMedian: 0.25, SessionMBpsMin: 0.2, MachineBusyCores: 2,
				QuietSeconds: 10, QuietCPUSeconds: 0.08},
			{Sessions: 32, Clients: 64, IdleMiB: 10, BusyPeakMiB: 100, PeakMiB: 106, QuietMiB: 90, QuietSettled: false, QuietSettleSeconds: 30,
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
	}{
		{2.5, 8, 2, 50, 0.2, 0.05},
		{2.125, 20, 1.25, 50, 0.8, 0.05},
		{3, 24, 0.75, 50, 0, 0},
	} {
		s := r.Steps[i]
		if !near(s.MiBPerSession, want.mib) || !near(s.BusyCPUPercent, want.cpu) || !near(s.BusyCPUPercentPerSession, want.cpuPerSession) ||
			!near(s.BusyCPUMsPerMB, want.msPerMB) || !near(s.QuietCPUPercent, want.quiet) || !near(s.QuietCPUPercentPerSession, want.quietPerSession) {
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
	// increment.
	deriveScale(r)
	if len(r.Increments) != 2 || !near(r.Steps[0].MiBPerSession, 2.5) {
		t.Errorf("derived again: %+v", r)
	}
	one := &scaleResult{GoalMiBPerSession: 3, Steps: r.Steps[:1]}
	deriveScale(one)
	if len(one.Increments) != 0 {
		t.Errorf("one count: increments %+v", one.Increments)
	}
}

// TestScaleRows writes a row for each count and one for the growth, with
// the goal met or missed, clients that lost output called wrong, and
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
		{"scale: 4 sessions printing a build log, 2 acknowledging clients each", []string{
			"RSS 10.0 MiB before the sessions, 19.0 printing (peak), 18.0 quiet (the database's map 0.0), 20.0 at the most: 2.50 MiB a session, of which 1 MiB is its scrollback (goal under 3 MiB: met)",
			"server CPU printing 8.0 % of a core, 2.00 % a session, 50 ms a MB printed", "printed 0.40 MB/s each (median; min 0.38), the machine busy 1.2 of 2 cores;",
			"quiet, the clients attached: server CPU 0.20 % of a core, 0.050 % a session",
		}, []string{"WRONG", "taken by the host", "still moving"}},
		{"scale: 16 sessions", []string{"2.12 MiB a session", "goal under 3 MiB: met", "1.25 % a session"}, []string{"WRONG"}},
		{"scale: 32 sessions", []string{
			"90.0 quiet (the database's map 0.0) (still moving after 30 s), 106.0 at the most: 3.00 MiB a session", "goal under 3 MiB: MISSED",
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
