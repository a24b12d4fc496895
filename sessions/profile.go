package sessions

import (
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
)

// Profile says how to start an agent CLI and how to resume its
// conversation. In Start and Resume, the word "{id}" stands for the
// session's id, which is a UUID and so is accepted where the CLI wants its
// own conversation id; "{conversation}" in Resume stands for the id of the
// conversation the agent recorded (see Conversation).
type Profile struct {
	// Name is the profile's name, as given to --agent.
	Name string
	// Start is the command line of a new session.
	Start []string
	// Resume is the command line that continues an earlier conversation in
	// the same directory; empty means start afresh with Start.
	Resume []string
	// Hooks reports whether the agent takes a Claude Code settings file
	// (--settings) whose hooks say when it waits for its user.
	Hooks bool `json:",omitempty"`
	// Notify reports whether the agent takes a notify program (Codex's
	// notify setting, given with -c) that it runs with a JSON argument
	// when a turn ends.
	Notify bool `json:",omitempty"`
	// Conversation says how the agent's own conversation is found, so
	// a resume continues it or says why it cannot: ConversationClaude or
	// ConversationCodex; empty runs Resume as it is.
	Conversation string `json:",omitempty"`
}

// Profile names with a fixed meaning.
const (
	ProfileClaude = "claude"
	ProfileCodex  = "codex"
	ProfileAider  = "aider"
	ProfileShell  = "shell"
	ProfileCustom = "custom"
)

// BuiltinProfiles returns the agent profiles agentmux knows. The shell
// profile runs the user's login shell.
func BuiltinProfiles() map[string]Profile {
	shell := LoginShell()
	return map[string]Profile{
		ProfileClaude: {
			Name:         ProfileClaude,
			Start:        []string{"claude", "--session-id", "{id}"},
			Resume:       []string{"claude", "--resume", "{id}"},
			Hooks:        true,
			Conversation: ConversationClaude,
		},
		ProfileCodex: {
			// Without its shared background server, the TUI records the
			// conversation itself (so its id can be learned) and leaves
			// nothing running when it ends.
			Name:         ProfileCodex,
			Start:        []string{"codex", "--no-daemon"},
			Resume:       []string{"codex", "resume", "{conversation}", "--no-daemon"},
			Notify:       true,
			Conversation: ConversationCodex,
		},
		ProfileAider: {
			Name:   ProfileAider,
			Start:  []string{"aider"},
			Resume: []string{"aider", "--restore-chat-history"},
		},
		ProfileShell: {
			Name:  ProfileShell,
			Start: []string{shell, "-l"},
		},
	}
}

// CustomProfile returns the profile of a command given on the command line.
// It resumes by running the same command again.
func CustomProfile(argv []string) Profile {
	return Profile{Name: ProfileCustom, Start: slices.Clone(argv)}
}

// LoginShell returns $SHELL; when it is unset, as it is for a container's
// PID 1 or a CI job, bash if it is installed, else the POSIX sh every image
// has (Alpine and distroless-style images ship no bash).
func LoginShell() string {
	if sh := os.Getenv("SHELL"); sh != "" {
		return sh
	}
	if _, err := exec.LookPath("bash"); err == nil {
		return "bash"
	}
	return "sh"
}

// StartArgv returns the command line that starts a session with this id.
func (p Profile) StartArgv(id string) []string { return expand(p.Start, id) }

// ResumeArgv returns the command line that resumes a session with this id.
func (p Profile) ResumeArgv(id string) []string {
	if len(p.Resume) == 0 {
		return p.StartArgv(id)
	}
	return expand(p.Resume, id)
}

func expand(argv []string, id string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = strings.ReplaceAll(a, "{id}", id)
	}
	return out
}

// expandConversation returns argv with "{conversation}" as conv.
func expandConversation(argv []string, conv string) []string {
	out := make([]string, len(argv))
	for i, a := range argv {
		out[i] = strings.ReplaceAll(a, "{conversation}", conv)
	}
	return out
}

// CheckInstalled reports an error naming the program when the profile's
// program cannot be found on PATH.
func (p Profile) CheckInstalled() error {
	if len(p.Start) == 0 {
		return fmt.Errorf("agent profile %q has no command", p.Name)
	}
	if _, err := exec.LookPath(p.Start[0]); err != nil {
		return fmt.Errorf("agent %q: %q is not installed or not on PATH", p.Name, p.Start[0])
	}
	return nil
}
