package ports

import "slices"

// MaxListed is the most ports a Listing holds. The list is for a person
// picking a dev server, who reads a few dozen rows at most; and it is
// what bounds a ports.changed message: every port in it at most once
// added and once removed, about 210 bytes and 6 bytes each at most (a
// pid of 7 digits, a command of 15 bytes, each written as 6, a session
// id of 64), 22 KB in all, however many ports listen.
const MaxListed = 100

// Listing is what a browser is shown of the listening ports: the ports a
// preview could show (at or above a lowest port), at most MaxListed of
// them, and how many more there are.
type Listing struct {
	// Ports are lowest first. A Listing handed on is not changed after.
	Ports []Port
	// More counts the listening ports at or above the lowest that are
	// not in Ports.
	More int
}

// Bound returns the Listing of list, which is lowest first as List
// returns it, keeping the ports at or above lowest. Sessions' ports come
// before the others, lowest first, and the others fill what room is left,
// lowest first: with thousands of ports listening (a test suite's
// servers), the dev server an agent started stays listed.
func Bound(list []Port, lowest int) Listing {
	var sessions, others []Port // others: the lowest MaxListed only
	total := 0
	for _, p := range list {
		switch {
		case p.Port < lowest:
			continue
		case p.SessionID != "":
			sessions = append(sessions, p)
		case len(others) < MaxListed:
			others = append(others, p)
		}
		total++
	}
	n := min(len(sessions), MaxListed)
	kept := append(sessions[:n], others[:min(len(others), MaxListed-n)]...)
	slices.SortFunc(kept, func(a, b Port) int { return a.Port - b.Port })
	if kept == nil {
		kept = []Port{}
	}
	return Listing{Ports: kept, More: total - len(kept)}
}

// Equal reports whether l and o list the same ports, with the same
// processes, and count as many more.
func (l Listing) Equal(o Listing) bool { return l.More == o.More && slices.Equal(l.Ports, o.Ports) }

// Diff returns what changed from the ports from to the ports to, each
// lowest first with a port at most once: the ports of to that from has
// not, or has with another process or session (which replace them), and
// the ports of from that to has not. Either may be empty, never nil.
func Diff(from, to []Port) (added []Port, removed []int) {
	added, removed = []Port{}, []int{}
	i, j := 0, 0
	for i < len(from) || j < len(to) {
		switch {
		case j == len(to) || i < len(from) && from[i].Port < to[j].Port:
			removed = append(removed, from[i].Port)
			i++
		case i == len(from) || to[j].Port < from[i].Port:
			added = append(added, to[j])
			j++
		default:
			if from[i] != to[j] {
				added = append(added, to[j])
			}
			i++
			j++
		}
	}
	return added, removed
}
