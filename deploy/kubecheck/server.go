package kubecheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
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
