package sessions_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/sessions"
)

// editorWindow is how long the stand-in editor takes to handle a burst of
// input: anything arriving meanwhile joins it. Longer than any fixed
// pause between a text and its Enter would be.
const editorWindow = "600ms"

// pasteEditor runs this test binary as the stand-in line editor of
// editor_test.go: a burst is a paste, and only an Enter on its own
// submits.
func pasteEditor(t *testing.T) sessions.CreateOptions {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return sessions.CreateOptions{Command: []string{"env", "AGENTMUX_TEST_PASTE_EDITOR=" + editorWindow, exe}}
}

// TestQueuedPromptsSubmittedToAPasteEditor: queued prompts typed into an
// editor that takes its time with a paste are each submitted, the Enter
// going in only once the editor has taken the text, and a multi-line
// prompt stays one prompt.
func TestQueuedPromptsSubmittedToAPasteEditor(t *testing.T) {
	m, _ := newManager(t, sessions.Options{Timing: fastTiming})
	s := create(t, m, pasteEditor(t))
	out := follow(s)
	prompts := []string{"first prompt", "second,\nover two lines", "third prompt"}
	for _, p := range prompts {
		queue(t, s, alice, p)
	}
	for _, p := range prompts {
		out.expect(t, "submitted: "+strings.ReplaceAll(p, "\n", "⏎")+"\r")
	}
}

// TestQueuedPromptWaitsForTheTurnEnd: an agent whose Stop hook says it
// waits before it has ended its turn on screen (Claude Code draws
// "running stop hook", then nothing while the hook's process exits, then
// its prompt) gets the next queued prompt only after that last redraw;
// typed earlier, it would join the prompt just submitted.
func TestQueuedPromptWaitsForTheTurnEnd(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	editor := sessions.Profile{Name: "hooked-editor", Hooks: true, Start: []string{"env",
		"AGENTMUX_TEST_PASTE_EDITOR=" + editorWindow, "AGENTMUX_TEST_PASTE_EDITOR_FINISH=600ms,150ms", exe}}
	m, _ := newManager(t, sessions.Options{
		Timing:   fastTiming,
		Profiles: map[string]sessions.Profile{editor.Name: editor},
		Hooks:    &sessions.HookConfig{URL: "http://127.0.0.1:1/hooks", SettingsFile: filepath.Join(t.TempDir(), "hooks.json")},
	})
	s := create(t, m, sessions.CreateOptions{Name: "hooked", Agent: editor.Name})
	secret := sessions.HookSecret(s)
	stop := func() {
		t.Helper()
		if err := s.Hook(secret, []byte(`{"hook_event_name":"Stop"}`)); err != nil {
			t.Fatalf("the Stop hook: %v", err)
		}
	}
	out := follow(s)
	out.expect(t, "ready> ")
	stop() // the agent is at its prompt
	prompts := []string{"first prompt", "second prompt", "third prompt"}
	for _, p := range prompts {
		queue(t, s, alice, p)
	}
	for _, p := range prompts {
		out.expect(t, "submitted: "+p+"\r")
		// Its turn ends behind the Stop hook, which runs while the
		// agent still finishes on screen.
		out.expect(t, "finishing")
		stop()
	}
	if n := strings.Count(out.buf.String(), "submitted:"); n != len(prompts) {
		t.Fatalf("%d submits, want %d; output %q", n, len(prompts), out.buf.String())
	}
}

// TestHeldKeysSubmittedToAPasteEditor: keys typed into an ended session,
// text and then Enter, wake it and are submitted once, though the woken
// editor would take them arriving together for a paste.
func TestHeldKeysSubmittedToAPasteEditor(t *testing.T) {
	m, _ := newManager(t, sessions.Options{Timing: fastTiming})
	marker := filepath.Join(t.TempDir(), "ran")
	opts := pasteEditor(t)
	// The first run ends at once; the one the keys wake is the editor.
	opts.Command = append([]string{"sh", "-c", `test -e "$0" || { touch "$0"; exit 0; }; shift; exec "$@"`, marker, "-"}, opts.Command...)
	s := create(t, m, opts)
	waitRunEnded(t, s)
	out := follow(s)
	for _, keys := range []string{"RECALL", " woken", "\r"} {
		if err := m.Type(s, []byte(keys)); err != nil {
			t.Fatalf("typing %q into the ended session: %v", keys, err)
		}
	}
	out.expect(t, "submitted: RECALL woken\r")
	if n := strings.Count(out.buf.String(), "submitted:"); n != 1 {
		t.Fatalf("%d submits, want 1; output %q", n, out.buf.String())
	}
	// Keys typed now, into the running editor, go in as before.
	for _, keys := range []string{"again", "\r"} {
		if err := m.Type(s, []byte(keys)); err != nil {
			t.Fatal(err)
		}
		if keys == "again" {
			out.expect(t, "box: again")
		}
	}
	out.expect(t, "submitted: again\r")
}
