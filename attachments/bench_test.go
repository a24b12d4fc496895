package attachments

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

// benchSize is an attachment at the default bound: a large screenshot or
// a PDF, the worst an upload may be.
const benchSize = 20 << 20

// benchPNG is benchSize bytes that read as a PNG.
func benchPNG() []byte {
	b := make([]byte, benchSize)
	copy(b, pngBytes)
	return b
}

// BenchmarkSave stores a 20 MiB image as an upload does: typed by its
// content, bounded while it streams, into a temporary file through the
// tree's os.Root, renamed. Compare BenchmarkBareCopy, the same bytes
// copied to a file and renamed with nothing checked.
func BenchmarkSave(b *testing.B) {
	body := benchPNG()
	tree := b.TempDir()
	s := New(Options{MaxFile: benchSize, MaxPerSession: 1 << 40})
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := "bench-" + strconv.Itoa(i)
		if _, err := s.Save(context.Background(), id, tree, "shot.png", bytes.NewReader(body)); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Drop(id, tree)
		b.StartTimer()
	}
}

// BenchmarkBareCopy is the floor BenchmarkSave is measured against.
func BenchmarkBareCopy(b *testing.B) {
	body := benchPNG()
	dir := b.TempDir()
	b.SetBytes(benchSize)
	b.ReportAllocs()
	for b.Loop() {
		tmp := filepath.Join(dir, "tmp")
		f, err := os.Create(tmp)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(f, bytes.NewReader(body)); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "shot.png")); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = os.Remove(filepath.Join(dir, "shot.png"))
		b.StartTimer()
	}
}
