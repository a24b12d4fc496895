package main

import (
	"context"
	"fmt"
	"time"
)

// floodWorkload is a program that prints without end.
type floodWorkload struct {
	Name string
	// What says what the program does, for the report.
	What string
	Argv []string
}

// floodWorkloads are the floods measured: one far faster than any client
// can take, one steady flood at rate bytes per second, and a build log
// slow enough that frames leave on the batch timer.
func floodWorkloads(self string, rate int64) []floodWorkload {
	return []floodWorkload{
		{"saturating", "yes, as fast as the terminal takes it", yesCommand},
		{"paced", fmt.Sprintf("a steady %.0f MB/s", float64(rate)/1e6), writerCommand(self, rate, 0)},
		{"build-log", "bursts of short lines, about 0.4 MB/s", buildLogCommand},
	}
}

// floodResult is what one client saw of a flood during a set time.
type floodResult struct {
	Name            string  `json:"name"`
	What            string  `json:"what"`
	DurationSeconds float64 `json:"durationSeconds"`
	Frames          int     `json:"frames"`
	FramesPerSecond float64 `json:"framesPerSecond"`
	AvgFrameBytes   float64 `json:"avgFrameBytes"`
	DeliveredMBps   float64 `json:"deliveredMBps"`
	Resyncs         int     `json:"resyncs"`
	LostBytes       uint64  `json:"lostBytes"`
}

// measureFlood watches one client's view of the workload for d.
func measureFlood(ctx context.Context, e *benchEnv, w floodWorkload, d time.Duration) (*floodResult, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	r, err := e.newReadySession(ctx, "bench flood "+w.Name, w.Argv)
	if err != nil {
		return nil, err
	}
	defer r.close()
	s, c, st := r.session, r.c, r.st
	start := time.Now()
	if err := c.input(s.ID, "\n"); err != nil {
		return nil, err
	}
	var f frame
	for time.Since(start) < d {
		if err := c.next(&f, frameTimeout); err != nil {
			return nil, fmt.Errorf("read the flood: %w", err)
		}
		st.apply(&f, s.ID)
		if st.exited {
			return nil, fmt.Errorf("the flood program ended (exit code %d)", st.exitCode)
		}
	}
	elapsed := time.Since(start)
	return &floodResult{
		Name:            w.Name,
		What:            w.What,
		DurationSeconds: elapsed.Seconds(),
		Frames:          st.frames,
		FramesPerSecond: float64(st.frames) / elapsed.Seconds(),
		AvgFrameBytes:   float64(st.dataBytes) / float64(max(st.frames, 1)),
		DeliveredMBps:   mbps(st.dataBytes, elapsed),
		Resyncs:         st.resyncs,
		LostBytes:       st.lostBytes,
	}, nil
}
