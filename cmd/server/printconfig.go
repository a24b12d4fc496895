package main

import (
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
)

// hiddenFlags are for tools, not people: --help leaves them out and no
// environment variable sets them.
var hiddenFlags = map[string]bool{"print-config": true}

// stdout receives --print-config's output: a variable, so that tests can
// read it (run's other output goes to the stderr it is given).
var stdout io.Writer = os.Stdout

// serverFacts is what --print-config prints: the settings agentmux takes
// and the routes it serves, as the binary has them, so that tools such as
// deploy/kubecheck check manifests against the server itself rather than
// a reading of its source.
type serverFacts struct {
	// Flags are every flag --help lists, in its order.
	Flags []flagFact `json:"flags"`
	// Routes are the HTTP routes the router registers, sorted by path and
	// method, with echo's patterns (":id", "/*").
	Routes []routeFact `json:"routes"`
}

type flagFact struct {
	// Name is the flag's name without dashes.
	Name string `json:"name"`
	// Env is the environment variable that sets it; absent when none
	// does (--version).
	Env string `json:"env,omitempty"`
	// Default is the default as the flag package prints it ("5s",
	// "127.0.0.1:8080"); empty when the usage says it in words.
	Default string `json:"default"`
	Usage   string `json:"usage"`
}

type routeFact struct {
	Method string `json:"method"`
	Path   string `json:"path"`
}

// facts gathers serverFacts from a fresh flag set and a router that is
// built but never served.
func facts() serverFacts {
	var out serverFacts
	newFlagSet(&config{}).VisitAll(func(f *flag.Flag) {
		if hiddenFlags[f.Name] {
			return
		}
		ff := flagFact{Name: f.Name, Default: f.DefValue, Usage: f.Usage}
		if !noEnvFlags[f.Name] {
			ff.Env = envName(f.Name)
		}
		out.Flags = append(out.Flags, ff)
	})
	for _, r := range (&server{}).newRouter().Routes() {
		out.Routes = append(out.Routes, routeFact{Method: r.Method, Path: r.Path})
	}
	slices.SortFunc(out.Routes, func(a, b routeFact) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Method, b.Method))
	})
	out.Routes = slices.Compact(out.Routes)
	return out
}

// printConfig writes facts() to w as indented JSON.
func printConfig(w io.Writer) error {
	b, err := json.MarshalIndent(facts(), "", "  ")
	if err != nil {
		return fmt.Errorf("print config: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}
