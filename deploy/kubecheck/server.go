package kubecheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Server is what the manifests must agree with in agentmux itself, as the
// server reports it (agentmux --print-config): the flags it takes, the
// environment variables that set them, the --shutdown-grace default and
// the routes it serves to GET.
type Server struct {
	// Flags are the flag names, without dashes.
	Flags map[string]bool
	// Env maps each environment variable agentmux reads to its flag.
	Env map[string]string
	// ShutdownGrace is --shutdown-grace's default.
	ShutdownGrace time.Duration
	// GETRoutes are the paths registered for GET, groups' prefixes
	// included, as echo's router sees them ("/api/health", "/*").
	GETRoutes []string
}

// ReadServer builds agentmux from the repository at root and asks it for
// its flags and routes (go run ./cmd/server --print-config), so that the
// manifests are checked against the server as it is, not as it was when
// they were written. AGENTMUX_* variables are kept from it: they would
// set its flags, and a bad one would stop it.
func ReadServer(ctx context.Context, root string) (Server, error) {
	cmd := exec.CommandContext(ctx, "go", "run", "./cmd/server", "--print-config")
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTMUX_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return Server{}, fmt.Errorf("agentmux --print-config: %w: %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return ParseServer(stdout.Bytes())
}

// printedConfig is the part of agentmux --print-config's output the checks
// read; see cmd/server/printconfig.go.
type printedConfig struct {
	Flags []struct {
		Name    string `json:"name"`
		Env     string `json:"env"`
		Default string `json:"default"`
	} `json:"flags"`
	Routes []struct {
		Method string `json:"method"`
		Path   string `json:"path"`
	} `json:"routes"`
}

// ParseServer reads Server from the output of agentmux --print-config.
func ParseServer(b []byte) (Server, error) {
	var pc printedConfig
	if err := json.Unmarshal(b, &pc); err != nil {
		return Server{}, fmt.Errorf("agentmux --print-config: %w", err)
	}
	srv := Server{Flags: map[string]bool{}, Env: map[string]string{}}
	var errs []error
	graceSeen := false
	for _, f := range pc.Flags {
		if f.Name == "" || srv.Flags[f.Name] {
			errs = append(errs, fmt.Errorf("a flag without a name, or named twice: %q", f.Name))
			continue
		}
		srv.Flags[f.Name] = true
		if f.Env != "" {
			if other, dup := srv.Env[f.Env]; dup {
				errs = append(errs, fmt.Errorf("%s sets both --%s and --%s", f.Env, other, f.Name))
			}
			srv.Env[f.Env] = f.Name
		}
		if f.Name == "shutdown-grace" {
			graceSeen = true
			d, err := time.ParseDuration(f.Default)
			if err != nil {
				errs = append(errs, fmt.Errorf("--shutdown-grace default: %w", err))
			}
			srv.ShutdownGrace = d
		}
	}
	if len(srv.Flags) == 0 {
		errs = append(errs, errors.New("no flags"))
	} else if !graceSeen {
		errs = append(errs, errors.New("no --shutdown-grace flag"))
	}
	for _, r := range pc.Routes {
		if r.Method == "GET" && !slices.Contains(srv.GETRoutes, r.Path) {
			srv.GETRoutes = append(srv.GETRoutes, r.Path)
		}
	}
	slices.Sort(srv.GETRoutes)
	if len(srv.GETRoutes) == 0 {
		errs = append(errs, errors.New("no GET routes"))
	}
	if err := errors.Join(errs...); err != nil {
		return Server{}, fmt.Errorf("agentmux --print-config: %w", err)
	}
	return srv, nil
}

// Hub is what the manifests must agree with in agentmux hub, as the hub
// reports it (agentmux hub --help): its flags, the environment variables
// that set them, and the defaults the checks need.
type Hub struct {
	// Flags are the flag names, without dashes.
	Flags map[string]bool
	// Env maps each environment variable the hub reads to its flag.
	Env map[string]string
	// Addr is --addr's default.
	Addr string
	// ShutdownGrace is --shutdown-grace's default.
	ShutdownGrace time.Duration
}

// EnvOf is the variable that sets flag, or "".
func (h Hub) EnvOf(flag string) string {
	for env, f := range h.Env {
		if f == flag {
			return env
		}
	}
	return ""
}

// ReadHub builds agentmux from the repository at root and reads the hub's
// flags from its help (go run ./cmd/server hub --help), as ReadServer
// reads the workspace's. The help is for people; a --print-config of the
// hub's own would be sturdier.
func ReadHub(ctx context.Context, root string) (Hub, error) {
	cmd := exec.CommandContext(ctx, "go", "run", "./cmd/server", "hub", "--help")
	cmd.Dir = root
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AGENTMUX_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return Hub{}, fmt.Errorf("agentmux hub --help: %w: %s", err, bytes.TrimSpace(out.Bytes()))
	}
	return ParseHubHelp(out.Bytes())
}

var (
	hubFlagLine = regexp.MustCompile(`^  --([a-z0-9-]+) \((AGENTMUX_[A-Z0-9_]+)\)$`)
	hubDefault  = regexp.MustCompile(`\(default ([^()]*)\)$`)
)

// ParseHubHelp reads Hub from the output of agentmux hub --help: each flag
// on a line "  --NAME (VARIABLE)", its usage on the next, ending in
// "(default VALUE)" when it has one.
func ParseHubHelp(b []byte) (Hub, error) {
	h := Hub{Flags: map[string]bool{}, Env: map[string]string{}}
	defaults := map[string]string{}
	lines := strings.Split(string(b), "\n")
	for i, line := range lines {
		m := hubFlagLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		h.Flags[m[1]] = true
		h.Env[m[2]] = m[1]
		if i+1 < len(lines) {
			if d := hubDefault.FindStringSubmatch(strings.TrimSpace(lines[i+1])); d != nil {
				defaults[m[1]] = d[1]
			}
		}
	}
	var errs []error
	if len(h.Flags) == 0 {
		return Hub{}, errors.New("agentmux hub --help: found no flags (the deploy checks read it; update kubecheck/server.go if its shape changed)")
	}
	for _, f := range []string{"addr", "token", "token-file", "peers", "discover", "discover-token-file", "discover-open-url", "shutdown-grace"} {
		if !h.Flags[f] {
			errs = append(errs, fmt.Errorf("no --%s", f))
		}
	}
	h.Addr = defaults["addr"]
	if h.Addr == "" {
		errs = append(errs, errors.New("no default for --addr"))
	}
	if d, err := time.ParseDuration(defaults["shutdown-grace"]); err != nil {
		errs = append(errs, fmt.Errorf("--shutdown-grace default: %w", err))
	} else {
		h.ShutdownGrace = d
	}
	if err := errors.Join(errs...); err != nil {
		return Hub{}, fmt.Errorf("agentmux hub --help: %w", err)
	}
	return h, nil
}
