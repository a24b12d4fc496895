package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmux/agentmux/attachments"
	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions"
)

// allFlags are the flags agentmux has today (SPEC 2, less those of parts not
// built yet: --data-dir, --mem-warn, --mem-critical).
var allFlags = []string{
	"addr", "workspace", "agent", "agent-cmd", "max-sessions", "scrollback",
	"batch-interval", "shutdown-grace", "allowed-origins", "token", "log-level",
	"data-dir", "save-interval", "mem-warn", "mem-critical", "mem-interval", "watch-ignore",
	"question-quiet", "idle-after", "warn-after", "warn-error-after", "allowed-hosts", "keep-sessions", "token-file",
	"watch-temporaries", "published-host", "preview-domain", "checkpoint-max-file", "checkpoint-max-total",
	"attachment-max", "attachments-per-session",
	"setup-script", "run-script", "archive-script", "check-script", "run-mode", "trust-scripts", "check-timeout", "port-base",
	"mcp", "mcp-max-started", "mcp-max-depth",
	"continue-after-limit", "continue-text", "continue-margin", "name",
	"github-token-file", "github-api", "pull-request-refresh",
}

func TestEnvName(t *testing.T) {
	for flagName, want := range map[string]string{
		"addr":           "AGENTMUX_ADDR",
		"agent-cmd":      "AGENTMUX_AGENT_CMD",
		"max-sessions":   "AGENTMUX_MAX_SESSIONS",
		"shutdown-grace": "AGENTMUX_SHUTDOWN_GRACE",
	} {
		if got := envName(flagName); got != want {
			t.Errorf("envName(%q) = %q, want %q", flagName, got, want)
		}
	}
}

func TestConfigDefaults(t *testing.T) {
	cfg, err := parseConfig(nil, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := config{
		Addr:          "127.0.0.1:8080",
		Agent:         "claude",
		MaxSessions:   4,
		Scrollback:    1 << 20,
		BatchInterval: 16 * time.Millisecond,
		ShutdownGrace: 5 * time.Second,
		SaveInterval:  5 * time.Second,
		MemWarn:       87,
		MemCritical:   93,
		MemInterval:   5 * time.Second,
		LogLevel:      slog.LevelInfo,
		Timing:        sessions.Timing{QuestionQuiet: 1500 * time.Millisecond, IdleAfter: 5 * time.Minute, WarnAfter: 30 * time.Minute, ErrorAfter: 2 * time.Hour},
		PortBase:      sessions.DefaultPortBase,
		// About once a minute, as the issue asks.
		PullRequestRefresh: time.Minute,
	}
	if !configEqual(cfg, want) {
		t.Errorf("defaults:\n got %+v\nwant %+v", cfg, want)
	}
}

// TestDefaultDataDir: the default data directory is the workspace's
// own, under the XDG state directory: named after the workspace's last
// element and a hash of its clean path, so two workspaces (even of the
// same name) never share one, and one workspace always finds its own.
func TestDefaultDataDir(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		ws   string
		want string
	}{
		{map[string]string{"XDG_STATE_HOME": "/state", "HOME": "/home/u"}, "/src/app", "/state/agentmux/app-"},
		{map[string]string{"XDG_STATE_HOME": "relative", "HOME": "/home/u"}, "/src/app", "/home/u/.local/state/agentmux/app-"},
		{map[string]string{"HOME": "/home/u"}, "/src/app", "/home/u/.local/state/agentmux/app-"},
		{map[string]string{"HOME": "/home/u"}, "/", "/home/u/.local/state/agentmux/root-"},
		{map[string]string{"HOME": "/home/u"}, "/src/my app:é", "/home/u/.local/state/agentmux/my_app__-"},
		{map[string]string{"HOME": "/home/u"}, "/src/" + strings.Repeat("x", 40), "/home/u/.local/state/agentmux/" + strings.Repeat("x", 32) + "-"},
	} {
		got, err := defaultDataDir(envOf(tc.env), tc.ws)
		if err != nil || !strings.HasPrefix(got, tc.want) || !regexp.MustCompile(`-[0-9a-f]{12}$`).MatchString(got) {
			t.Errorf("defaultDataDir(%v, %q) = %q, %v; want %q and 12 hex digits", tc.env, tc.ws, got, err, tc.want)
		}
	}
	env := envOf(map[string]string{"HOME": "/home/u"})
	dir := func(ws string) string {
		t.Helper()
		d, err := defaultDataDir(env, ws)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if a, b := dir("/src/a/app"), dir("/src/b/app"); a == b {
		t.Errorf("two workspaces named app share %s", a)
	}
	if a, b := dir("/src/app"), dir("/src/./app/"); a != b {
		t.Errorf("one workspace, spelled twice, has two data directories: %s and %s", a, b)
	}
	if _, err := defaultDataDir(noEnv, "/src/app"); err == nil || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("no HOME: %v, want an error naming --data-dir", err)
	}
	if _, err := defaultDataDir(env, "src/app"); err == nil {
		t.Errorf("a relative workspace: no error")
	}
}

func configEqual(a, b config) bool {
	return a.Addr == b.Addr && a.Workspace == b.Workspace && a.Agent == b.Agent &&
		slices.Equal(a.AgentCmd, b.AgentCmd) && a.MaxSessions == b.MaxSessions &&
		a.Scrollback == b.Scrollback && a.BatchInterval == b.BatchInterval &&
		a.ShutdownGrace == b.ShutdownGrace && slices.Equal(a.AllowedOrigins, b.AllowedOrigins) &&
		a.Token == b.Token && a.LogLevel == b.LogLevel && a.agentSet == b.agentSet &&
		a.DataDir == b.DataDir && a.SaveInterval == b.SaveInterval &&
		a.MemWarn == b.MemWarn && a.MemCritical == b.MemCritical && a.MemInterval == b.MemInterval &&
		slices.Equal(a.WatchIgnore, b.WatchIgnore) && a.Timing == b.Timing && slices.Equal(a.AllowedHosts, b.AllowedHosts) &&
		a.WatchTemporaries == b.WatchTemporaries && a.PublishedHost == b.PublishedHost &&
		a.PreviewDomain == b.PreviewDomain && a.Checkpoints == b.Checkpoints && a.Attachments == b.Attachments &&
		a.Scripts == b.Scripts && a.TrustScripts == b.TrustScripts && a.PortBase == b.PortBase && a.Name == b.Name &&
		a.GitHubTokenFile == b.GitHubTokenFile && a.GitHubAPI == b.GitHubAPI && a.PullRequestRefresh == b.PullRequestRefresh
}

// fullEnv sets every flag's variable.
var fullEnv = map[string]string{
	"AGENTMUX_ADDR":                    "0.0.0.0:9000",
	"AGENTMUX_WORKSPACE":               "/env/ws",
	"AGENTMUX_AGENT":                   "codex",
	"AGENTMUX_AGENT_CMD":               "env-agent --fast",
	"AGENTMUX_MAX_SESSIONS":            "7",
	"AGENTMUX_SCROLLBACK":              "2MiB",
	"AGENTMUX_BATCH_INTERVAL":          "40ms",
	"AGENTMUX_SHUTDOWN_GRACE":          "9s",
	"AGENTMUX_ALLOWED_ORIGINS":         "http://a.example, http://b.example",
	"AGENTMUX_TOKEN":                   "envtok",
	"AGENTMUX_LOG_LEVEL":               "debug",
	"AGENTMUX_DATA_DIR":                "/env/data",
	"AGENTMUX_SAVE_INTERVAL":           "2s",
	"AGENTMUX_MEM_WARN":                "70",
	"AGENTMUX_MEM_CRITICAL":            "80.5",
	"AGENTMUX_MEM_INTERVAL":            "1s",
	"AGENTMUX_WATCH_IGNORE":            "dist, *.log",
	"AGENTMUX_QUESTION_QUIET":          "2s",
	"AGENTMUX_IDLE_AFTER":              "1m",
	"AGENTMUX_WARN_AFTER":              "10m",
	"AGENTMUX_WARN_ERROR_AFTER":        "1h",
	"AGENTMUX_ALLOWED_HOSTS":           "Dev.Example, .ts.net",
	"AGENTMUX_KEEP_SESSIONS":           "12",
	"AGENTMUX_WATCH_TEMPORARIES":       "true",
	"AGENTMUX_PUBLISHED_HOST":          "127.0.0.1",
	"AGENTMUX_PREVIEW_DOMAIN":          "Preview.Example.com.",
	"AGENTMUX_CHECKPOINT_MAX_FILE":     "1MiB",
	"AGENTMUX_CHECKPOINT_MAX_TOTAL":    "0",
	"AGENTMUX_ATTACHMENT_MAX":          "5MiB",
	"AGENTMUX_ATTACHMENTS_PER_SESSION": "50MiB",
	"AGENTMUX_SETUP_SCRIPT":            "npm ci",
	"AGENTMUX_RUN_SCRIPT":              "npm run dev",
	"AGENTMUX_ARCHIVE_SCRIPT":          "rm -rf dist",
	"AGENTMUX_CHECK_SCRIPT":            "npm test",
	"AGENTMUX_RUN_MODE":                "exclusive",
	"AGENTMUX_TRUST_SCRIPTS":           "true",
	"AGENTMUX_CHECK_TIMEOUT":           "3m",
	"AGENTMUX_PORT_BASE":               "30000",
	"AGENTMUX_MCP":                     "false",
	"AGENTMUX_MCP_MAX_STARTED":         "5",
	"AGENTMUX_MCP_MAX_DEPTH":           "2",
	"AGENTMUX_CONTINUE_AFTER_LIMIT":    "false",
	"AGENTMUX_CONTINUE_TEXT":           "go on where you stopped",
	"AGENTMUX_CONTINUE_MARGIN":         "5m",
	"AGENTMUX_NAME":                    "env-box",
	"AGENTMUX_GITHUB_TOKEN_FILE":       "/env/gh-token",
	"AGENTMUX_GITHUB_API":              "https://ghe.example/api/v3/",
	"AGENTMUX_PULL_REQUEST_REFRESH":    "30s",
}

// notInFullEnv are the flags fullEnv leaves out: AGENTMUX_TOKEN_FILE
// would give a second token (TestTokenFile has it).
var notInFullEnv = 1

func TestConfigFromEnv(t *testing.T) {
	if len(fullEnv)+notInFullEnv != len(allFlags) {
		t.Fatalf("fullEnv has %d variables for %d flags", len(fullEnv), len(allFlags))
	}
	cfg, err := parseConfig(nil, envOf(fullEnv), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := config{
		Addr:               "0.0.0.0:9000",
		Workspace:          "/env/ws",
		Agent:              "codex",
		AgentCmd:           []string{"env-agent", "--fast"},
		MaxSessions:        7,
		KeepSessions:       12,
		Scrollback:         2 << 20,
		BatchInterval:      40 * time.Millisecond,
		ShutdownGrace:      9 * time.Second,
		AllowedOrigins:     []string{"http://a.example", "http://b.example"},
		Token:              "envtok",
		LogLevel:           slog.LevelDebug,
		DataDir:            "/env/data",
		SaveInterval:       2 * time.Second,
		MemWarn:            70,
		MemCritical:        80.5,
		MemInterval:        time.Second,
		WatchIgnore:        []string{"dist", "*.log"},
		Timing:             sessions.Timing{QuestionQuiet: 2 * time.Second, IdleAfter: time.Minute, WarnAfter: 10 * time.Minute, ErrorAfter: time.Hour},
		AllowedHosts:       []string{"dev.example", ".ts.net"},
		agentSet:           true,
		WatchTemporaries:   true,
		PublishedHost:      "127.0.0.1",
		PreviewDomain:      "preview.example.com",
		Checkpoints:        checkpoint.Options{MaxFileSize: 1 << 20, MaxTotalSize: -1},
		Attachments:        attachments.Options{MaxFile: 5 << 20, MaxPerSession: 50 << 20},
		Scripts:            scripts.Overrides{Setup: "npm ci", Run: "npm run dev", Archive: "rm -rf dist", Check: "npm test", RunMode: scripts.Exclusive},
		TrustScripts:       true,
		CheckTimeout:       3 * time.Minute,
		PortBase:           30000,
		MCP:                false,
		MCPMaxStarted:      5,
		MCPMaxDepth:        2,
		ContinueText:       "go on where you stopped",
		ContinueMargin:     5 * time.Minute,
		Name:               "env-box",
		GitHubTokenFile:    "/env/gh-token",
		GitHubAPI:          "https://ghe.example/api/v3",
		PullRequestRefresh: 30 * time.Second,
	}
	if !configEqual(cfg, want) {
		t.Errorf("from env:\n got %+v\nwant %+v", cfg, want)
	}
}

func TestFlagBeatsEnv(t *testing.T) {
	args := []string{
		"--addr", "127.0.0.1:1",
		"--workspace", "/flag/ws",
		"--agent", "aider",
		"--agent-cmd", "flag-agent",
		"--max-sessions", "2",
		"--scrollback", "64KiB",
		"--batch-interval", "5ms",
		"--shutdown-grace", "1s",
		"--allowed-origins", "http://c.example",
		"--token", "flagtok",
		"--log-level", "warn",
		"--data-dir", "/flag/data",
		"--save-interval", "1s",
		"--mem-warn", "50",
		"--mem-critical", "60",
		"--mem-interval", "2s",
		"--watch-ignore", "tmp",
		"--question-quiet", "3s",
		"--idle-after", "2m",
		"--warn-after", "20m",
		"--warn-error-after", "3h",
		"--allowed-hosts", "box",
		"--watch-temporaries=false",
		"--published-host", "[::1]",
		"--preview-domain", "flag.example",
		"--checkpoint-max-file", "0",
		"--checkpoint-max-total", "2GB",
		"--attachment-max", "1MiB",
		"--attachments-per-session", "1GB",
		"--setup-script", "make deps",
		"--check-script", "make check",
		"--run-mode", "concurrent",
		"--trust-scripts=false",
		"--port-base", "40000",
		"--name", "flag-box",
		"--github-token-file", "/flag/gh-token",
		"--github-api", "http://127.0.0.1:9999",
		"--pull-request-refresh", "2s",
	}
	cfg, err := parseConfig(args, envOf(fullEnv), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	want := config{
		Addr:           "127.0.0.1:1",
		Workspace:      "/flag/ws",
		Agent:          "aider",
		AgentCmd:       []string{"flag-agent"},
		MaxSessions:    2,
		Scrollback:     64 << 10,
		BatchInterval:  5 * time.Millisecond,
		ShutdownGrace:  time.Second,
		AllowedOrigins: []string{"http://c.example"},
		Token:          "flagtok",
		LogLevel:       slog.LevelWarn,
		DataDir:        "/flag/data",
		SaveInterval:   time.Second,
		MemWarn:        50,
		MemCritical:    60,
		MemInterval:    2 * time.Second,
		WatchIgnore:    []string{"tmp"},
		Timing:         sessions.Timing{QuestionQuiet: 3 * time.Second, IdleAfter: 2 * time.Minute, WarnAfter: 20 * time.Minute, ErrorAfter: 3 * time.Hour},
		AllowedHosts:   []string{"box"},
		PublishedHost:  "::1",
		PreviewDomain:  "flag.example",
		Checkpoints:    checkpoint.Options{MaxFileSize: -1, MaxTotalSize: 2e9},
		Attachments:    attachments.Options{MaxFile: 1 << 20, MaxPerSession: 1e9},
		// Each script flag wins over its own variable only.
		Scripts:            scripts.Overrides{Setup: "make deps", Run: "npm run dev", Archive: "rm -rf dist", Check: "make check", RunMode: scripts.Concurrent},
		PortBase:           40000,
		Name:               "flag-box",
		agentSet:           true,
		GitHubTokenFile:    "/flag/gh-token",
		GitHubAPI:          "http://127.0.0.1:9999",
		PullRequestRefresh: 2 * time.Second,
	}
	if !configEqual(cfg, want) {
		t.Errorf("flags over env:\n got %+v\nwant %+v", cfg, want)
	}

	// A flag also hides a bad value in its variable.
	cfg, err = parseConfig([]string{"--max-sessions", "3"}, envOf(map[string]string{"AGENTMUX_MAX_SESSIONS": "abc"}), io.Discard)
	if err != nil || cfg.MaxSessions != 3 {
		t.Errorf("--max-sessions 3 with AGENTMUX_MAX_SESSIONS=abc: %d, %v; want 3 and no error", cfg.MaxSessions, err)
	}
}

func TestBadEnvNamesVariable(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"AGENTMUX_MAX_SESSIONS", "abc"},
		{"AGENTMUX_SCROLLBACK", "lots"},
		{"AGENTMUX_BATCH_INTERVAL", "fast"},
		{"AGENTMUX_SHUTDOWN_GRACE", "5"},
		{"AGENTMUX_LOG_LEVEL", "loud"},
		{"AGENTMUX_AGENT_CMD", "sh -c 'unterminated"},
		{"AGENTMUX_CHECKPOINT_MAX_FILE", "big"},
		{"AGENTMUX_CHECKPOINT_MAX_TOTAL", "-1MiB"},
		{"AGENTMUX_ATTACHMENT_MAX", "0"},
		{"AGENTMUX_ATTACHMENTS_PER_SESSION", "lots"},
		{"AGENTMUX_RUN_MODE", "serial"},
		{"AGENTMUX_TRUST_SCRIPTS", "yes please"},
	} {
		_, err := parseConfig(nil, envOf(map[string]string{tc.name: tc.value}), io.Discard)
		if err == nil {
			t.Errorf("%s=%s: no error", tc.name, tc.value)
			continue
		}
		if !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), tc.value) {
			t.Errorf("%s=%s: error %q does not name the variable and its value", tc.name, tc.value, err)
		}
	}
	// Every bad variable is reported, not just the first.
	_, err := parseConfig(nil, envOf(map[string]string{"AGENTMUX_MAX_SESSIONS": "abc", "AGENTMUX_BATCH_INTERVAL": "fast"}), io.Discard)
	if err == nil || !strings.Contains(err.Error(), "AGENTMUX_MAX_SESSIONS") || !strings.Contains(err.Error(), "AGENTMUX_BATCH_INTERVAL") {
		t.Errorf("two bad variables: error %v, want both named", err)
	}
}

// TestBadValueWords: a value a flag cannot take is answered with what it
// takes, in the words of --help, and not the flag package's "parse
// error", from the command line and from the environment alike.
func TestBadValueWords(t *testing.T) {
	for _, tc := range []struct {
		flag, value, want string
	}{
		{"max-sessions", "abc", "want a whole number, such as 4"},
		{"max-sessions", "2.5", "want a whole number, such as 4"},
		{"log-level", "loud", "want debug, info, warn or error"},
		{"batch-interval", "fast", "want a duration, such as 16ms"},
		{"shutdown-grace", "5", "want a duration, such as 5s"},
		{"mem-warn", "lots", "want a number, such as 87"},
		{"watch-temporaries", "maybe", "want true or false"},
	} {
		want := fmt.Sprintf("--%s %q: %s", tc.flag, tc.value, tc.want)
		_, err := parseConfig([]string{"--" + tc.flag + "=" + tc.value}, noEnv, io.Discard)
		if err == nil || err.Error() != want {
			t.Errorf("--%s=%s: error %v, want %q", tc.flag, tc.value, err, want)
		}
		want = fmt.Sprintf("%s=%q: %s", envName(tc.flag), tc.value, tc.want)
		_, err = parseConfig(nil, envOf(map[string]string{envName(tc.flag): tc.value}), io.Discard)
		if err == nil || err.Error() != want {
			t.Errorf("%s=%s: error %v, want %q", envName(tc.flag), tc.value, err, want)
		}
	}
}

func TestConfigValidation(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string // in the error
	}{
		{[]string{"--mcp-max-started", "0"}, []string{"--mcp-max-started 0", "at least 1", "--mcp=false"}},
		{[]string{"--mcp-max-depth", "0"}, []string{"--mcp-max-depth 0", "at least 1"}},
		{[]string{"--continue-text", "  "}, []string{"--continue-text", "must say something", "--continue-after-limit=false"}},
		{[]string{"--continue-text", strings.Repeat("x", 5000)}, []string{"--continue-text", "5000 bytes"}},
		{[]string{"--continue-margin", "-1s"}, []string{"--continue-margin -1s", "negative"}},
		{[]string{"--max-sessions", "0"}, []string{"--max-sessions 0", "at least 1"}},
		{[]string{"--port-base", "80"}, []string{"--port-base 80", "from 1024"}},
		{[]string{"--port-base", "65530"}, []string{"--port-base 65530", "from 1024 to 65526"}},
		{[]string{"--max-sessions", "-2"}, []string{"--max-sessions -2", "at least 1"}},
		{[]string{"--scrollback", "10"}, []string{"--scrollback 10", "1KiB"}},
		{[]string{"--scrollback", "1023"}, []string{"--scrollback 1023", "1KiB"}},
		{[]string{"--scrollback", "12XB"}, []string{"scrollback", "unknown unit"}},
		{[]string{"--batch-interval", "0"}, []string{"--batch-interval 0s", "above 0"}},
		{[]string{"--batch-interval", "-1ms"}, []string{"--batch-interval -1ms", "above 0"}},
		{[]string{"--batch-interval", "2s"}, []string{"--batch-interval 2s", "at most 1s"}},
		{[]string{"--shutdown-grace", "-1s"}, []string{"--shutdown-grace -1s", "negative"}},
		{[]string{"--log-level", "loud"}, []string{"log-level", "loud"}},
		{[]string{"--agent-cmd", ""}, []string{"agent-cmd", "empty command line"}},
		{[]string{"--agent-cmd", "sh -c 'echo"}, []string{"agent-cmd", "parse command line"}},
		{[]string{"--max-sessions", "many"}, []string{"max-sessions", "many"}},
		{[]string{"--no-such-flag"}, []string{"no-such-flag"}},
		{[]string{"extra"}, []string{"unexpected arguments", "extra"}},
		{[]string{"--addr", ":1", "one", "two"}, []string{"unexpected arguments", "one", "two"}},
		{[]string{"--idle-after", "0"}, []string{"--idle-after 0s", "above 0"}},
		{[]string{"--question-quiet", "-1s"}, []string{"--question-quiet -1s", "above 0"}},
		{[]string{"--warn-after", "1h", "--warn-error-after", "1h"}, []string{"--warn-error-after 1h0m0s", "longer than --warn-after 1h0m0s"}},
		{[]string{"--check-timeout", "500ms"}, []string{"--check-timeout 500ms", "at least 1s"}},
		{[]string{"--check-script", "   "}, []string{"check script", "only blanks"}},
		{[]string{"--idle-after", "30m", "--warn-after", "30m"}, []string{"--warn-after 30m0s", "longer than --idle-after 30m0s"}},
		{[]string{"--allowed-origins", "good.example"}, []string{"allowed-origins", `"good.example"`, "http:// or https://"}},
		{[]string{"--allowed-origins", "http://a.example, https://b.example/app"}, []string{"allowed-origins", "https://b.example/app", "nothing else"}},
		{[]string{"--allowed-origins", "null"}, []string{"allowed-origins", "null"}},
		{[]string{"--published-host", "localhost"}, []string{"published-host", "localhost", "IP address", "-p 127.0.0.1:8080:8080"}},
		{[]string{"--published-host", "127.0.0.1:8080"}, []string{"published-host", "IP address"}},
		{[]string{"--preview-domain", "https://preview.example.com"}, []string{"preview-domain", "DNS name"}},
		{[]string{"--preview-domain", "localhost"}, []string{"preview-domain", "DNS name"}},
		{[]string{"--checkpoint-max-file", "-1"}, []string{`--checkpoint-max-file "-1"`, "not a number of bytes"}},
		{[]string{"--checkpoint-max-file", "10 files"}, []string{"checkpoint-max-file", "unknown unit"}},
		{[]string{"--attachment-max", "0"}, []string{`--attachment-max "0"`, "more than 0 bytes"}},
		{[]string{"--github-api", "ghe.example.com"}, []string{"--github-api", "http(s) URL"}},
		{[]string{"--github-api", "https://user:pw@ghe.example/api/v3"}, []string{"--github-api", "without credentials"}},
		{[]string{"--pull-request-refresh", "100ms"}, []string{"--pull-request-refresh 100ms", "at least 1s"}},
		{[]string{"--attachments-per-session", "much"}, []string{"attachments-per-session", "unknown unit"}},
		{[]string{"--checkpoint-max-total", "lots"}, []string{`--checkpoint-max-total "lots"`, "unknown unit"}},
		{[]string{"--checkpoint-max-total", "2048GiB"}, []string{"checkpoint-max-total", "too large"}},
		{[]string{"--name", "box\x1b[2J"}, []string{"--name", `'\x1b'`}},
		{[]string{"--name", strings.Repeat("n", 65)}, []string{"--name", "at most 64 bytes"}},
	} {
		_, err := parseConfig(tc.args, noEnv, io.Discard)
		if err == nil {
			t.Errorf("%q: no error", tc.args)
			continue
		}
		if errors.Is(err, flag.ErrHelp) {
			t.Errorf("%q: got ErrHelp", tc.args)
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%q: error %q does not contain %q", tc.args, err, w)
			}
		}
	}

	// The edges themselves are fine.
	for _, args := range [][]string{
		{"--max-sessions", "1"},
		{"--scrollback", "1KiB"},
		{"--batch-interval", "1s"},
		{"--batch-interval", "1ms"},
		{"--shutdown-grace", "0"},
		{"--allowed-origins", "https://A.example:8443/, http://[::1]:3000, *"},
		{"--published-host", "0.0.0.0"},
		{"--published-host", "::"},
	} {
		if _, err := parseConfig(args, noEnv, io.Discard); err != nil {
			t.Errorf("%q: %v", args, err)
		}
	}
}

func TestParseSize(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int
	}{
		{"1048576", 1048576},
		{"0", 0},
		{"512KiB", 512 << 10},
		{"1MiB", 1 << 20},
		{"1M", 1 << 20},
		{"1m", 1 << 20},
		{"64K", 64 << 10},
		{"2MB", 2_000_000},
		{"3kb", 3000},
		{"1.5KiB", 1536},
		{".5MiB", 512 << 10},
		{"1G", 1 << 30},
		{"1GB", 1e9},
		{"100B", 100},
		{" 2 MiB ", 2 << 20},
		{"1024GiB", 1 << 40},
	} {
		got, err := parseSize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
	for _, in := range []string{"", "abc", "-1", "-1KiB", "12XB", "1.2.3K", "1e3", "KiB", "2TiB", "1025GiB", "0x10"} {
		got, err := parseSize(in)
		if err == nil {
			t.Errorf("parseSize(%q) = %d, want an error", in, got)
			continue
		}
		if !strings.Contains(err.Error(), `"`+in+`"`) {
			t.Errorf("parseSize(%q): error %q does not quote the input", in, err)
		}
	}
}

func TestHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		var out bytes.Buffer
		_, err := parseConfig([]string{arg}, noEnv, &out)
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s: err %v, want flag.ErrHelp", arg, err)
		}
		text := out.String()
		for _, name := range allFlags {
			want := "--" + name + " (" + envName(name) + ")"
			if !strings.Contains(text, want) {
				t.Errorf("%s: usage lacks %q:\n%s", arg, want, text)
			}
		}
		// Every flag listed is one we know, so allFlags stays complete.
		listed := linesWith(text, "  --", "(AGENTMUX_")
		if len(listed) != len(allFlags) {
			t.Errorf("%s: usage lists %d flags, want %d:\n%s", arg, len(listed), len(allFlags), strings.Join(listed, "\n"))
		}
		for _, def := range []string{"127.0.0.1:8080", "1MiB", "16ms", "5s", "claude", "10MiB", "50MiB"} {
			if !strings.Contains(text, def) {
				t.Errorf("%s: usage does not show the default %q", arg, def)
			}
		}
	}
}

// profileFor parses args and returns the default profile and what it logged.
func profileFor(t *testing.T, args ...string) (sessions.Profile, string, error) {
	t.Helper()
	cfg, err := parseConfig(args, noEnv, io.Discard)
	if err != nil {
		t.Fatalf("parseConfig(%q): %v", args, err)
	}
	var logs bytes.Buffer
	p, err := defaultProfile(cfg, slog.New(slog.NewTextHandler(&logs, nil)))
	return p, logs.String(), err
}

func TestDefaultProfile(t *testing.T) {
	for _, tc := range []struct {
		args      []string
		name      string
		start     []string
		resumeSet bool
	}{
		{[]string{"--agent-cmd", "bash -l"}, "custom", []string{"bash", "-l"}, false},
		{[]string{"--agent-cmd", "sh -c 'echo hi'"}, "custom", []string{"sh", "-c", "echo hi"}, false},
		{[]string{"--agent-cmd", `sh -c "echo \"a b\""`}, "custom", []string{"sh", "-c", `echo "a b"`}, false},
		{[]string{"--agent", "custom", "--agent-cmd", "sleep 1"}, "custom", []string{"sleep", "1"}, false},
		{[]string{"--agent", "shell"}, "shell", []string{sessions.LoginShell(), "-l"}, false},
		// A named profile keeps its name and resume command; --agent-cmd
		// only replaces how it starts.
		{[]string{"--agent", "claude", "--agent-cmd", "sh"}, "claude", []string{"sh"}, true},
	} {
		p, logs, err := profileFor(t, tc.args...)
		if err != nil {
			t.Errorf("%q: %v", tc.args, err)
			continue
		}
		if p.Name != tc.name || !slices.Equal(p.Start, tc.start) || (len(p.Resume) > 0) != tc.resumeSet {
			t.Errorf("%q: profile %+v, want name %s start %q", tc.args, p, tc.name, tc.start)
		}
		if logs != "" {
			t.Errorf("%q: logged %q, want nothing", tc.args, logs)
		}
	}
	// The variable implies custom just as the flag does.
	cfg, err := parseConfig(nil, envOf(map[string]string{"AGENTMUX_AGENT_CMD": "bash -l"}), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if p, err := defaultProfile(cfg, slog.New(slog.DiscardHandler)); err != nil || p.Name != "custom" || !slices.Equal(p.Start, []string{"bash", "-l"}) {
		t.Errorf("AGENTMUX_AGENT_CMD=bash -l: %+v, %v; want custom [bash -l]", p, err)
	}
}

func TestDefaultProfileErrors(t *testing.T) {
	_, _, err := profileFor(t, "--agent", "custom")
	if err == nil || !strings.Contains(err.Error(), "--agent-cmd") {
		t.Errorf("--agent custom without --agent-cmd: %v, want an error naming --agent-cmd", err)
	}
	// An unknown profile is a configuration error, caught with the flags.
	_, err = parseConfig([]string{"--agent", "gpt"}, noEnv, io.Discard)
	if err == nil {
		t.Fatal("--agent gpt: no error")
	}
	for _, known := range []string{"gpt", "claude", "codex", "aider", "shell", "custom"} {
		if !strings.Contains(err.Error(), known) {
			t.Errorf("--agent gpt: error %q does not mention %q", err, known)
		}
	}
}

// pathWithout sets PATH to a fresh directory holding links to only the
// named programs, so anything else, claude included, is not installed.
func pathWithout(t *testing.T, keep ...string) {
	t.Helper()
	dir := t.TempDir()
	for _, name := range keep {
		p, err := exec.LookPath(name)
		if err != nil {
			t.Fatalf("need %s: %v", name, err)
		}
		if err := os.Symlink(p, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", dir)
	if _, err := exec.LookPath("claude"); err == nil {
		t.Fatal("claude still found on PATH")
	}
}

func TestClaudeMissingFallsBackToShell(t *testing.T) {
	pathWithout(t)
	p, logs, err := profileFor(t) // the default agent is claude
	if err != nil {
		t.Fatal(err)
	}
	if shell := sessions.BuiltinProfiles()[sessions.ProfileShell]; p.Name != shell.Name || !slices.Equal(p.Start, shell.Start) {
		t.Errorf("profile %+v, want the shell profile %+v", p, shell)
	}
	lines := linesWith(logs, "level=")
	warn := linesWith(logs, "level=WARN")
	if len(lines) != 1 || len(warn) != 1 {
		t.Fatalf("want exactly one log line, a WARN; got:\n%s", logs)
	}
	for _, want := range []string{"claude", "not installed", "shell"} {
		if !strings.Contains(warn[0], want) {
			t.Errorf("warning %q does not mention %q", warn[0], want)
		}
	}

	// Named explicitly it falls back alike.
	p, logs, err = profileFor(t, "--agent", "codex")
	if err != nil || p.Name != "shell" || len(linesWith(logs, "level=WARN", "codex", "not installed")) != 1 {
		t.Errorf("--agent codex without codex: %+v, %v, logs %q", p, err, logs)
	}
}

func TestMemoryLimit(t *testing.T) {
	cfg, err := parseConfig(nil, noEnv, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if limit, ok := memoryLimit(cfg, noEnv); !ok || limit != 18<<20 {
		t.Errorf("default limit %d (%v), want 18 MiB: four 1 MiB rings and 1 MiB each, two rings for a save, 8 MiB", limit, ok)
	}
	cfg.Scrollback, cfg.MaxSessions = 16<<20, 8
	if limit, _ := memoryLimit(cfg, noEnv); limit != 8*17<<20+2*16<<20+8<<20 {
		t.Errorf("limit %d does not grow with the rings", limit)
	}
	if _, ok := memoryLimit(cfg, envOf(map[string]string{"GOMEMLIMIT": "1GiB"})); ok {
		t.Error("GOMEMLIMIT set, and the server set its own limit anyway")
	}
}
