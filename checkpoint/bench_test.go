package checkpoint

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// objectBytes is the size of the files under the repository's object
// store.
func objectBytes(b *testing.B, repo string) int64 {
	b.Helper()
	var n int64
	err := filepath.WalkDir(filepath.Join(repo, ".git", "objects"), func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err == nil {
			n += fi.Size()
		}
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return n
}

// BenchmarkTakeBigUntracked: the case, an untracked file of 150
// MB of random bytes changed before each checkpoint, with the default
// limits (skipped) and with none (kept, as before they were). It
// reports how much each checkpoint grew .git/objects.
func BenchmarkTakeBigUntracked(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"skipped", Options{}},
		{"kept", Options{MaxFileSize: -1, MaxTotalSize: -1}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			repo := newRepo(b, map[string]string{"a.txt": "a\n"})
			big := make([]byte, 150_000_000)
			if _, err := rand.Read(big); err != nil {
				b.Fatal(err)
			}
			ctx := b.Context()
			before := objectBytes(b, repo)
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				binary.LittleEndian.PutUint64(big, uint64(i))
				if err := os.WriteFile(filepath.Join(repo, "model.bin"), big, 0o644); err != nil {
					b.Fatal(err)
				}
				writeFile(b, repo, "a.txt", fmt.Sprintf("turn %d\n", i))
				b.StartTimer()
				if _, created, err := Take(ctx, repo, session, bc.opts); err != nil || !created {
					b.Fatalf("Take: %v, created %v", err, created)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(objectBytes(b, repo)-before)/1e6/float64(b.N), "objects-MB/op")
		})
	}
}

// BenchmarkTake: a tree of 20,000 tracked files and 200 untracked ones,
// one of each changed before each checkpoint: the cost of listing the
// untracked files and the gitlinks, and sizing them, beside git add's.
func BenchmarkTake(b *testing.B) {
	repo := newRepo(b, nil)
	for i := range 20_000 {
		writeFile(b, repo, fmt.Sprintf("src/d%02d/f%05d.txt", i/1000, i), strings.Repeat(fmt.Sprintf("line %d\n", i), 10))
	}
	gitT(b, repo, "add", "-A")
	gitT(b, repo, "commit", "-q", "-m", "files")
	for i := range 200 {
		writeFile(b, repo, fmt.Sprintf("out/u%03d.txt", i), fmt.Sprintf("untracked %d\n", i))
	}
	ctx := b.Context()
	if _, _, err := Take(ctx, repo, session, Options{}); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		writeFile(b, repo, "src/d00/f00000.txt", fmt.Sprintf("turn %d\n", i))
		writeFile(b, repo, "out/u000.txt", fmt.Sprintf("turn %d\n", i))
		b.StartTimer()
		if _, created, err := Take(ctx, repo, session, Options{}); err != nil || !created {
			b.Fatalf("Take: %v, created %v", err, created)
		}
	}
}
