package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// Sentinel errors for the failures a user can act on.
var (
	// errUnreachable: nothing answers at the address.
	errUnreachable = errors.New("agentmux is not reachable")
	// errToken: the server wants a token, or another one.
	errToken = errors.New("token refused")
	// errSessionLimit: the server runs as many sessions as it allows.
	errSessionLimit = errors.New("session limit reached")
)

// requestTimeout bounds one API request. DELETE waits for the agent to
// end, up to 3 s after SIGHUP, so it needs more than a listing.
const requestTimeout = 30 * time.Second

// apiClient talks to the server's HTTP API.
type apiClient struct {
	// base is the server's root, http://host:port.
	base  string
	token string
	hc    *http.Client
}

func newAPIClient(base, token string) *apiClient {
	return &apiClient{base: strings.TrimSuffix(base, "/"), token: token, hc: &http.Client{Timeout: requestTimeout}}
}

// close lets go of idle keep-alive connections.
func (a *apiClient) close() { a.hc.CloseIdleConnections() }

// wsURL returns the address of the server's WebSocket.
func (a *apiClient) wsURL() string {
	return "ws" + strings.TrimPrefix(a.base, "http") + "/ws"
}

// session is the part of the API's Session JSON the benchmark reads.
type session struct {
	ID      string   `json:"id"`
	Status  string   `json:"status"`
	Command []string `json:"command"`
	Running bool     `json:"running"`
}

// apiError is an error answer of the API.
type apiError struct {
	Status  int
	Code    string
	Message string
}

func (e *apiError) Error() string {
	if e.Code == "" {
		return fmt.Sprintf("status %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("status %d %s: %s", e.Status, e.Code, e.Message)
}

// statusError turns a refused request into the error the user can act
// on: 401 means --token.
func statusError(status int, token string, err error) error {
	if status != http.StatusUnauthorized {
		return err
	}
	if token == "" {
		return fmt.Errorf("%w: the server needs a token; pass --token (%w)", errToken, err)
	}
	return fmt.Errorf("%w: the server refused the token given with --token (%w)", errToken, err)
}

// do sends a request with body (JSON, when not nil) and decodes a 2xx
// answer into out (when not nil).
func (a *apiClient) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, a.base+path, rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if a.token != "" {
		req.Header.Set("Authorization", "Bearer "+a.token)
	}
	resp, err := a.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("%s %s: %w", method, path, context.Cause(ctx))
		}
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			return fmt.Errorf("%w at %s: %w", errUnreachable, a.base, err)
		}
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &apiError{Status: resp.StatusCode, Message: strings.TrimSpace(string(b))}
		var body struct {
			Error struct {
				Code    string `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(b, &body) == nil && body.Error.Code != "" {
			e.Code, e.Message = body.Error.Code, body.Error.Message
		}
		var err error = e
		if e.Code == "SESSION_LIMIT_REACHED" {
			err = fmt.Errorf("%w: %w (the benchmark needs up to 4 sessions of its own; stop some, or raise the server's --max-sessions)", errSessionLimit, e)
		}
		return fmt.Errorf("%s %s: %w", method, path, statusError(resp.StatusCode, a.token, err))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: decode %.200q: %w", method, path, b, err)
	}
	return nil
}

// serverInfo is what the benchmark learns about the server up front.
type serverInfo struct {
	Version     string
	MaxSessions int
	// Running is how many sessions run now, counting against
	// MaxSessions.
	Running int
}

// check makes sure a server answers at the address and accepts the token,
// and returns what it says about itself.
func (a *apiClient) check(ctx context.Context) (serverInfo, error) {
	var health struct {
		Status  string `json:"status"`
		Version string `json:"version"`
	}
	if err := a.do(ctx, http.MethodGet, "/api/health", nil, &health); err != nil {
		if errors.Is(err, errUnreachable) {
			return serverInfo{}, fmt.Errorf("%w (start it, point --addr at it, or give --server-bin)", err)
		}
		return serverInfo{}, fmt.Errorf("health check: %w", err)
	}
	var cfg struct {
		MaxSessions int `json:"maxSessions"`
	}
	// Health needs no token; the config does, so it tells whether ours
	// is right.
	if err := a.do(ctx, http.MethodGet, "/api/config", nil, &cfg); err != nil {
		return serverInfo{}, err
	}
	list, err := a.list(ctx)
	if err != nil {
		return serverInfo{}, err
	}
	info := serverInfo{Version: health.Version, MaxSessions: cfg.MaxSessions}
	for _, s := range list {
		if s.Running {
			info.Running++
		}
	}
	return info, nil
}

// createRequest is the body of POST /api/sessions.
type createRequest struct {
	Name    string   `json:"name,omitempty"`
	Command []string `json:"command"`
	Cols    int      `json:"cols,omitempty"`
	Rows    int      `json:"rows,omitempty"`
}

// create starts argv as a new session.
func (a *apiClient) create(ctx context.Context, name string, argv []string) (session, error) {
	var out struct {
		Session session `json:"session"`
	}
	if err := a.do(ctx, http.MethodPost, "/api/sessions", createRequest{Name: name, Command: argv}, &out); err != nil {
		return session{}, fmt.Errorf("create session %q: %w", name, err)
	}
	return out.Session, nil
}

// remove deletes a session, stopping its process. It takes its own
// deadline rather than ctx's, so cleanups still run after ctx ended.
func (a *apiClient) remove(ctx context.Context, id string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), requestTimeout)
	defer cancel()
	if err := a.do(ctx, http.MethodDelete, "/api/sessions/"+id, nil, nil); err != nil {
		return fmt.Errorf("delete session %s: %w", id, err)
	}
	return nil
}

// list returns the sessions, oldest first.
func (a *apiClient) list(ctx context.Context) ([]session, error) {
	var out struct {
		Sessions []session `json:"sessions"`
	}
	if err := a.do(ctx, http.MethodGet, "/api/sessions", nil, &out); err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	return out.Sessions, nil
}

// agentsRSS returns the sum of the running agents' process trees' RSS,
// from GET /api/resources.
func (a *apiClient) agentsRSS(ctx context.Context) (uint64, error) {
	var out struct {
		Sessions []struct {
			RSSBytes uint64 `json:"rssBytes"`
		} `json:"sessions"`
	}
	if err := a.do(ctx, http.MethodGet, "/api/resources", nil, &out); err != nil {
		return 0, fmt.Errorf("resources: %w", err)
	}
	var sum uint64
	for _, s := range out.Sessions {
		sum += s.RSSBytes
	}
	return sum, nil
}
