package changes

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// bigRepo makes a repository of files files in files/10 directories, with
// a first commit, once per benchmark run.
func bigRepo(b *testing.B, files int) string {
	b.Helper()
	dir := b.TempDir()
	gitT(b, dir, "init", "-q")
	for i := range files {
		p := filepath.Join(dir, "src", fmt.Sprintf("d%03d", i/1000), fmt.Sprintf("e%04d", i/10), fmt.Sprintf("f%d.txt", i%10))
		if i%10 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		if err := os.WriteFile(p, []byte(strings.Repeat(fmt.Sprintf("line of file %d\n", i), 20)), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	gitT(b, dir, "add", "-A")
	gitT(b, dir, "commit", "-q", "-m", "first")
	gitT(b, dir, "update-index", "-q", "--refresh")
	return dir
}

// cpu returns the CPU time this process and its waited-for children have
// used.
func cpu() time.Duration {
	var self, kids syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	_ = syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	t := func(r syscall.Rusage) time.Duration {
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	return t(self) + t(kids)
}

// BenchmarkTrackerUpdate: a repository of 50,000 files with 100 changed;
// each op writes one more file and updates the summary with that path, as
// the live summary does after a write. It reports the CPU (git included)
// and the wall time of an update; the first, whole-tree summary is
// reported once.
func BenchmarkTrackerUpdate(b *testing.B) {
	dir := bigRepo(b, 50_000)
	for i := range 100 {
		p := filepath.Join(dir, "src", fmt.Sprintf("d%03d", i*500/1000), fmt.Sprintf("e%04d", i*50), "f1.txt")
		f, err := os.OpenFile(p, os.O_APPEND|os.O_WRONLY, 0)
		if err != nil {
			b.Fatal(err)
		}
		fmt.Fprintf(f, "changed %d\n", i)
		f.Close()
	}
	ctx := context.Background()
	tr := NewTracker(dir, "")
	c0, t0 := cpu(), time.Now()
	s, err := tr.Update(ctx, nil)
	if err != nil || len(s.Files) != 100 {
		b.Fatalf("first summary: %d files, %v", len(s.Files), err)
	}
	fullCPU, fullWall := cpu()-c0, time.Since(t0)

	b.ResetTimer()
	c0 = cpu()
	for i := 0; i < b.N; i++ {
		rel := fmt.Sprintf("src/d%03d/e%04d/f2.txt", (i%5000)/100, i%5000)
		if err := os.WriteFile(filepath.Join(dir, rel), []byte(fmt.Sprintf("rewritten %d\n", i)), 0o644); err != nil {
			b.Fatal(err)
		}
		s, err := tr.Update(ctx, []string{rel})
		if err != nil || len(s.Files) < 101 {
			b.Fatalf("update %d: %d files, %v", i, len(s.Files), err)
		}
	}
	b.ReportMetric(float64((cpu()-c0).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	b.ReportMetric(float64(fullCPU.Milliseconds()), "full-cpu-ms")
	b.ReportMetric(float64(fullWall.Milliseconds()), "full-wall-ms")
}
