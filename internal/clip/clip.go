// Package clip bounds text that came from outside (a request, a client's
// message, a program's output) before it is quoted back to people, so a
// reply or a notification does not grow with what was sent.
package clip

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

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

// Tail returns s when it is at most max bytes long; otherwise head
// followed by its last max bytes or fewer, cut at a character boundary:
// the end of a log, where what matters is.
func Tail(s string, max int, head string) string {
	if len(s) <= max {
		return s
	}
	cut := len(s) - max
	for cut < len(s) && !utf8.RuneStart(s[cut]) {
		cut++
	}
	return head + s[cut:]
}

// Limits of what a reply quotes.
const (
	// Quoted is how much of one outside value Quote keeps: enough to
	// recognise a path, a name or a branch, never a whole request.
	Quoted = 200
	// Reply bounds a whole error message as it leaves the server, the
	// last guard for a message that quoted something without Quote.
	Reply = 4 << 10
)

// Quote returns s clipped to Quoted bytes, as a Go-syntax quoted string
// (what %q gives): how an error names a value it was sent.
func Quote(s string) string { return strconv.Quote(String(s, Quoted, "...")) }

// Message bounds an error message that is about to be sent to a client.
func Message(s string) string { return String(s, Reply, " [message clipped]") }

// Listed is how many items List names before it counts the rest.
const Listed = 10

// List joins items for a message: the first Listed of them, then how many
// more there are, so a message naming files stays short however many.
func List(items []string) string {
	s := strings.Join(items[:min(len(items), Listed)], ", ")
	if n := len(items) - Listed; n > 0 {
		s += " and " + strconv.Itoa(n) + " more"
	}
	return s
}
