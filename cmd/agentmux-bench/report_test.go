package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestReportTable prints a report with every measurement and checks what
// the rows say: the losses per run and per client, the fan-out's goal, and
// the memory target.
func TestReportTable(t *testing.T) {
	scale := scaleFixture()
	deriveScale(scale)
	r := &report{
		Date: "2026-11-23T00:00:00Z", GOOS: "linux", GOARCH: "amd64", NumCPU: 2, GoVersion: "go1.26", TTYDVersion: "1.7.7",
		Throughput: &throughputResult{
			FileBytes: 64 << 20,
			Runs: []throughputRun{
				{BareMBps: 200, Acking: serverRun{MBps: 150}, NotAcking: serverRun{MBps: 140, LostBytes: 0}, TTYDMBps: 120},
				{BareMBps: 210, Acking: serverRun{MBps: 160}, NotAcking: serverRun{MBps: 130, LostBytes: 700 << 10, Resyncs: 1}, TTYDMBps: 128},
			},
			TTYDMBpsMedian: 124, TTYDRatio: 0.6,
			BareMBpsMedian: 205,
			Acking:         serverSummary{MBpsMedian: 155, Ratio: 0.76, LostBytesPerRun: []uint64{0, 0}},
			NotAcking:      serverSummary{MBpsMedian: 135, Ratio: 0.66, Resyncs: 1, LostBytes: 700 << 10, LostPercent: 0.53, LostBytesPerRun: []uint64{0, 700 << 10}},
		},
		Echo: &echoResult{
			Tight:           echoStats{Keys: 2000, P50Micros: 100, P99Micros: 180, MeanMicros: 105, MaxMicros: 900},
			Typed:           echoStats{Keys: 600, P50Micros: 450, P99Micros: 1500, MeanMicros: 470, MaxMicros: 2100},
			BareTyped:       echoStats{Keys: 600, P50Micros: 180, P99Micros: 500, MeanMicros: 200, MaxMicros: 900},
			TypedPauseMinMs: 10, TypedPauseMaxMs: 50,
			TTYDTight: &echoStats{Keys: 2000, P50Micros: 120, P99Micros: 200},
			TTYDTyped: &echoStats{Keys: 600, P50Micros: 500, P99Micros: 1000},
		},
		Fanout: &fanoutResult{
			Clients: 20, FloodBytes: 32 << 20, RateMBps: 4,
			NotAcking: fanoutPair{
				Normal: fanoutRun{Clients: 20, PerClientMBpsMin: 4, PerClientMBpsMedian: 4, CompleteClients: 20},
				WithStall: fanoutRun{Clients: 20, PerClientMBpsMin: 3, PerClientMBpsMedian: 4, CompleteClients: 19, Resyncs: 1,
					LostBytes: 1 << 20, LostBytesMax: 1 << 20, Stalled: &stalledOutcome{Outcome: "resynced", Resyncs: 1, LostBytes: 30 << 20}},
				MinRatio: 0.75, MedianRatio: 1,
			},
			Acking: fanoutPair{
				Normal:    fanoutRun{Clients: 20, Acking: true, PerClientMBpsMin: 4, PerClientMBpsMedian: 4, CompleteClients: 20},
				WithStall: fanoutRun{Clients: 20, Acking: true, PerClientMBpsMin: 3.9, PerClientMBpsMedian: 4, CompleteClients: 20, Stalled: &stalledOutcome{Acked: true, Outcome: "resynced", Resyncs: 1, LostBytes: 29 << 20}},
				MinRatio:  0.97, MedianRatio: 1,
			},
		},
		RSS: &rssResult{
			Sessions: 4, Clients: 11, FillBytes: 2 << 20, FloodBytes: 8 << 20,
			IdleMiB: 10.5, FullSessionsMiB: 31.9, WithClientsMiB: 30.2, AfterFloodsMiB: 40.7, PeakMiB: 53.8, TargetMiB: 32,
			SettleWindowSeconds: 6, FloodSeconds: 2.5,
			Steps: map[string]rssStep{
				"full":        {MiB: 31.9, SettleSeconds: 10.5, Settled: true},
				"withClients": {MiB: 30.2, SettleSeconds: 7.9, Settled: true},
				"afterFloods": {MiB: 40.7, AnonMiB: 23.6, FileMiB: 17.1, SettleSeconds: 30, Settled: false,
					Where: memWhere{Anon: 23 << 20, Code: 3 << 20, Data: 4 << 20, Database: 9 << 20, Other: 1 << 20}},
			},
		},
		Scale: scale,
	}
	var b bytes.Buffer
	if err := r.writeTable(&b); err != nil {
		t.Fatal(err)
	}
	table := b.String()
	t.Logf("table:\n%s", table)
	row := func(what string) string {
		for line := range strings.Lines(table) {
			if strings.HasPrefix(line, "| "+what) {
				return line
			}
		}
		t.Errorf("no row %q in\n%s", what, table)
		return ""
	}
	for what, wants := range map[string][]string{
		"the same through the server to one client acknowledging every frame":          {"155 MB/s (median of 2; 150-160)", "ratio 0.76", "0 B lost in each of 2 runs"},
		"the same, client not acknowledging":                                           {"ratio 0.66", "lost per run 0 B, 700 KiB (0.53 %, 1 resyncs)"},
		"keystroke echo round trip, 2000 keys back to back":                            {"p50 100 µs, p99 180 µs"},
		"the same, 600 keys typed 10-50 ms apart":                                      {"p50 450 µs, p99 1.50 ms (mean 470 µs, max 2.10 ms)"},
		"the same typing straight into a PTY here (the floor)":                         {"p50 180 µs, p99 500 µs", "the server's p50 is 2.5 times it, p99 3.0 times"},
		"the same through ttyd 1.7.7":                                                  {"124 MB/s (median of 2; 120-128)", "ratio 0.60", "the acknowledging client's throughput is 1.25 times ttyd's"},
		"keys back to back through ttyd 1.7.7":                                         {"p50 120 µs, p99 200 µs"},
		"keys typed through ttyd 1.7.7":                                                {"p50 500 µs, p99 1.00 ms", "the server's p50 is 0.90 times it, p99 1.50 times"},
		"fan-out: 32 MiB at 4 MB/s to 20 clients not acknowledging":                    {"20/20 got everything", "each lost 0 B (0 resyncs)"},
		"the same plus one client that stops reading":                                  {"ratio to without: min 0.75, median 1.00)", "19/20", "lost per client min 0 B / median 0 B / max 1 MiB (1 resyncs)", "stalled client resynced (1 resyncs, 30 MiB lost)"},
		"fan-out: 32 MiB at 4 MB/s to 20 clients acknowledging every frame":            {"20/20 got everything"},
		"the same plus one client that acknowledges once and stops reading":            {"min 0.97, median 1.00; within 10 %: met", "stalled client resynced (1 resyncs, 29 MiB lost)"},
		"server RSS: idle / 4 full sessions (2 MiB each) / + 11 acknowledging clients": {"10.5 / 31.9 / 30.2 MiB"},
		"scale: 4 sessions with full rings, 2 acknowledging clients each":              {"2.50 MiB a session, of which 1 MiB is its scrollback (goal under 3 MiB: met)", "the machine busy 1.2 of 2 cores"},
		"scale: what each session added, from 4 to 16 / 16 to 32 sessions":             {"RSS 2.00 / 3.88 MiB (goal under 3 MiB: MISSED)"},
		"the same after each session printed 8 MiB more to them":                       {"40.7 MiB (target under 32 MiB: MISSED): Go heap, stacks and runtime 23.0, the binary's code 3.0 and data 4.0, the database's map 9.0, other files 1.0", "peak 53.8 MiB", "after 10.5 / 7.9 / 30.0 s, but afterFloods still moved after 30 s"},
	} {
		line := row(what)
		for _, want := range wants {
			if !strings.Contains(line, want) {
				t.Errorf("row %q lacks %q:\n%s", what, want, line)
			}
		}
	}

	// The goal is missed both ways: a stalled client that costs the
	// others, or one that speeds them up, means it changed them.
	for _, ratio := range []float64{0.85, 1.2} {
		if got := ratioGoal(fanoutPair{Normal: fanoutRun{Acking: true}, MinRatio: ratio, MedianRatio: 1}); !strings.Contains(got, "MISSED") {
			t.Errorf("ratio %v: %q", ratio, got)
		}
	}
	if got := ratioGoal(fanoutPair{MinRatio: 0.5, MedianRatio: 0.5}); got != "" {
		t.Errorf("readers not acknowledging have no goal, got %q", got)
	}
}

// TestLostPerRun writes one figure when every run lost the same.
func TestLostPerRun(t *testing.T) {
	for _, tc := range []struct {
		lost []uint64
		want string
	}{
		{nil, "nothing lost"},
		{[]uint64{0}, "0 B lost"},
		{[]uint64{0, 0, 0}, "0 B lost in each of 3 runs"},
		{[]uint64{0, 1 << 20, 1536}, "lost per run 0 B, 1 MiB, 1.5 KiB"},
	} {
		if got := lostPerRun(tc.lost); got != tc.want {
			t.Errorf("lostPerRun(%v) = %q, want %q", tc.lost, got, tc.want)
		}
	}
}

// The memory map of this test's own process adds up to its RSS, with the
// binary's code and the heap where they belong.
func TestProcessMemWhere(t *testing.T) {
	w, err := processMemWhere(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	m, err := processMem(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	sum := w.Anon + w.Code + w.Data + w.Database + w.Other
	if w.Anon == 0 || w.Code == 0 || w.Database != 0 {
		t.Errorf("where = %+v: want anonymous memory and code, and no database", w)
	}
	// Read one after the other: allow for what moved in between.
	if diff := max(sum, m.RSS) - min(sum, m.RSS); diff > m.RSS/10 {
		t.Errorf("the mappings add up to %d bytes, the RSS is %d", sum, m.RSS)
	}
}
