// Package clip bounds text that came from outside (a request, a client's
// message, a program's output) before it is quoted back to people, so a
// reply or a notification does not grow with what was sent.
package clip

import "unicode/utf8"

// String returns s when it is at most max bytes long; otherwise its first
// max bytes or fewer, cut at a character boundary, followed by tail.
func String(s string, max int, tail string) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + tail
}
