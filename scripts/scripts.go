// Package scripts reads the workspace scripts in force for a workspace:
// setup, run, archive and check, and whether run scripts of different
// sessions may run at once. They come from agentmux.json at the
// workspace's root or, when there is none, from a conductor.json there
// (Conductor's file, read as it is, so a repository set up for Conductor
// works unchanged), and the server's flags win over either, script by
// script.
//
// Each script carries the SHA-256 of its text: a person approves a text,
// not a name, so a script changed by a commit or an agent is unapproved
// again. This package reads and names scripts, says which may run
// (Trust), and runs one when asked (Exec); it decides nothing about when,
// and keeps no approvals (sessions/store does).
//
// The file is read each time Load is called, not watched: it is a few
// hundred bytes, and whoever asks (the API, a session starting) wants
// what is there now.
package scripts

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/agentmux/agentmux/internal/regfile"
)

// Script names, in the order Set lists them.
const (
	Setup   = "setup"
	Run     = "run"
	Archive = "archive"
	Check   = "check"
)

// Names are the scripts a workspace may have, in the order Set lists them.
var Names = []string{Setup, Run, Archive, Check}

// Mode says whether the run scripts of different sessions may run at
// once.
type Mode string

// Run modes.
const (
	// Concurrent lets every session's run script run at once (the
	// default: each session has ports of its own).
	Concurrent Mode = "concurrent"
	// Exclusive stops any other session's run script before one starts,
	// for projects whose dev server cannot share (a fixed port, a lock
	// file). Conductor calls it "nonconcurrent".
	Exclusive Mode = "exclusive"
)

// Source says where a script came from.
type Source string

// Sources.
const (
	// SourceAgentmux is the workspace's agentmux.json.
	SourceAgentmux Source = FileName
	// SourceConductor is the workspace's conductor.json, read when there
	// is no agentmux.json.
	SourceConductor Source = ConductorFileName
	// SourceFlag is the server's flags (or their environment variables):
	// written by whoever started the server, so they need no approval.
	SourceFlag Source = "flag"
	// SourceSettings is the workspace settings set in agentmux's page:
	// written there by a person, so they need no approval either.
	SourceSettings Source = "settings"
)

// File names, at the workspace's root.
const (
	FileName          = "agentmux.json"
	ConductorFileName = "conductor.json"
)

// MaxFileSize bounds a scripts file: scripts are a few lines each, and
// the file is read on every request that asks for them.
const MaxFileSize = 64 << 10

// ErrInvalid means a scripts file could not be used: not JSON, a field
// this package does not know (in agentmux.json), a value of the wrong
// type, an empty script, a NUL, or a file over MaxFileSize. The message
// names the file and the field.
var ErrInvalid = errors.New("invalid scripts file")

// Script is one script in force.
type Script struct {
	// Name is Setup, Run, Archive or Check.
	Name string
	// Text is the shell command line, as written.
	Text string
	// Source is where it came from.
	Source Source
	// Hash is the SHA-256 of Text, in lower-case hex: what an approval
	// names.
	Hash string
}

// NeedsApproval reports whether the script must be approved before it
// runs: a script from the repository must, one from the server's flags
// need not.
func (s Script) NeedsApproval() bool { return s.Source != SourceFlag && s.Source != SourceSettings }

// Set is the scripts in force for a workspace.
type Set struct {
	// Scripts are those that are set, in the order of Names; a script
	// set nowhere is left out.
	Scripts []Script
	// RunMode is the file's (or the flags'), Concurrent when neither
	// says.
	RunMode Mode
	// File is the scripts file read, relative to the workspace
	// (FileName or ConductorFileName); empty when there is none.
	File string
}

// Get returns the script named name and whether it is in force.
func (s Set) Get(name string) (Script, bool) {
	for _, sc := range s.Scripts {
		if sc.Name == name {
			return sc, true
		}
	}
	return Script{}, false
}

// Overrides are scripts set by the server's flags. An empty field
// overrides nothing; the zero value takes everything from the file.
type Overrides struct {
	Setup   string `json:"setup"`
	Run     string `json:"run"`
	Archive string `json:"archive"`
	Check   string `json:"check"`
	// RunMode, when set, is the run mode whatever the file says.
	RunMode Mode `json:"runMode"`
}

func (o Overrides) get(name string) string {
	switch name {
	case Setup:
		return o.Setup
	case Run:
		return o.Run
	case Archive:
		return o.Archive
	case Check:
		return o.Check
	}
	return ""
}

// Validate reports whether the overrides can be used: no script holds a
// NUL (which no shell command line can) or only blanks (set it empty
// instead), all of them fit in MaxFileSize, and the run mode is one of
// the two.
func (o Overrides) Validate() error {
	size := 0
	for _, name := range Names {
		t := o.get(name)
		size += len(t)
		switch {
		case strings.ContainsRune(t, 0):
			return fmt.Errorf("%s script: contains a NUL byte", name)
		case t != "" && strings.TrimSpace(t) == "":
			return fmt.Errorf("%s script: only blanks; leave it empty instead", name)
		}
	}
	if size > MaxFileSize {
		return fmt.Errorf("the scripts are %d bytes; at most %d are kept", size, MaxFileSize)
	}
	if o.RunMode != "" && o.RunMode != Concurrent && o.RunMode != Exclusive {
		return fmt.Errorf("run mode %q: want %q or %q", o.RunMode, Concurrent, Exclusive)
	}
	return nil
}

// Hash returns the SHA-256 of a script's text, in lower-case hex.
func Hash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// IsHash reports whether h has the form of Hash's result, so a request's
// text that is not one is neither quoted back nor stored.
func IsHash(h string) bool {
	if len(h) != 2*sha256.Size {
		return false
	}
	for _, r := range h {
		if !('0' <= r && r <= '9' || 'a' <= r && r <= 'f') {
			return false
		}
	}
	return true
}

// agentmuxFile is agentmux.json's schema. Pointers tell a script left
// out (fine) from one set to "" (refused: most likely a mistake).
type agentmuxFile struct {
	Scripts struct {
		Setup   *string `json:"setup"`
		Run     *string `json:"run"`
		Archive *string `json:"archive"`
		Check   *string `json:"check"`
	} `json:"scripts"`
	RunMode *string `json:"runMode"`
}

// conductorFile is the part of conductor.json this package reads.
// Conductor owns that schema and may add to it, so fields it has and
// agentmux does not use are not refused.
type conductorFile struct {
	Scripts struct {
		Setup   *string `json:"setup"`
		Run     *string `json:"run"`
		Archive *string `json:"archive"`
	} `json:"scripts"`
	RunScriptMode *string `json:"runScriptMode"`
}

// Load returns the scripts in force for the workspace at root: its
// agentmux.json, or else its conductor.json, with over winning script by
// script. A file that cannot be used is an error wrapping ErrInvalid,
// naming the file; no file at all is an empty Set (plus the overrides).
func Load(root string, over Overrides) (Set, error) {
	return LoadLayers(root, Overrides{}, over)
}

// LoadLayers is Load with the workspace settings set in the page between
// the file and the flags: flags win over settings, which win over the
// file, script by script (and for the run mode).
func LoadLayers(root string, settings, over Overrides) (Set, error) {
	if err := over.Validate(); err != nil {
		return Set{}, fmt.Errorf("%w: flags: %v", ErrInvalid, err)
	}
	if err := settings.Validate(); err != nil {
		return Set{}, fmt.Errorf("%w: settings: %v", ErrInvalid, err)
	}
	texts := map[string]string{}
	set := Set{RunMode: Concurrent}
	var fileSource Source

	data, err := readFile(filepath.Join(root, FileName))
	switch {
	case err == nil:
		var f agentmuxFile
		if err := decode(data, &f, true); err != nil {
			return Set{}, fmt.Errorf("%w: %s: %v", ErrInvalid, FileName, err)
		}
		for name, p := range map[string]*string{Setup: f.Scripts.Setup, Run: f.Scripts.Run, Archive: f.Scripts.Archive, Check: f.Scripts.Check} {
			if p != nil {
				texts[name] = *p
			}
		}
		if f.RunMode != nil {
			switch m := Mode(*f.RunMode); m {
			case Concurrent, Exclusive:
				set.RunMode = m
			default:
				return Set{}, fmt.Errorf("%w: %s: field runMode: %q, want %q or %q", ErrInvalid, FileName, *f.RunMode, Concurrent, Exclusive)
			}
		}
		set.File, fileSource = FileName, SourceAgentmux
	case errors.Is(err, fs.ErrNotExist):
		data, err := readFile(filepath.Join(root, ConductorFileName))
		switch {
		case err == nil:
			var f conductorFile
			if err := decode(data, &f, false); err != nil {
				return Set{}, fmt.Errorf("%w: %s: %v", ErrInvalid, ConductorFileName, err)
			}
			for name, p := range map[string]*string{Setup: f.Scripts.Setup, Run: f.Scripts.Run, Archive: f.Scripts.Archive} {
				if p != nil {
					texts[name] = *p
				}
			}
			if f.RunScriptMode != nil {
				switch *f.RunScriptMode {
				case "concurrent":
					set.RunMode = Concurrent
				case "nonconcurrent":
					set.RunMode = Exclusive
				default:
					return Set{}, fmt.Errorf("%w: %s: field runScriptMode: %q, want \"concurrent\" or \"nonconcurrent\"", ErrInvalid, ConductorFileName, *f.RunScriptMode)
				}
			}
			set.File, fileSource = ConductorFileName, SourceConductor
		case errors.Is(err, fs.ErrNotExist):
		default:
			return Set{}, err
		}
	default:
		return Set{}, err
	}

	for _, name := range Names {
		if t, ok := texts[name]; ok {
			if err := checkText(t); err != nil {
				return Set{}, fmt.Errorf("%w: %s: field scripts.%s: %v", ErrInvalid, set.File, name, err)
			}
		}
	}
	set.RunMode = cmp.Or(over.RunMode, settings.RunMode, set.RunMode)
	for _, name := range Names {
		text, src := texts[name], fileSource
		if o := settings.get(name); o != "" {
			text, src = o, SourceSettings
		}
		if o := over.get(name); o != "" {
			text, src = o, SourceFlag
		}
		if text == "" {
			continue
		}
		set.Scripts = append(set.Scripts, Script{Name: name, Text: text, Source: src, Hash: Hash(text)})
	}
	return set, nil
}

// checkText refuses a script no shell could run as meant: an empty one,
// or one holding a NUL, which would cut it short where it is passed to
// the shell.
func checkText(t string) error {
	switch {
	case strings.TrimSpace(t) == "":
		return errors.New("empty script; leave the field out instead")
	case strings.ContainsRune(t, 0):
		return errors.New("contains a NUL byte")
	}
	return nil
}

// readFile reads a scripts file of at most MaxFileSize bytes. A missing
// file is an error satisfying fs.ErrNotExist; a FIFO or device in its
// place is refused rather than blocked on.
func readFile(path string) ([]byte, error) {
	f, _, err := regfile.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %s: %v", ErrInvalid, filepath.Base(path), err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("%w: %s: over %d bytes; a scripts file holds a few command lines", ErrInvalid, filepath.Base(path), MaxFileSize)
	}
	return data, nil
}

// decode decodes one JSON object into v, refusing unknown fields when
// strict, and says which field was wrong in words.
func decode(data []byte, v any, strict bool) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if strict {
		dec.DisallowUnknownFields()
	}
	err := dec.Decode(v)
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		want := typeErr.Type.String()
		switch typeErr.Type.Kind() {
		case reflect.Struct:
			want = "object"
		case reflect.Pointer:
			want = typeErr.Type.Elem().String()
		}
		if typeErr.Field == "" {
			return fmt.Errorf("%s, want a JSON object", typeErr.Value)
		}
		return fmt.Errorf("field %s: %s, want %s", typeErr.Field, typeErr.Value, want)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("not JSON at byte %d: %v", syntaxErr.Offset, err)
	case errors.Is(err, io.EOF):
		return errors.New("empty file; want a JSON object")
	case err != nil:
		// The decoder's own words for an unknown field: json: unknown
		// field "x".
		return errors.New(strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}
