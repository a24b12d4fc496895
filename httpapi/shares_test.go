package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/agentmux/agentmux/httpapi/apitest"
	"github.com/agentmux/agentmux/share"
	"github.com/agentmux/agentmux/wire"
)

// TestShareLinks: a link is made with its defaults or what was asked,
// listed without its secret, bounded, and revoked; every bad request is
// refused with its code and leaves the links as they were.
func TestShareLinks(t *testing.T) {
	e := newAPI(t)
	s := e.Create(`{"name":"plan"}`)
	before := time.Now()
	link, secret := e.Share(s.ID, `{"by":"alice"}`)
	if link.SessionID != s.ID || !strings.HasPrefix(link.ID, "sh-") || !link.Scrollback || link.CreatedBy != "alice" || link.Viewers != 0 {
		t.Errorf("link = %+v, want sh-..., session %s, scrollback, by alice, no viewers", link, s.ID)
	}
	if life := link.ExpiresAt.Sub(before); life < share.DefaultExpiry-time.Minute || life > share.DefaultExpiry+time.Minute {
		t.Errorf("link expires in %v, want the default %v", life, share.DefaultExpiry)
	}
	if !strings.HasPrefix(link.URL, e.URL+"/share.html#") {
		t.Errorf("url %q is not on this server", link.URL)
	}
	short, _ := e.Share(s.ID, `{"expiresIn":3600,"scrollback":false}`)
	if short.Scrollback || short.ExpiresAt.Sub(short.CreatedAt) != time.Hour {
		t.Errorf("link = %+v, want no scrollback and an hour's life", short)
	}

	list := e.Shares(s.ID)
	if len(list) != 2 || list[0].ID != link.ID || list[1].ID != short.ID {
		t.Fatalf("listed %+v, want %s then %s", list, link.ID, short.ID)
	}
	for _, l := range list {
		if l.URL != "" {
			t.Errorf("a listed link carries its url %q: the secret is shown once", l.URL)
		}
	}
	resp, b := e.RawGet("/api/sessions/" + s.ID + "/shares")
	if strings.Contains(string(b), secret) {
		t.Errorf("the list holds the secret: %s", b)
	}
	apitest.WantStatus(t, "list", resp, b, http.StatusOK)

	for _, bad := range []struct{ body, why string }{
		{`{"expiresIn":59}`, "shorter than a minute"},
		{`{"expiresIn":2592001}`, "longer than 30 days"},
		{`{"expiresIn":-1}`, "negative"},
		{`{"scrollback":"yes"}`, "not a boolean"},
		{`{"by":"a\u202eb"}`, "a reordering character in the name"},
		{`{"expires":60}`, "an unknown field"},
	} {
		resp, b := e.Do(http.MethodPost, "/api/sessions/"+s.ID+"/shares", bad.body)
		apitest.WantError(t, bad.why, resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	}
	resp, b = e.Do(http.MethodPost, "/api/sessions/no-such/shares", "")
	apitest.WantError(t, "a link to no session", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
	resp, b = e.Do(http.MethodDelete, "/api/sessions/"+s.ID+"/shares/sh-000000000000", "")
	apitest.WantError(t, "revoke no link", resp, b, http.StatusNotFound, wire.CodeShareNotFound)
	other := e.Create(`{"name":"other"}`)
	resp, b = e.Do(http.MethodDelete, "/api/sessions/"+other.ID+"/shares/"+link.ID, "")
	apitest.WantError(t, "revoke a link through another session", resp, b, http.StatusNotFound, wire.CodeShareNotFound)

	for range share.MaxPerSession - 2 {
		e.Share(s.ID, "")
	}
	resp, b = e.Do(http.MethodPost, "/api/sessions/"+s.ID+"/shares", "")
	apitest.WantError(t, "one link too many", resp, b, http.StatusConflict, wire.CodeTooManyShares)
	if n := len(e.Shares(s.ID)); n != share.MaxPerSession {
		t.Errorf("%d links after the refusal, want %d", n, share.MaxPerSession)
	}
	e.Share(other.ID, "") // the bound is the session's

	resp, b = e.Do(http.MethodDelete, "/api/sessions/"+s.ID+"/shares/"+link.ID, "")
	apitest.WantStatus(t, "revoke", resp, b, http.StatusNoContent)
	for _, l := range e.Shares(s.ID) {
		if l.ID == link.ID {
			t.Errorf("revoked link %s is still listed", link.ID)
		}
	}
	if _, status, err := apitest.DialWS(t, apitest.ViewerURL(e.URL, secret), nil); err == nil || status != http.StatusUnauthorized {
		t.Errorf("a revoked link's viewer: err %v, HTTP %d, want 401", err, status)
	}
}

// TestShareLinkExpires: a viewer watching when its link's time is up is
// closed then, with 4403 and the reason; the link is no longer listed and
// opens nothing.
func TestShareLinkExpires(t *testing.T) {
	clock := clockwork.NewFakeClockAt(time.Now())
	e := harness{clock: clock}.start(t)
	s := e.CreateCommand([]string{"sh", "-c", "echo watched; exec sleep 60"})
	link, secret := e.Share(s.ID, `{"expiresIn":60}`)
	conn, welcome := apitest.DialViewer(t, e.URL, secret)
	if welcome.ShareID != link.ID || welcome.Session.ID != s.ID || !welcome.ExpiresAt.Equal(link.ExpiresAt) {
		t.Fatalf("welcome %+v, want link %s of session %s expiring %v", welcome, link.ID, s.ID, link.ExpiresAt)
	}
	if err := conn.WriteJSON(map[string]any{"type": "session.attach", "sessionId": s.ID}); err != nil {
		t.Fatal(err)
	}
	apitest.ExpectWS(t, conn, wire.TypeSessionAttached)

	clock.Advance(59 * time.Second)
	if n := len(e.Shares(s.ID)); n != 1 {
		t.Fatalf("%d links a second before expiry, want 1", n)
	}
	clock.Advance(time.Second)
	code, reason := apitest.ExpectClose(t, conn)
	if code != 4403 || reason != share.ReasonExpired {
		t.Errorf("closed with %d %q, want 4403 %q", code, reason, share.ReasonExpired)
	}
	if n := len(e.Shares(s.ID)); n != 0 {
		t.Errorf("%d links listed after expiry, want none", n)
	}
	if _, status, err := apitest.DialWS(t, apitest.ViewerURL(e.URL, secret), nil); err == nil || status != http.StatusUnauthorized {
		t.Errorf("an expired link's viewer: err %v, HTTP %d, want 401", err, status)
	}
}
