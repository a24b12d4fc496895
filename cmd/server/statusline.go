package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentmux/agentmux/sessions"
)

// Claude Code runs its status line command after each message with what
// the session spends (model, cost, context, the account's windows) as
// JSON on stdin, and shows what it prints under its input. agentmux's
// settings for the run name `agentmux hook statusline`, which hands that
// input to the server and then shows the user's own status line, run
// with the same input, or a short one of its own when they set none.

// statusLineTimeout bounds the post to the server and the user's command
// each: Claude Code waits for the line.
const statusLineTimeout = 3 * time.Second

// statusLineMain is `agentmux hook statusline`. Like hookMain, it exits 0
// whatever happens, and says trouble on stderr: a failing status line
// would only blank Claude's.
func statusLineMain(stdin io.Reader, getenv func(string) string, stdout, stderr io.Writer) int {
	input, err := io.ReadAll(io.LimitReader(stdin, sessions.MaxStatusLineBytes))
	if err != nil {
		fmt.Fprintf(stderr, "agentmux hook statusline: read input: %v\n", err)
		return 0
	}
	if url, secret := getenv(sessions.EnvHookURL), getenv(sessions.EnvHookSecret); url != "" && secret != "" {
		postStatusLine(url+"/statusline", secret, input, stderr)
	}
	var in statusInput
	_ = json.Unmarshal(input, &in) // a line is printed whatever the input
	if cmd := userStatusLine(in.projectDir(), getenv); cmd != "" {
		if out, ok := runStatusLine(cmd, in.projectDir(), input, stderr); ok {
			_, _ = stdout.Write(out)
			return 0
		}
	}
	fmt.Fprintln(stdout, defaultStatusLine(input))
	return 0
}

// postStatusLine hands the input to the server that started the agent.
func postStatusLine(url, secret string, input []byte, stderr io.Writer) {
	ctx, cancel := context.WithTimeout(context.Background(), statusLineTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(input))
	if err != nil {
		fmt.Fprintf(stderr, "agentmux hook statusline: %v\n", err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(sessions.HookHeader, secret)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Fprintf(stderr, "agentmux hook statusline: %v\n", err)
		return
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		fmt.Fprintf(stderr, "agentmux hook statusline: the server answered %s: %s\n", resp.Status, strings.TrimSpace(string(msg)))
	}
}

// statusInput is the part of the status line input the command reads
// itself.
type statusInput struct {
	Cwd       string `json:"cwd"`
	Workspace struct {
		ProjectDir string `json:"project_dir"`
	} `json:"workspace"`
}

func (in statusInput) projectDir() string {
	if in.Workspace.ProjectDir != "" {
		return in.Workspace.ProjectDir
	}
	return in.Cwd
}

// userStatusLine returns the status line command the user configured for
// Claude Code, which agentmux's settings for the run override: the first
// set in the project's local settings, the project's, then the user's, as
// Claude Code ranks them; empty when none is.
func userStatusLine(projectDir string, getenv func(string) string) string {
	var files []string
	if projectDir != "" {
		files = append(files, filepath.Join(projectDir, ".claude", "settings.local.json"), filepath.Join(projectDir, ".claude", "settings.json"))
	}
	if dir := getenv("CLAUDE_CONFIG_DIR"); dir != "" {
		files = append(files, filepath.Join(dir, "settings.json"))
	} else if home := getenv("HOME"); home != "" {
		files = append(files, filepath.Join(home, ".claude", "settings.json"))
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var s struct {
			StatusLine *struct {
				Type    string `json:"type"`
				Command string `json:"command"`
			} `json:"statusLine"`
		}
		if json.Unmarshal(b, &s) == nil && s.StatusLine != nil && s.StatusLine.Command != "" {
			return s.StatusLine.Command
		}
	}
	return ""
}

// runStatusLine runs the user's status line command with the input, in
// the project, as Claude Code would, and returns what it printed.
func runStatusLine(command, dir string, input []byte, stderr io.Writer) ([]byte, bool) {
	ctx, cancel := context.WithTimeout(context.Background(), statusLineTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "/bin/sh", "-c", command)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(input)
	cmd.Stderr = stderr
	out, err := cmd.Output()
	if err != nil {
		fmt.Fprintf(stderr, "agentmux hook statusline: your status line %q: %v\n", command, err)
		return nil, false
	}
	return out, true
}

// defaultStatusLine is the line shown when the user set none: the
// model, the context used and the cost, as far as reported.
func defaultStatusLine(input []byte) string {
	u, err := sessions.ParseClaudeStatus(input, time.Now())
	if err != nil {
		return "agentmux"
	}
	parts := []string{}
	if u.Model != "" {
		parts = append(parts, u.Model)
	}
	if u.ContextPercent != nil {
		parts = append(parts, fmt.Sprintf("context %.0f%%", *u.ContextPercent))
	}
	if u.CostUSD != nil {
		parts = append(parts, fmt.Sprintf("$%.2f", *u.CostUSD))
	}
	for _, w := range u.Windows {
		parts = append(parts, fmt.Sprintf("%s %.0f%%", map[string]string{"five_hour": "5h", "seven_day": "7d"}[w.Name], w.UsedPercent))
	}
	if len(parts) == 0 {
		return "agentmux"
	}
	return strings.Join(parts, " · ")
}
