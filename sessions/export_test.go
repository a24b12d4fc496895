package sessions

// HookSecret returns the secret of s's current run, which its agent's
// hooks carry: external tests call Hook as the agent's hooks would.
func HookSecret(s *Session) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.run.secret
}
