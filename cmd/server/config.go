package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/url"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mattn/go-shellwords"

	"github.com/agentmux/agentmux/afterlimit"
	"github.com/agentmux/agentmux/agentmcp"
	"github.com/agentmux/agentmux/attachments"
	"github.com/agentmux/agentmux/checkpoint"
	"github.com/agentmux/agentmux/checks"
	"github.com/agentmux/agentmux/internal/regfile"
	"github.com/agentmux/agentmux/internal/sameorigin"
	"github.com/agentmux/agentmux/internal/textrule"
	"github.com/agentmux/agentmux/pulls"
	"github.com/agentmux/agentmux/scripts"
	"github.com/agentmux/agentmux/sessions"
)

// config is the server's configuration after flags and environment.
type config struct {
	Addr           string
	Workspace      string
	DataDir        string
	SaveInterval   time.Duration
	Agent          string
	AgentCmd       []string
	MaxSessions    int
	KeepSessions   int
	Scrollback     int
	BatchInterval  time.Duration
	ShutdownGrace  time.Duration
	AllowedOrigins []string
	AllowedHosts   []string
	Token          string
	TokenFile      string
	// PublishedHost is the host address through which a container's port
	// is published (the HOST of docker's -p HOST:PORT:CONTAINERPORT), as
	// the person who started it says; empty when not said. It changes
	// only what start-up logs about listening without a token.
	PublishedHost string
	// Name is the workspace's name as a hub of many shows it; empty
	// means the machine's host name (main fills it in).
	Name        string
	LogLevel    slog.Level
	MemWarn     float64
	MemCritical float64
	MemInterval time.Duration
	WatchIgnore []string
	// PreviewDomain, when set, serves port P's preview also at
	// P.<PreviewDomain>, for a proxy in front that routes the domain here.
	PreviewDomain string
	// WatchTemporaries reports editors' and atomic writers' temporary
	// files too (watcher.Temporaries); false leaves them out.
	WatchTemporaries bool
	Timing           sessions.Timing
	// Checkpoints bound what a checkpoint keeps of untracked files; the
	// zero value is checkpoint's defaults.
	Checkpoints checkpoint.Options
	// Attachments bound the files people hand to agents; the zero value
	// is attachments' defaults.
	Attachments attachments.Options
	// Scripts are the workspace scripts set by flags, which win over the
	// workspace's agentmux.json or conductor.json, script by script.
	Scripts scripts.Overrides
	// TrustScripts approves every workspace script without asking, for
	// a server nobody is at.
	TrustScripts bool
	// CheckTimeout bounds each run of the check script.
	CheckTimeout time.Duration
	// PortBase is the lowest of the ports sessions get in blocks of ten
	// (AGENTMUX_PORT).
	PortBase int
	// MCP serves agentmux's MCP endpoint to the agents it runs and
	// registers it with them; MCPMaxStarted bounds the sessions one
	// agent may have started at once.
	MCP           bool
	MCPMaxStarted int
	MCPMaxDepth   int
	// ContinueAfterLimit is each usage limit's continue prompt's
	// default; ContinueText is the prompt, ContinueMargin how long after
	// the reset it is sent (package afterlimit).
	ContinueAfterLimit bool
	ContinueText       string
	ContinueMargin     time.Duration
	// GitHubTokenFile and GitHubAPI say where the token agentmux opens
	// pull requests with is read, and which API serves them; pulls
	// finds both otherwise (package forge). PullRequestRefresh is how
	// often a watched session's pull request is asked after.
	GitHubTokenFile    string
	GitHubAPI          string
	PullRequestRefresh time.Duration

	// Version asks only for the version.
	Version bool
	// PrintConfig asks only for the flags and routes, as JSON (see
	// printconfig.go).
	PrintConfig bool

	// agentSet reports whether --agent was given, by flag or environment.
	agentSet bool
	// tokenOnCommandLine reports whether the token came from --token
	// itself, where every process on the machine can read it.
	tokenOnCommandLine bool
}

// envPrefix is prepended to a flag's name, upper-cased with dashes as
// underscores, to name its environment variable.
const envPrefix = "AGENTMUX_"

// previewDomain is a DNS name of at least two labels.
var previewDomain = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$`)

func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseConfig reads flags from args and, for every flag not given there,
// its environment variable. Flags win. --help writes the usage to usageOut
// and returns flag.ErrHelp; a bad flag or value gives one line saying which.
func parseConfig(args []string, getenv func(string) string, usageOut io.Writer) (config, error) {
	cfg := config{Scrollback: 1 << 20}
	fs := newFlagSet(&cfg)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(fs, usageOut)
			return config{}, err
		}
		return config{}, flagError(fs, err)
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	cfg.tokenOnCommandLine = given["token"] && cfg.Token != ""
	if err := applyEnv(fs, getenv, given); err != nil {
		return config{}, err
	}
	cfg.agentSet = given["agent"]
	if cfg.TokenFile != "" {
		if cfg.Token != "" {
			return config{}, errors.New("--token and --token-file both give a token; give one")
		}
		tok, err := readTokenFile(cfg.TokenFile)
		if err != nil {
			return config{}, err
		}
		cfg.Token = tok
	}
	return cfg, validate(cfg)
}

// readTokenFile returns the first line of the token file, refusing a file
// that other users may read: the point of the file is that only the
// server's user knows the token.
func readTokenFile(name string) (string, error) {
	f, fi, err := regfile.Open(name)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	defer f.Close()
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return "", fmt.Errorf("--token-file %s: the file's mode is %04o, so other users may read the token; make it readable by its owner only (chmod 600 %s)", name, perm, name)
	}
	line, err := bufio.NewReader(io.LimitReader(f, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("--token-file %s: read: %w", name, err)
	}
	tok := strings.TrimSpace(line)
	if tok == "" {
		return "", fmt.Errorf("--token-file %s: the first line is empty; put the token there", name)
	}
	return tok, nil
}

// newFlagSet defines every flag, writing into cfg. It prints nothing:
// parseConfig says what went wrong in a line of its own.
func newFlagSet(cfg *config) *flag.FlagSet {
	fs := flag.NewFlagSet("agentmux", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:8080", "listen address")
	fs.StringVar(&cfg.Workspace, "workspace", "", "the tree the agents work in (default: the current directory)")
	fs.StringVar(&cfg.DataDir, "data-dir", "", "where the session database lives (default: a directory of the workspace's own, named after it, in $XDG_STATE_HOME/agentmux or ~/.local/state/agentmux)")
	fs.DurationVar(&cfg.SaveInterval, "save-interval", 5*time.Second, "how often changed screens are saved; a crash loses at most this much output")
	fs.StringVar(&cfg.Agent, "agent", sessions.ProfileClaude, "agent profile: claude, codex, aider, shell or custom")
	fs.Func("agent-cmd", "command line to run, e.g. 'bash -l'; implies custom when no --agent is named", func(s string) error {
		argv, err := shellwords.Parse(s)
		if err != nil {
			return fmt.Errorf("parse command line: %w", err)
		}
		if len(argv) == 0 {
			return errors.New("empty command line")
		}
		cfg.AgentCmd = argv
		return nil
	})
	fs.IntVar(&cfg.MaxSessions, "max-sessions", 4, "live sessions allowed at once")
	fs.IntVar(&cfg.KeepSessions, "keep-sessions", sessions.DefaultKeepSessions, "sessions kept, running or ended; past it a new session is refused until ended ones are deleted (nothing is deleted for you)")
	fs.Func("scrollback", "output ring kept per session, e.g. 1MiB, 512KiB (default 1MiB)", func(s string) error {
		n, err := parseSize(s)
		cfg.Scrollback = n
		return err
	})
	fs.DurationVar(&cfg.BatchInterval, "batch-interval", 16*time.Millisecond, "output frame interval")
	fs.DurationVar(&cfg.ShutdownGrace, "shutdown-grace", 5*time.Second, "time given to agents on shutdown before SIGKILL")
	fs.Func("allowed-origins", "comma-separated origins (scheme://host[:port]), besides the server's own, whose pages may use the API and the WebSocket (default: none)", func(s string) error {
		cfg.AllowedOrigins = nil
		for o := range strings.SplitSeq(s, ",") {
			if o = strings.TrimSpace(o); o != "" {
				cfg.AllowedOrigins = append(cfg.AllowedOrigins, o)
			}
		}
		_, err := sameorigin.New(cfg.AllowedOrigins)
		return err
	})
	fs.Func("allowed-hosts", "comma-separated host names the server answers to without --token, besides localhost and IP addresses; * for any (default: none)", func(s string) error {
		cfg.AllowedHosts = nil
		for h := range strings.SplitSeq(s, ",") {
			if h = strings.ToLower(strings.TrimSpace(h)); h != "" {
				cfg.AllowedHosts = append(cfg.AllowedHosts, h)
			}
		}
		return nil
	})
	fs.Float64Var(&cfg.MemWarn, "mem-warn", 87, "memory use, in percent of the container's limit, that shows a warning")
	fs.Float64Var(&cfg.MemCritical, "mem-critical", 93, "memory use, in percent, above which new sessions are refused")
	fs.DurationVar(&cfg.MemInterval, "mem-interval", 5*time.Second, "how often memory use is sampled")
	fs.Func("watch-ignore", "comma-separated extra names or glob patterns the workspace watcher ignores (node_modules, .git and .worktrees always are, and editors' temporaries unless --watch-temporaries)", func(s string) error {
		cfg.WatchIgnore = nil
		for p := range strings.SplitSeq(s, ",") {
			if p = strings.TrimSpace(p); p != "" {
				if _, err := path.Match(p, ""); err != nil {
					return fmt.Errorf("pattern %q: %w", p, err)
				}
				cfg.WatchIgnore = append(cfg.WatchIgnore, p)
			}
		}
		return nil
	})
	fs.BoolVar(&cfg.WatchTemporaries, "watch-temporaries", false, "report editors' swap, backup and lock files (.x.swp, 4913, x~, .#x, .~lock.x#) and atomic-write temporaries (x.tmp.*) as files too; by default the workspace watcher leaves them out")
	fs.DurationVar(&cfg.Timing.QuestionQuiet, "question-quiet", 1500*time.Millisecond, "quiet after output whose last line ends with '?' before a session counts as waiting for input")
	fs.DurationVar(&cfg.Timing.IdleAfter, "idle-after", 5*time.Minute, "silence after which a running session shows as idle")
	fs.DurationVar(&cfg.Timing.WarnAfter, "warn-after", 30*time.Minute, "silence after which a session is reported as possibly stuck")
	fs.DurationVar(&cfg.Timing.ErrorAfter, "warn-error-after", 2*time.Hour, "silence after which that report becomes an error")
	fs.Func("checkpoint-max-file", "untracked files bigger than this are left out of checkpoints, which name them instead, e.g. 10MiB or 1GB; 0 keeps files of any size (default 10MiB)", func(s string) error {
		n, err := checkpointSize(s)
		cfg.Checkpoints.MaxFileSize = n
		return err
	})
	fs.Func("checkpoint-max-total", "the most bytes of untracked files one checkpoint keeps: they go in smallest first while they fit, and the rest are left out and named; 0 for no total (default 50MiB)", func(s string) error {
		n, err := checkpointSize(s)
		cfg.Checkpoints.MaxTotalSize = n
		return err
	})
	fs.Func("attachment-max", "the largest file (an image, a PDF, text) that may be pasted or dropped onto a session, or sent to POST /api/sessions/:id/attachments, e.g. 20MiB (default 20MiB)", func(s string) error {
		n, err := attachmentSize(s)
		cfg.Attachments.MaxFile = n
		return err
	})
	fs.Func("attachments-per-session", "the most bytes of attachments one session keeps; they go when it is deleted, e.g. 200MiB (default 200MiB)", func(s string) error {
		n, err := attachmentSize(s)
		cfg.Attachments.MaxPerSession = n
		return err
	})
	fs.Func("preview-domain", "behind a proxy: a domain whose names P.<domain> it routes to this server, which then serves the dev server on port P there as it does at P.localhost (e.g. preview.example.com)", func(s string) error {
		d := strings.ToLower(strings.Trim(strings.TrimSpace(s), "."))
		if !previewDomain.MatchString(d) {
			return errors.New("want a DNS name such as preview.example.com, without a scheme, port or path")
		}
		cfg.PreviewDomain = d
		return nil
	})
	fs.StringVar(&cfg.Scripts.Setup, "setup-script", "", "workspace setup script, run in a new worktree session's terminal before its agent starts; wins over agentmux.json's scripts.setup and needs no approval")
	fs.StringVar(&cfg.Scripts.Run, "run-script", "", "workspace run script (a dev server), started for a session with POST /api/sessions/ID/run in a terminal of its own on the session's ports; wins over agentmux.json's scripts.run and needs no approval")
	fs.StringVar(&cfg.Scripts.Archive, "archive-script", "", "workspace archive script, run in a worktree before it is removed (the session archived, or deleted with it); wins over agentmux.json's scripts.archive and needs no approval")
	fs.StringVar(&cfg.Scripts.Check, "check-script", "", "workspace check script (e.g. 'npm test'), run in a session's tree at the end of every agent turn; wins over agentmux.json's scripts.check and needs no approval")
	fs.DurationVar(&cfg.CheckTimeout, "check-timeout", checks.DefaultLimit, "how long the check script may run at the end of a turn before it is stopped and counted as timed out")
	fs.Func("run-mode", "concurrent (every session's run script at once) or exclusive (starting one stops the others); wins over agentmux.json's runMode (default: the file's, else concurrent)", func(s string) error {
		switch m := scripts.Mode(s); m {
		case scripts.Concurrent, scripts.Exclusive:
			cfg.Scripts.RunMode = m
			return nil
		}
		return fmt.Errorf("want %s or %s", scripts.Concurrent, scripts.Exclusive)
	})
	fs.BoolVar(&cfg.TrustScripts, "trust-scripts", false, "approve the workspace's scripts (agentmux.json, conductor.json) without asking, for a server nobody is at; they run as the repository has them")
	fs.IntVar(&cfg.PortBase, "port-base", sessions.DefaultPortBase, fmt.Sprintf("the lowest port of the blocks of %d free ports each session gets, the first as AGENTMUX_PORT, for its dev servers", sessions.PortCount))
	fs.BoolVar(&cfg.MCP, "mcp", true, "serve agentmux's MCP tools to the agents it runs (list, start, prompt, wait for, read and stop sessions), registered for each Claude Code and Codex run without touching their own configuration; false gives agents none")
	fs.IntVar(&cfg.MCPMaxStarted, "mcp-max-started", agentmcp.DefaultMaxStarted, "how many sessions one agent may have started through the MCP tools at once")
	fs.IntVar(&cfg.MCPMaxDepth, "mcp-max-depth", agentmcp.DefaultMaxDepth, "how deep sessions may start sessions through the MCP tools: at 1 a session a person started may start some, and those start none")
	fs.BoolVar(&cfg.ContinueAfterLimit, "continue-after-limit", true, "when an account's usage limit stops a session's agent mid-turn, send it on by itself once the limit resets (each session can turn it off): the sessions go one at a time, in the order they stopped")
	fs.StringVar(&cfg.ContinueText, "continue-text", afterlimit.DefaultText, "the prompt typed into a session once the usage limit that stopped it resets (the prompts queued meanwhile go instead, when there are)")
	fs.DurationVar(&cfg.ContinueMargin, "continue-margin", afterlimit.DefaultMargin, "how long after a usage limit's reset time the stopped sessions are sent on: the agents round it")
	fs.StringVar(&cfg.GitHubTokenFile, "github-token-file", "", "a file holding the GitHub token agentmux opens and follows pull requests with, read at each use; without it GITHUB_TOKEN, GH_TOKEN, then `gh auth token` are tried. The token is the server's alone: no page and no agent is given it")
	fs.Func("github-api", "the GitHub API's base URL for pull requests, e.g. https://ghe.example.com/api/v3 for a GitHub Enterprise server reached at another address than its remote's host (default: https://api.github.com for github.com, https://<host>/api/v3 for other hosts)", func(s string) error {
		u, err := url.Parse(strings.TrimSpace(s))
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
			return errors.New("want an http(s) URL without credentials, query or fragment, such as https://ghe.example.com/api/v3")
		}
		cfg.GitHubAPI = strings.TrimRight(u.String(), "/")
		return nil
	})
	fs.DurationVar(&cfg.PullRequestRefresh, "pull-request-refresh", pulls.DefaultRefresh, "how often the pull request of a session someone watches is asked after (with conditional requests, which GitHub's rate limit does not count); at least 1s")
	fs.StringVar(&cfg.Name, "name", "", "the workspace's name, as a hub over many workspaces (agentmux hub) shows it (default: the machine's host name, in a Kubernetes pod the pod's name)")
	fs.StringVar(&cfg.Token, "token", "", "when set, every /api and /ws request must carry it; other processes can read a flag, so prefer AGENTMUX_TOKEN or --token-file")
	fs.StringVar(&cfg.TokenFile, "token-file", "", "read the token from this file's first line; the file must be readable by its owner only")
	fs.Func("published-host", "in a container: the host address its port is published on (the HOST of docker's -p HOST:PORT:8080), as you started it; 127.0.0.1 there means only that machine can connect, so listening on 0.0.0.0 without a token is logged as information rather than a warning (default: not said, which warns)", func(s string) error {
		h := strings.Trim(strings.TrimSpace(s), "[]")
		if net.ParseIP(h) == nil {
			return errors.New("want an IP address, as in docker's -p 127.0.0.1:8080:8080")
		}
		cfg.PublishedHost = h
		return nil
	})
	fs.TextVar(&cfg.LogLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	fs.BoolVar(&cfg.Version, "version", false, "print the version and exit")
	fs.BoolVar(&cfg.PrintConfig, "print-config", false, "print the flags, their environment variables and defaults, and the HTTP routes, as JSON, and exit")
	return fs
}

// noEnvFlags take no environment variable: AGENTMUX_VERSION names the
// version the image was built from, not a wish to print it.
var noEnvFlags = map[string]bool{"version": true}

// applyEnv sets every flag not given on the command line from its
// environment variable, when set.
func applyEnv(fs *flag.FlagSet, getenv func(string) string, given map[string]bool) error {
	var errs []error
	fs.VisitAll(func(f *flag.Flag) {
		if given[f.Name] || noEnvFlags[f.Name] || hiddenFlags[f.Name] {
			return
		}
		if v := getenv(envName(f.Name)); v != "" {
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: %s", envName(f.Name), v, wantFor(f, err.Error())))
				return
			}
			given[f.Name] = true
		}
	})
	return errors.Join(errs...)
}

// flagError rewords the flag package's errors, which name flags with one
// dash, as the help does: --scrollback "-5": ...
func flagError(fs *flag.FlagSet, err error) error {
	msg := err.Error()
	if m := badValue.FindStringSubmatch(msg); m != nil {
		reason := m[3]
		if f := fs.Lookup(m[2]); f != nil {
			reason = wantFor(f, reason)
		}
		return fmt.Errorf("--%s %q: %s", m[2], m[1], reason)
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return fmt.Errorf("unknown flag --%s", strings.TrimPrefix(name, "-"))
	}
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return fmt.Errorf("--%s needs a value", strings.TrimPrefix(name, "-"))
	}
	return err
}

var badValue = regexp.MustCompile(`^invalid (?:boolean )?value "(.*)" for (?:flag )?-(\S+): (.*)$`)

// wantFor says what flag f takes, for a value it refused with reason. The
// flag package's own kinds refuse with a bare "parse error", and slog's
// level names the package; those become what --help would say. Reasons
// the flags defined here give (fs.Func's) already say what is wrong.
func wantFor(f *flag.Flag, reason string) string {
	if f.Name == "log-level" {
		return "want debug, info, warn or error"
	}
	if reason != "parse error" {
		return reason
	}
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return reason
	}
	switch g.Get().(type) {
	case bool:
		return "want true or false"
	case int:
		return "want a whole number, such as " + f.DefValue
	case float64:
		return "want a number, such as " + f.DefValue
	case time.Duration:
		return "want a duration, such as " + f.DefValue
	}
	return reason
}

// validate checks what each flag alone cannot: ranges and relations.
func validate(cfg config) error {
	if _, ok := sessions.BuiltinProfiles()[cfg.Agent]; !ok && cfg.Agent != sessions.ProfileCustom {
		return fmt.Errorf("--agent %q: unknown profile (known: aider, claude, codex, custom, shell)", cfg.Agent)
	}
	if err := checkAddr(cfg.Addr); err != nil {
		return err
	}
	if err := checkName(cfg.Name); err != nil {
		return err
	}
	if err := cfg.Scripts.Validate(); err != nil {
		return fmt.Errorf("workspace scripts: %w", err)
	}
	switch {
	case cfg.MaxSessions < 1:
		return fmt.Errorf("--max-sessions %d: must be at least 1", cfg.MaxSessions)
	case strings.TrimSpace(cfg.ContinueText) == "":
		return fmt.Errorf("--continue-text: must say something (turn continuing off with --continue-after-limit=false)")
	case len(cfg.ContinueText) > 4096:
		return fmt.Errorf("--continue-text: %d bytes, more than the 4096 a prompt for this may have", len(cfg.ContinueText))
	case cfg.ContinueMargin < 0:
		return fmt.Errorf("--continue-margin %s: must not be negative", cfg.ContinueMargin)
	case cfg.PullRequestRefresh < time.Second:
		return fmt.Errorf("--pull-request-refresh %s: must be at least 1s", cfg.PullRequestRefresh)
	case cfg.MCPMaxDepth < 1:
		return fmt.Errorf("--mcp-max-depth %d: must be at least 1 (turn the tools off with --mcp=false)", cfg.MCPMaxDepth)
	case cfg.MCPMaxStarted < 1:
		return fmt.Errorf("--mcp-max-started %d: must be at least 1 (turn the tools off with --mcp=false)", cfg.MCPMaxStarted)
	case cfg.PortBase < 1024 || cfg.PortBase+sessions.PortCount-1 > 65535:
		return fmt.Errorf("--port-base %d: must be from 1024 to %d", cfg.PortBase, 65535-sessions.PortCount+1)
	case cfg.KeepSessions < cfg.MaxSessions:
		return fmt.Errorf("--keep-sessions %d: must be at least --max-sessions (%d)", cfg.KeepSessions, cfg.MaxSessions)
	case cfg.Scrollback < 1024:
		return fmt.Errorf("--scrollback %d: must be at least 1KiB", cfg.Scrollback)
	case cfg.BatchInterval <= 0 || cfg.BatchInterval > time.Second:
		return fmt.Errorf("--batch-interval %s: must be above 0 and at most 1s", cfg.BatchInterval)
	case cfg.ShutdownGrace < 0:
		return fmt.Errorf("--shutdown-grace %s: must not be negative", cfg.ShutdownGrace)
	case cfg.MemWarn <= 0 || cfg.MemCritical > 100:
		return fmt.Errorf("--mem-warn %g and --mem-critical %g: must lie between 0 and 100", cfg.MemWarn, cfg.MemCritical)
	case cfg.MemWarn >= cfg.MemCritical:
		return fmt.Errorf("--mem-warn %g must be below --mem-critical %g", cfg.MemWarn, cfg.MemCritical)
	case cfg.MemInterval < 100*time.Millisecond:
		return fmt.Errorf("--mem-interval %s: must be at least 100ms", cfg.MemInterval)
	case cfg.SaveInterval < 100*time.Millisecond || cfg.SaveInterval > 10*time.Second:
		return fmt.Errorf("--save-interval %s: must be between 100ms and 10s", cfg.SaveInterval)
	case cfg.Timing.QuestionQuiet <= 0 || cfg.Timing.IdleAfter <= 0 || cfg.Timing.WarnAfter <= 0:
		return fmt.Errorf("--question-quiet %s, --idle-after %s and --warn-after %s: must be above 0",
			cfg.Timing.QuestionQuiet, cfg.Timing.IdleAfter, cfg.Timing.WarnAfter)
	case cfg.Timing.WarnAfter <= cfg.Timing.IdleAfter:
		// A warned session must have gone idle first, so the status
		// change back to active is what tells clients the warning is over.
		return fmt.Errorf("--warn-after %s must be longer than --idle-after %s", cfg.Timing.WarnAfter, cfg.Timing.IdleAfter)
	case cfg.Timing.ErrorAfter <= cfg.Timing.WarnAfter:
		return fmt.Errorf("--warn-error-after %s must be longer than --warn-after %s", cfg.Timing.ErrorAfter, cfg.Timing.WarnAfter)
	case cfg.CheckTimeout < time.Second:
		return fmt.Errorf("--check-timeout %s: must be at least 1s", cfg.CheckTimeout)
	}
	return nil
}

// checkAddr refuses a listen address that is not host:port, before
// anything is opened.
func checkAddr(addr string) error {
	host, port, err := net.SplitHostPort(addr)
	if err == nil {
		_, err = net.LookupPort("tcp", port)
	}
	if err != nil || (host != "" && net.ParseIP(strings.Trim(host, "[]")) == nil && !validHostName(host)) {
		return fmt.Errorf("--addr %q: want host:port, such as 127.0.0.1:8080 or 0.0.0.0:8080", addr)
	}
	return nil
}

func validHostName(h string) bool {
	return h != "" && strings.IndexFunc(h, func(r rune) bool {
		return !(r == '.' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) < 0
}

// stateDir is agentmux's directory under the XDG base directory rules
// for state: $XDG_STATE_HOME/agentmux, else ~/.local/state/agentmux.
// Versions before issue 40 kept every workspace's database in it
// (sharedDatabase); each workspace now has a directory of its own in it.
func stateDir(getenv func(string) string) (string, error) {
	if state := getenv("XDG_STATE_HOME"); filepath.IsAbs(state) {
		return filepath.Join(state, "agentmux"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("no --data-dir given and no HOME to put ~/.local/state/agentmux in")
	}
	return filepath.Join(home, ".local", "state", "agentmux"), nil
}

// defaultDataDir is the data directory of the workspace, an absolute
// path, when --data-dir names none: a directory of its own under
// stateDir, named after the workspace's last element and a hash of its
// whole path (cleaned, as given: a workspace reached through a symlink
// is another one), so that two workspaces never share sessions, nor the
// database's lock. The name says which workspace it is to a person
// listing the directory; the hash tells apart two workspaces of the same
// name.
func defaultDataDir(getenv func(string) string, workspace string) (string, error) {
	if !filepath.IsAbs(workspace) {
		return "", fmt.Errorf("workspace %q is not an absolute path", workspace)
	}
	dir, err := stateDir(getenv)
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, workspaceDirName(filepath.Clean(workspace))), nil
}

// workspaceDirName is the name of the data directory of the workspace at
// the clean absolute path ws: its last element, in characters safe in
// any file name and at most 32 of them, a dash, and 12 hex digits of the
// SHA-256 of the path.
func workspaceDirName(ws string) string {
	base := filepath.Base(ws)
	if base == string(filepath.Separator) {
		base = "root"
	}
	base = strings.Map(func(r rune) rune {
		if r == '.' || r == '_' || r == '-' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, base)
	if len(base) > 32 {
		base = base[:32]
	}
	sum := sha256.Sum256([]byte(ws))
	return base + "-" + hex.EncodeToString(sum[:6])
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "agentmux runs coding agents in terminals and serves them to the browser.\n\n")
	fmt.Fprintf(w, "Usage:\n  agentmux [flags]    serve (the default)\n  agentmux health     check a running server (exit 0 when it answers); takes --addr\n  agentmux hook       used by agents' hooks (Claude Code); reads the hook's input on stdin\n  agentmux hub        one inbox over many workspaces (agentmux hub --help)\n  agentmux version    print the version, as --version does\n\n")
	fmt.Fprintf(w, "Every flag can also be set by its environment variable (but --version); flags win.\n\n")
	fs.VisitAll(func(f *flag.Flag) {
		if hiddenFlags[f.Name] {
			return
		}
		def := f.DefValue
		if f.Name == "log-level" {
			def = strings.ToLower(def) // slog's level is INFO; the flag takes info
		}
		if f.Name == "version" {
			fmt.Fprintf(w, "  --version\n      %s\n", f.Usage)
			return
		}
		fmt.Fprintf(w, "  --%s (%s)\n      %s", f.Name, envName(f.Name), f.Usage)
		if def != "" && !strings.Contains(f.Usage, "(default") {
			fmt.Fprintf(w, " (default %s)", def)
		}
		fmt.Fprintln(w)
	})
}

// parseSize reads a byte count such as 1048576, 512KiB, 1MiB, 2MB or 1G.
// Binary and decimal units are both accepted; a bare K, M or G is binary,
// as in most terminal and editor settings.
func parseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' && r != '-' })
	num, unit := t, ""
	if i >= 0 {
		num, unit = t[:i], strings.TrimSpace(t[i:])
	}
	units := map[string]float64{
		"": 1, "b": 1,
		"k": 1 << 10, "kb": 1e3, "kib": 1 << 10,
		"m": 1 << 20, "mb": 1e6, "mib": 1 << 20,
		"g": 1 << 30, "gb": 1e9, "gib": 1 << 30,
	}
	mult, ok := units[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("size %q: unknown unit %q (use one of %s)", s, unit, strings.Join(slices.Sorted(maps.Keys(units))[1:], ", "))
	}
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("size %q: not a number of bytes", s)
	}
	n := f * mult
	if n > 1<<40 {
		return 0, fmt.Errorf("size %q: too large", s)
	}
	return int(n), nil
}

// checkpointSize reads a checkpoint bound as parseSize does; 0, which
// the flags take for no limit, is checkpoint.Options' -1.
func checkpointSize(s string) (int64, error) {
	n, err := parseSize(s)
	if n == 0 && err == nil {
		return -1, nil
	}
	return int64(n), err
}

// attachmentSize reads an attachments bound as parseSize does; 0 would
// refuse every file, so it is refused.
func attachmentSize(s string) (int64, error) {
	n, err := parseSize(s)
	if err == nil && n == 0 {
		return 0, errors.New("must be more than 0 bytes")
	}
	return int64(n), err
}

// defaultProfile returns the profile new sessions run by default. When the
// profile's program is missing it says so in one line and falls back to
// the shell, so a first run anywhere shows a working terminal.
func defaultProfile(cfg config, log *slog.Logger) (sessions.Profile, error) {
	profiles := sessions.BuiltinProfiles()
	name := cfg.Agent
	if len(cfg.AgentCmd) > 0 && !cfg.agentSet {
		name = sessions.ProfileCustom
	}
	if name == sessions.ProfileCustom {
		if len(cfg.AgentCmd) == 0 {
			return sessions.Profile{}, errors.New("--agent custom needs --agent-cmd")
		}
		return sessions.CustomProfile(cfg.AgentCmd), nil
	}
	p, ok := profiles[name]
	if !ok {
		return sessions.Profile{}, fmt.Errorf("--agent %q: unknown profile (known: %s, custom)", name, strings.Join(slices.Sorted(maps.Keys(profiles)), ", "))
	}
	if len(cfg.AgentCmd) > 0 {
		p.Start = cfg.AgentCmd
	}
	if err := p.CheckInstalled(); err != nil {
		shell := profiles[sessions.ProfileShell]
		log.Warn(fmt.Sprintf("%v; new sessions will run the shell (%s) instead", err, strings.Join(shell.Start, " ")))
		return shell, nil
	}
	return p, nil
}

// maxName bounds --name: a hub shows it in a narrow column.
const maxName = 64

// checkName refuses a workspace name a hub could not show as it is.
func checkName(name string) error {
	if len(name) > maxName || !utf8.ValidString(name) {
		return fmt.Errorf("--name: at most %d bytes of UTF-8", maxName)
	}
	if r, bad := textrule.FirstNotLine(name); bad {
		return fmt.Errorf("--name %s: a name may not hold %q", textrule.Shown(name), r)
	}
	return nil
}
