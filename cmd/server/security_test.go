package main

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/agentmux/agentmux/wire"
)

// hostRequest sends a request as a browser at host would.
func hostRequest(t *testing.T, e *apiEnv, path, host string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return e.send(req)
}

// TestDNSRebinding: a page on a name that resolves to this machine is
// same-origin with the server as far as the browser knows; without a token
// only localhost, IP addresses and --allowed-hosts are answered.
func TestDNSRebinding(t *testing.T) {
	e := newAPI(t, "--allowed-hosts", "dev.example, .app.github.dev")
	for _, host := range []string{"evil.test:8080", "evil.test", "localhost.evil.test:8080", "x.app.github.dev.evil.test", "app.github.dev", "127.0.0.1.nip.io:8080"} {
		for _, path := range []string{"/api/sessions", "/", "/api/files?path=README.md"} {
			resp, b := hostRequest(t, e, path, host)
			msg := wantError(t, host+path, resp, b, http.StatusForbidden, wire.CodePermissionDenied)
			if !strings.Contains(msg, "--allowed-hosts") || !strings.Contains(msg, host) {
				t.Errorf("%s%s: message %q does not say what to do", host, path, msg)
			}
		}
		// The WebSocket too, with the matching Origin a rebound page sends.
		url := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/ws"
		if _, status, err := dialWS(t, url, http.Header{"Host": {host}, "Origin": {"http://" + host}}); err == nil || status != http.StatusForbidden {
			t.Errorf("WebSocket from a page on %s: status %d err %v, want 403", host, status, err)
		}
	}
	for _, host := range []string{"localhost:8080", "LOCALHOST", "agentmux.localhost:1", "127.0.0.1:8080", "[::1]:8080", "10.0.0.5", "dev.example:8080", "x.app.github.dev", "localhost."} {
		resp, b := hostRequest(t, e, "/api/sessions", host)
		wantStatus(t, host, resp, b, http.StatusOK)
	}

	// A token is the guard instead: any name, but only with the token.
	tok := newAPI(t, "--token", "s3cret")
	resp, b := hostRequest(t, tok, "/api/sessions", "evil.test:8080")
	wantError(t, "rebound, no token", resp, b, http.StatusUnauthorized, wire.CodeUnauthorized)
	resp, b = hostRequest(t, tok, "/api/sessions", "evil.test:8080", "Authorization", "Bearer s3cret")
	wantStatus(t, "any host with the token", resp, b, http.StatusOK)
}

// TestOriginBypasses tries the WebSocket origin check with what a hostile
// page can make a browser send.
func TestOriginBypasses(t *testing.T) {
	e := newAPI(t)
	url := "ws" + strings.TrimPrefix(e.ts.URL, "http") + "/ws"
	for _, origin := range []string{
		"null",             // sandboxed iframes, file: pages
		"http://evil.test", // another site
		"http://" + e.ts.Listener.Addr().String() + ".evil.test", // the host as a prefix
		"http://evil.test/" + e.ts.Listener.Addr().String(),      // the host in the path
		"file://",
		"http://user@evil.test",
	} {
		if _, status, err := dialWS(t, url, http.Header{"Origin": {origin}}); err == nil || status != http.StatusForbidden {
			t.Errorf("Origin %q: status %d err %v, want 403", origin, status, err)
		}
	}
}

// TestFilesDoubleEncoded: the files API decodes the query once, so a
// double-encoded traversal is a literal (missing) name, never a way out.
func TestFilesDoubleEncoded(t *testing.T) {
	e := newAPI(t)
	for _, q := range []string{"path=%252e%252e%252fetc%252fpasswd", "path=..%252fetc%252fpasswd", "path=%2e%2e/%2e%2e/etc/passwd", "path=docs%00/../../etc/passwd"} {
		resp, b := rawGet(t, e, "/api/files?"+q)
		if resp.StatusCode == http.StatusOK || strings.Contains(string(b), "root:") {
			t.Errorf("%s: status %d, body %s", q, resp.StatusCode, b)
		}
	}
}

// TestStartupSecurityLines: a token gives a sign-in URL; a listener other
// machines can reach without one gives one clear warning.
func TestStartupSecurityLines(t *testing.T) {
	r := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--agent-cmd", "sh", "--token", "a b&c")
	lines := linesWith(r.log.String(), "open this URL to sign in")
	if len(lines) != 1 || !strings.Contains(lines[0], "http://"+r.addr+"/?token=a+b%26c") {
		t.Errorf("sign-in lines %q, want one with the escaped token", lines)
	}
	// The flag shows the token to every process: one warning says how
	// else to give it.
	if w := linesWith(r.log.String(), "level=WARN", "--token", "/proc/PID/cmdline", "AGENTMUX_TOKEN", "--token-file"); len(w) != 1 {
		t.Errorf("want one warning that --token is visible to other processes; log:\n%s", r.log)
	}
	r.signal(syscall.SIGTERM)
	r.wait()

	// Given in the environment or a file, it is not.
	for _, how := range []struct {
		env  func(string) string
		args []string
	}{
		{envOf(map[string]string{"AGENTMUX_TOKEN": "s3cret"}), nil},
		{noEnv, []string{"--token-file", writeTokenFile(t, "s3cret\n", 0o600)}},
	} {
		r := startRun(t, how.env, append([]string{"--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--agent-cmd", "sh"}, how.args...)...)
		if lines := linesWith(r.log.String(), "open this URL to sign in", "token=s3cret"); len(lines) != 1 {
			t.Errorf("%v: no sign-in line with the token; log:\n%s", how.args, r.log)
		}
		if w := linesWith(r.log.String(), "level=WARN", "token"); len(w) != 0 {
			t.Errorf("%v: warned %q", how.args, w)
		}
		r.signal(syscall.SIGTERM)
		r.wait()
	}

	open := startRun(t, noEnv, "--addr", "0.0.0.0:0", "--workspace", t.TempDir(), "--agent-cmd", "sh")
	if w := linesWith(open.log.String(), "level=WARN", "without --token"); len(w) != 1 {
		t.Errorf("want one warning about listening without a token; log:\n%s", open.log)
	}
	open.signal(syscall.SIGTERM)
	open.wait()

	local := startRun(t, noEnv, "--addr", "127.0.0.1:0", "--workspace", t.TempDir(), "--agent-cmd", "sh")
	if w := linesWith(local.log.String(), "without --token"); len(w) != 0 {
		t.Errorf("loopback without a token warned: %q", w)
	}
	local.signal(syscall.SIGTERM)
	local.wait()

	// In a container published on loopback only, as docker-compose.yml
	// says in AGENTMUX_PUBLISHED_HOST: the same line, as information.
	published := startRun(t, envOf(map[string]string{"AGENTMUX_PUBLISHED_HOST": "127.0.0.1"}), "--addr", "0.0.0.0:0", "--workspace", t.TempDir(), "--agent-cmd", "sh")
	if w := linesWith(published.log.String(), "level=WARN", "token"); len(w) != 0 {
		t.Errorf("published on loopback: warned %q", w)
	}
	if i := linesWith(published.log.String(), "level=INFO", "without --token", "published on 127.0.0.1 only"); len(i) != 1 {
		t.Errorf("published on loopback: want one information line saying so; log:\n%s", published.log)
	}
	published.signal(syscall.SIGTERM)
	published.wait()
}

// TestNoTokenNotice: only a loopback address the server listens on, or a
// loopback address its container's port is said to be published on,
// spares the warning; a container that says nothing, or says it is
// published everywhere, warns, and the warning tells how to say it.
func TestNoTokenNotice(t *testing.T) {
	for _, tc := range []struct {
		addr, published string
		level           slog.Level
		logged          bool
		want            []string
	}{
		{"127.0.0.1:8080", "", 0, false, nil},
		{"[::1]:8080", "0.0.0.0", 0, false, nil},
		{"0.0.0.0:8080", "", slog.LevelWarn, true, []string{"0.0.0.0:8080 without --token", "anyone", "AGENTMUX_TOKEN", "In a container", "AGENTMUX_PUBLISHED_HOST=127.0.0.1"}},
		{"[::]:8080", "", slog.LevelWarn, true, []string{"[::]:8080 without --token", "anyone"}},
		{"[::]:8080", "127.0.0.1", slog.LevelInfo, true, []string{"[::]:8080 without --token", "published on 127.0.0.1 only", "--published-host"}},
		{"0.0.0.0:8080", "::1", slog.LevelInfo, true, []string{"published on ::1 only"}},
		{"0.0.0.0:8080", "0.0.0.0", slog.LevelWarn, true, []string{"published on 0.0.0.0", "anyone", "AGENTMUX_TOKEN"}},
		{"0.0.0.0:8080", "192.0.2.7", slog.LevelWarn, true, []string{"published on 192.0.2.7", "anyone"}},
	} {
		level, msg, logged := noTokenNotice(tc.addr, tc.published)
		if logged != tc.logged || level != tc.level {
			t.Errorf("%s published on %q: logged %v at %v, want %v at %v (%q)", tc.addr, tc.published, logged, level, tc.logged, tc.level, msg)
		}
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s published on %q: %q does not say %q", tc.addr, tc.published, msg, w)
			}
		}
	}
}

// writeTokenFile writes a token file with mode perm and returns its path.
func writeTokenFile(t *testing.T, content string, perm os.FileMode) string {
	t.Helper()
	name := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(name, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(name, perm); err != nil { // past the umask
		t.Fatal(err)
	}
	return name
}

// TestTokenFile: the file's first line is the token; a file others may
// read, an empty one, a missing one, or a token given twice stops
// start-up with a line that says what to do.
func TestTokenFile(t *testing.T) {
	base := []string{"--workspace", t.TempDir()}
	cfg, err := parseConfig(append(base, "--token-file", writeTokenFile(t, "  tok-en \nsecond line\n", 0o400)), noEnv, io.Discard)
	if err != nil || cfg.Token != "tok-en" {
		t.Fatalf("token file: token %q, err %v; want the first line, trimmed", cfg.Token, err)
	}
	cfg, err = parseConfig(base, envOf(map[string]string{"AGENTMUX_TOKEN_FILE": writeTokenFile(t, "envfile", 0o600)}), io.Discard)
	if err != nil || cfg.Token != "envfile" || cfg.tokenOnCommandLine {
		t.Fatalf("AGENTMUX_TOKEN_FILE: token %q, err %v", cfg.Token, err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--token-file", writeTokenFile(t, "tok", 0o644)}, "chmod 600"},
		{[]string{"--token-file", writeTokenFile(t, "tok", 0o640)}, "other users may read"},
		{[]string{"--token-file", writeTokenFile(t, "\n", 0o600)}, "first line is empty"},
		{[]string{"--token-file", filepath.Join(t.TempDir(), "missing")}, "no such file"},
		{[]string{"--token-file", t.TempDir()}, "not a regular file"},
		{[]string{"--token-file", writeTokenFile(t, "tok", 0o600), "--token", "x"}, "give one"},
	} {
		_, err := parseConfig(append(base, tc.args...), noEnv, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: err %v, want one saying %q", tc.args, err, tc.want)
		}
	}
}

func TestSignInURL(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"127.0.0.1:8080", "http://127.0.0.1:8080/?token=t"},
		{"0.0.0.0:8080", "http://localhost:8080/?token=t"},
		{"[::]:8080", "http://localhost:8080/?token=t"},
		{"[::1]:9", "http://[::1]:9/?token=t"},
	} {
		if got := signInURL(tc.addr, "t"); got != tc.want {
			t.Errorf("signInURL(%q) = %q, want %q", tc.addr, got, tc.want)
		}
	}
}
