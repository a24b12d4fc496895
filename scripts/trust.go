package scripts

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"
)

// ErrNotInForce means an approval named a hash that no script in force
// has: the file changed since the person read it (or the hash is
// wrong), so what they approved is not what would run.
var ErrNotInForce = errors.New("no script in force has that hash")

// SettingsStore keeps each workspace's settings, as bytes this package
// encodes: the subset of sessions/store.Store that Trust uses.
type SettingsStore interface {
	Settings(workspace string) ([]byte, error)
	PutSettings(workspace string, settings []byte) error
}

// Approvals keeps which scripts a person approved, by the hash of their
// text: the subset of sessions/store.Store that Trust uses.
type Approvals interface {
	Approve(hashes ...string) error
	Approved(hash string) bool
}

// TrustOptions are what a Trust decides from. Root and Approvals are
// required.
type TrustOptions struct {
	// Root is the workspace whose scripts are read.
	Root string
	// Overrides are the server's flags; the zero value overrides
	// nothing.
	Overrides Overrides
	// Approvals keeps the approvals.
	Approvals Approvals
	// TrustAll approves every script, for a server nobody is at
	// (--trust-scripts).
	TrustAll bool
	// Settings keeps the workspace settings set in the page, under Root;
	// they are read on each Load. nil means none, and none can be saved.
	Settings SettingsStore
	// Logger receives the line saying TrustAll is on; nil discards it.
	Logger *slog.Logger
}

// Trust says which of the workspace's scripts may run: those from the
// flags, those whose text a person approved, or all with TrustAll. It
// reads the scripts file on each call (see the package doc), so it
// holds no state of its own and is safe for concurrent use.
type Trust struct {
	opts TrustOptions
}

// NewTrust returns a Trust deciding from opts, logging once when it
// trusts every script.
func NewTrust(opts TrustOptions) (*Trust, error) {
	switch {
	case opts.Root == "":
		return nil, errors.New("scripts: no workspace")
	case opts.Approvals == nil:
		return nil, errors.New("scripts: no approvals store")
	}
	if err := opts.Overrides.Validate(); err != nil {
		return nil, fmt.Errorf("scripts: %w", err)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.TrustAll {
		opts.Logger.Warn("workspace scripts are trusted without approval (--trust-scripts): the repository's agentmux.json or conductor.json scripts will run as they are",
			"workspace", opts.Root)
	}
	return &Trust{opts: opts}, nil
}

// TrustsAll reports whether every script is approved (--trust-scripts).
func (t *Trust) TrustsAll() bool { return t.opts.TrustAll }

// Load returns the scripts in force now (see Load).
func (t *Trust) Load() (Set, error) {
	settings, err := t.Settings()
	if err != nil {
		return Set{}, err
	}
	return LoadLayers(t.opts.Root, settings, t.opts.Overrides)
}

// Approved reports whether s may run: it came from the flags, every
// script is trusted, or a person approved its text.
func (t *Trust) Approved(s Script) bool {
	return !s.NeedsApproval() || t.opts.TrustAll || t.opts.Approvals.Approved(s.Hash)
}

// Approve approves the script in force whose text hashes to hash. A hash
// no script in force has is ErrNotInForce: an approval is of the text
// the person read, and one that has changed since must be read again.
func (t *Trust) Approve(hash string) (Script, error) {
	set, err := t.Load()
	if err != nil {
		return Script{}, err
	}
	for _, s := range set.Scripts {
		if s.Hash == hash {
			if err := t.opts.Approvals.Approve(hash); err != nil {
				return Script{}, fmt.Errorf("approve %s script: %w", s.Name, err)
			}
			return s, nil
		}
	}
	return Script{}, fmt.Errorf("%w: %.64q; the scripts file changed since it was read: read the scripts again and approve what they say now", ErrNotInForce, hash)
}

// ApproveAll approves every script in force that needs approval and
// returns the set it approved from.
func (t *Trust) ApproveAll() (Set, error) {
	set, err := t.Load()
	if err != nil {
		return Set{}, err
	}
	var hashes []string
	for _, s := range set.Scripts {
		if s.NeedsApproval() {
			hashes = append(hashes, s.Hash)
		}
	}
	if len(hashes) == 0 {
		return set, nil
	}
	if err := t.opts.Approvals.Approve(hashes...); err != nil {
		return Set{}, fmt.Errorf("approve scripts: %w", err)
	}
	return set, nil
}

// Runnable returns the script named name in force now, when it may run:
// one that is not set, not approved, or in a file that cannot be used is
// none.
func (t *Trust) Runnable(name string) (Script, bool) {
	set, err := t.Load()
	if err != nil {
		return Script{}, false
	}
	sc, ok := set.Get(name)
	return sc, ok && t.Approved(sc)
}

// Settings returns the workspace settings set in the page: the zero value
// when none were.
func (t *Trust) Settings() (Overrides, error) {
	var o Overrides
	if t.opts.Settings == nil {
		return o, nil
	}
	b, err := t.opts.Settings.Settings(t.opts.Root)
	if err != nil || b == nil {
		return o, err
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return o, fmt.Errorf("decode the workspace's script settings: %w", err)
	}
	return o, nil
}

// SaveSettings keeps o as the workspace settings set in the page, once
// they are usable (ErrInvalid, saying why, otherwise). They need no
// approval: a person wrote them there.
func (t *Trust) SaveSettings(o Overrides) error {
	if err := o.Validate(); err != nil {
		return fmt.Errorf("%w: settings: %v", ErrInvalid, err)
	}
	if t.opts.Settings == nil {
		return errors.New("scripts: settings cannot be saved here")
	}
	b, err := json.Marshal(o)
	if err != nil {
		return err
	}
	return t.opts.Settings.PutSettings(t.opts.Root, b)
}

// RunIn runs the script named name in force, when it may run, in dir
// with env, within limit, and reports whether one ran. It runs to its end
// even when ctx is cancelled (the request that asked for it gone): what
// a script cleans up (a container, a cache) would otherwise be left half
// done.
func (t *Trust) RunIn(ctx context.Context, name, dir string, env []string, limit time.Duration) (Result, bool) {
	sc, ok := t.Runnable(name)
	if !ok {
		return Result{}, false
	}
	return Exec(context.WithoutCancel(ctx), Command{Text: sc.Text, Dir: dir, Env: env, Limit: limit}), true
}
