package sessions

// PullRequest names the pull request of a session's branch on its forge:
// what agentmux opened, or found open, on the user's behalf. Its state,
// checks and reviews are the forge's, fetched as they are wanted (package
// pulls); only which one it is is kept with the session.
type PullRequest struct {
	// Number is the pull request's number in its repository.
	Number int `json:"number"`
	// URL is its page.
	URL string `json:"url"`
}

// SetPullRequest records the pull request of session id's branch, kept
// across restarts. It announces nothing to clients: what they are shown
// of a pull request comes with its state (session.pullRequest).
func (m *Manager) SetPullRequest(id string, pr PullRequest) error {
	return m.withListed(id, func(s *Session) error {
		if s.pullRequest != nil && *s.pullRequest == pr {
			return nil
		}
		s.pullRequest = &pr
		s.emit(Event{Kind: EventUpdated, Session: s.infoLocked()})
		return nil
	})
}
