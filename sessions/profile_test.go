package sessions

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestLoginShellWithoutSHELL covers a container's PID 1 or a CI job, where
// $SHELL is unset: the shell profile must still name a shell that exists.
func TestLoginShellWithoutSHELL(t *testing.T) {
	t.Setenv("SHELL", "")
	onlySh := t.TempDir()
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatalf("need sh: %v", err)
	}
	if err := os.Symlink(sh, filepath.Join(onlySh, "sh")); err != nil {
		t.Fatal(err)
	}

	t.Setenv("PATH", onlySh)
	if got := LoginShell(); got != "sh" {
		t.Errorf("no bash on PATH: LoginShell() = %q, want sh", got)
	}

	bash, err := exec.LookPath("/bin/bash")
	if err != nil {
		t.Skip("no bash on this machine")
	}
	if err := os.Symlink(bash, filepath.Join(onlySh, "bash")); err != nil {
		t.Fatal(err)
	}
	if got := LoginShell(); got != "bash" {
		t.Errorf("bash on PATH: LoginShell() = %q, want bash", got)
	}

	t.Setenv("SHELL", "/bin/zsh")
	if got := LoginShell(); got != "/bin/zsh" {
		t.Errorf("SHELL=/bin/zsh: LoginShell() = %q, want it as set", got)
	}
}
