package checkpoint

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The bounds of the skipped files a checkpoint names in its message: a
// tree of a million big files must not make a message of megabytes,
// read back at every listing. The rest are counted.
const (
	maxListed      = 100
	maxListedBytes = 16 << 10
)

// The lines of a checkpoint's message that name what it left out:
// "Agentmux-Skipped: <reason> <size> <path, Go-quoted>" for each listed,
// then "Agentmux-Skipped-More: <count>" for the rest. A path is quoted
// so that no byte of it (a newline, a NUL) can make another line.
const (
	skippedKey     = "Agentmux-Skipped: "
	skippedMoreKey = "Agentmux-Skipped-More: "
)

// tooBig returns the untracked files, of files (relative to the top),
// that opts leaves out, biggest first. A file gone since git listed it
// is not counted: git add finds it gone too.
func (r *repo) tooBig(files []string, opts Options) ([]Skipped, error) {
	maxFile, maxTotal := opts.maxFile(), opts.maxTotal()
	if maxFile < 0 && maxTotal < 0 {
		return nil, nil
	}
	sized := make([]Skipped, 0, len(files))
	for _, p := range files {
		fi, err := os.Lstat(filepath.Join(r.top, filepath.FromSlash(p)))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("size the untracked file %s for a checkpoint: %w", p, err)
		}
		sized = append(sized, Skipped{Path: p, Size: fi.Size()})
	}
	// Smallest first, so the total keeps as many files as it can.
	slices.SortFunc(sized, func(a, b Skipped) int {
		return cmp.Or(cmp.Compare(a.Size, b.Size), strings.Compare(a.Path, b.Path))
	})
	var skipped []Skipped
	var total int64
	for _, f := range sized {
		switch {
		case maxFile >= 0 && f.Size > maxFile:
			f.Reason = OverFileLimit
		case maxTotal >= 0 && total+f.Size > maxTotal:
			f.Reason = OverTotal
		default:
			total += f.Size
			continue
		}
		skipped = append(skipped, f)
	}
	slices.Reverse(skipped)
	return skipped, nil
}

// skippedPaths returns the paths of skipped.
func skippedPaths(skipped []Skipped) []string {
	paths := make([]string, len(skipped))
	for i, s := range skipped {
		paths[i] = s.Path
	}
	return paths
}

// listSkipped cuts skipped, biggest first, to what a message names, and
// counts the rest.
func listSkipped(skipped []Skipped) (listed []Skipped, more int) {
	n := 0
	for i, s := range skipped {
		n += len(skippedLine(s))
		if i == maxListed || n > maxListedBytes {
			return skipped[:i], len(skipped) - i
		}
	}
	return skipped, 0
}

// skippedLine is the message line that names s.
func skippedLine(s Skipped) string {
	return skippedKey + s.Reason + " " + strconv.FormatInt(s.Size, 10) + " " + strconv.Quote(s.Path) + "\n"
}

// skippedMessage is the part of a checkpoint's message that names what
// it left out: nothing when it left out nothing, else a blank line and
// the lines.
func skippedMessage(listed []Skipped, more int) string {
	if len(listed) == 0 && more == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n")
	for _, s := range listed {
		b.WriteString(skippedLine(s))
	}
	if more > 0 {
		fmt.Fprintf(&b, "%s%d\n", skippedMoreKey, more)
	}
	return b.String()
}

// parseSkipped reads what a checkpoint's message body says it left out.
// Lines it does not know, or cannot read, are not its: a message is
// agentmux's, but a ref can be written by anyone.
func parseSkipped(body string) (skipped []Skipped, more int) {
	for line := range strings.Lines(body) {
		line = strings.TrimSuffix(line, "\n")
		if rest, ok := strings.CutPrefix(line, skippedMoreKey); ok {
			if n, err := strconv.Atoi(rest); err == nil && n > 0 {
				more = n
			}
			continue
		}
		rest, ok := strings.CutPrefix(line, skippedKey)
		if !ok || len(skipped) == maxListed {
			continue
		}
		reason, rest, _ := strings.Cut(rest, " ")
		size, quoted, _ := strings.Cut(rest, " ")
		n, err := strconv.ParseInt(size, 10, 64)
		if err != nil || n < 0 || (reason != OverFileLimit && reason != OverTotal) {
			continue
		}
		p, err := strconv.Unquote(quoted)
		if err != nil || p == "" {
			continue
		}
		skipped = append(skipped, Skipped{Path: p, Size: n, Reason: reason})
	}
	return skipped, more
}

// sameSkipped reports whether two checkpoints left out the same files,
// whatever their sizes: a log that grows past the limit at every turn
// makes no new checkpoint of an unchanged tree.
func sameSkipped(a []Skipped, aMore int, b []Skipped, bMore int) bool {
	if aMore != bMore || len(a) != len(b) {
		return false
	}
	pa, pb := skippedPaths(a), skippedPaths(b)
	slices.Sort(pa)
	slices.Sort(pb)
	return slices.Equal(pa, pb)
}
