package httpapi

import (
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/agentmux/agentmux/sessions"
	"github.com/agentmux/agentmux/wire"
)

// SessionUsage is one session in GET /api/usage.
type SessionUsage struct {
	ID    string         `json:"id"`
	Name  string         `json:"name"`
	Agent string         `json:"agent"`
	Usage sessions.Usage `json:"usage"`
	// Turns are what each of its last turns spent (since ?since= when
	// given), oldest first.
	Turns []sessions.TurnUsage `json:"turns"`
}

// UsageWindow is one of the account's windows in GET /api/usage, as the
// session that reported it last said.
type UsageWindow struct {
	sessions.LimitWindow
	// SessionID is the session whose agent reported it; UpdatedAt when.
	SessionID string    `json:"sessionId"`
	UpdatedAt time.Time `json:"updatedAt"`
}

// UsageTotals adds up what the listed sessions reported: their whole
// usage, or with ?since= their turns since then.
type UsageTotals struct {
	CostUSD      float64 `json:"costUsd"`
	InputTokens  int64   `json:"inputTokens"`
	OutputTokens int64   `json:"outputTokens"`
}

// UsageReply is GET /api/usage's: what each session's agent reported it
// spends, turn by turn, the account's windows as last reported, and the
// totals; with ?since=, only the sessions that reported since then, and
// what their turns since then spent.
type UsageReply struct {
	Sessions []SessionUsage `json:"sessions"`
	Windows  []UsageWindow  `json:"windows"`
	Totals   UsageTotals    `json:"totals"`
}

// getUsage serves GET /api/usage[?since=<RFC 3339>].
func (a *API) getUsage(c echo.Context) error {
	var since time.Time
	if s := c.QueryParam("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return errorJSON(c, http.StatusBadRequest, wire.CodeInvalidMessage, fmt.Sprintf("since %q: want an RFC 3339 time, such as 2026-11-29T09:00:00Z", clip(s)))
		}
		since = t
	}
	reply := UsageReply{Sessions: []SessionUsage{}, Windows: []UsageWindow{}}
	windows := map[string]UsageWindow{}
	var order []string
	for _, s := range a.mgr.List() {
		info := s.Info()
		u := info.Usage
		if u == nil || u.UpdatedAt.Before(since) {
			continue
		}
		turns := s.Turns()
		cut, _ := slices.BinarySearchFunc(turns, since, func(t sessions.TurnUsage, since time.Time) int { return t.EndedAt.Compare(since) })
		turns = turns[cut:]
		reply.Sessions = append(reply.Sessions, SessionUsage{ID: info.ID, Name: info.Name, Agent: info.Agent, Usage: *u, Turns: turns})
		sum := sessions.Spent{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, CostUSD: u.CostUSD}
		if !since.IsZero() {
			sum = sessions.Spent{}
			for _, t := range turns {
				sum.Add(t)
			}
		}
		reply.Totals.add(sum)
		// The account's windows are one account's: the newest report of
		// each is what holds.
		for _, w := range u.Windows {
			old, seen := windows[w.Name]
			if !seen {
				order = append(order, w.Name)
			}
			if !seen || u.UpdatedAt.After(old.UpdatedAt) {
				windows[w.Name] = UsageWindow{LimitWindow: w, SessionID: info.ID, UpdatedAt: u.UpdatedAt}
			}
		}
	}
	for _, name := range order {
		reply.Windows = append(reply.Windows, windows[name])
	}
	return c.JSON(http.StatusOK, reply)
}

func (t *UsageTotals) add(sp sessions.Spent) {
	if sp.CostUSD != nil {
		t.CostUSD += *sp.CostUSD
	}
	if sp.InputTokens != nil {
		t.InputTokens += *sp.InputTokens
	}
	if sp.OutputTokens != nil {
		t.OutputTokens += *sp.OutputTokens
	}
}
