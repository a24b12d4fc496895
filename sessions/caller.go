package sessions

import (
	"crypto/subtle"
)

// The agents agentmux runs may call it back (package agentmcp): each run
// of an agent gets a secret of its own in its environment, which names
// the session that calls. A run script's or a setup's run gets none: it
// is no agent.
const (
	// EnvMCPSecret holds the run's secret, sent as a bearer token.
	EnvMCPSecret = "AGENTMUX_MCP_SECRET"
	// EnvMCPURL holds the address of agentmux's MCP endpoint.
	EnvMCPURL = "AGENTMUX_MCP_URL"
)

// callerEnvLocked returns the variables that let the run being started
// call agentmux back, and keeps its secret. mu must be held.
func (s *Session) callerEnvLocked() []string {
	s.run.callerSecret = ""
	if s.callerURL == "" || s.setup.next || s.runOf != "" {
		return nil
	}
	s.run.callerSecret = newSecret()
	return []string{EnvMCPURL + "=" + s.callerURL, EnvMCPSecret + "=" + s.run.callerSecret}
}

// Caller returns the session whose running agent holds secret, the
// secret its run was given to call agentmux with. A secret of a run that
// ended names nobody.
func (m *Manager) Caller(secret string) (*Session, bool) {
	if secret == "" {
		return nil, false
	}
	for _, s := range m.List() {
		s.mu.Lock()
		ok := s.run.phase == phaseRunning && s.run.callerSecret != "" &&
			subtle.ConstantTimeCompare([]byte(secret), []byte(s.run.callerSecret)) == 1
		s.mu.Unlock()
		if ok {
			return s, true
		}
	}
	return nil, false
}
