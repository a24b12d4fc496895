// Package identity holds who did something in a shared session, as the
// things people leave behind record it: a queued prompt (sessions) and a
// review comment (review) name their author the same way, so one type
// serves both without either package importing the other.
//
// It owns no state and checks nothing: who a participant is, and whether
// the name they gave is acceptable, is decided where they connect.
package identity

// Author is who queued a prompt or wrote a comment: an id that stays the
// same across the author's reconnects, and the name they gave.
type Author struct {
	ID   string `json:"id"`
	Name string `json:"name"`
}
