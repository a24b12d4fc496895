// Package bytesize writes sizes for people, as messages name bounds and
// what went past them: 20 MiB, 1.5 MiB, 512 KiB, 300 bytes.
package bytesize

import "fmt"

// Format writes n bytes in the largest binary unit it reaches: whole
// mebibytes as such, others to a tenth; kibibytes whole; bytes below.
func Format(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
