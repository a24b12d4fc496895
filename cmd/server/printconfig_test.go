package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
)

// TestPrintConfig: --print-config prints, as JSON, every flag --help lists
// with its environment variable and default, --version without one, and
// the routes the router serves; then the server exits without starting.
func TestPrintConfig(t *testing.T) {
	var out, errOut bytes.Buffer
	old := stdout
	stdout = &out
	t.Cleanup(func() { stdout = old })
	if code := run(nil, []string{"--print-config"}, noEnv, &errOut, nil); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var got serverFacts
	dec := json.NewDecoder(&out)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("output is not the facts as JSON: %v\n%s", err, out.String())
	}
	flags := map[string]flagFact{}
	for _, f := range got.Flags {
		flags[f.Name] = f
	}
	if len(flags) != len(allFlags)+1 || len(got.Flags) != len(flags) {
		t.Errorf("%d flags printed, want the %d --help lists and --version", len(got.Flags), len(allFlags))
	}
	for _, name := range allFlags {
		if f := flags[name]; f.Env != envName(name) || f.Usage == "" {
			t.Errorf("flag %s printed as %+v, want env %s and a usage", name, f, envName(name))
		}
	}
	if f, ok := flags["version"]; !ok || f.Env != "" {
		t.Errorf("--version printed as %+v (present %v), want it without an environment variable", f, ok)
	}
	if f := flags["shutdown-grace"]; f.Default != "5s" {
		t.Errorf("--shutdown-grace default printed as %q, want 5s", f.Default)
	}
	for _, want := range []routeFact{{"GET", "/api/health"}, {"POST", "/api/sessions"}, {"GET", "/ws"}, {"GET", "/*"}} {
		if !slices.Contains(got.Routes, want) {
			t.Errorf("routes lack %s %s: %v", want.Method, want.Path, got.Routes)
		}
	}
	if errOut.Len() != 0 {
		t.Errorf("stderr: %s", errOut.String())
	}
}

// TestPrintConfigIsHidden: --help does not list --print-config, and no
// environment variable sets it (a stray AGENTMUX_PRINT_CONFIG must not
// turn a server into a printer).
func TestPrintConfigIsHidden(t *testing.T) {
	var help bytes.Buffer
	if _, err := parseConfig([]string{"--help"}, noEnv, &help); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	if strings.Contains(help.String(), "print-config") {
		t.Errorf("--help lists --print-config:\n%s", help.String())
	}
	cfg, err := parseConfig(nil, envOf(map[string]string{"AGENTMUX_PRINT_CONFIG": "true"}), &help)
	if err != nil || cfg.PrintConfig {
		t.Errorf("AGENTMUX_PRINT_CONFIG=true: PrintConfig %v, err %v; want it ignored", cfg.PrintConfig, err)
	}
}
