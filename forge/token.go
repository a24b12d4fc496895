package forge

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"time"
)

// TokenSource says where a token came from, for the UI ("Using
// GITHUB_TOKEN for github.com"); it never holds the token.
type TokenSource struct {
	Kind   string // "file" | "GITHUB_TOKEN" | "GH_TOKEN" | "gh"
	Detail string // the file's path for "file"; "gh auth token --hostname <host>" for gh; "" otherwise
}

// TokenOptions says where FindToken looks. The zero value looks in the
// environment and asks the gh found in PATH.
type TokenOptions struct {
	// File is --github-token-file / AGENTMUX_GITHUB_TOKEN_FILE: read at
	// each call, so a rotated token is picked up, and trimmed. "" skips it.
	File string
	// Getenv reads the environment; nil is os.Getenv.
	Getenv func(string) string
	// GH is the gh binary's path; "" looks "gh" up in PATH.
	GH string
}

// ghTimeout bounds `gh auth token`, which reads a file or the system's
// keyring and should answer at once.
const ghTimeout = 10 * time.Second

// maxTokenBytes bounds a token file's and gh's output read: tokens are
// short (a fine-grained one is under 100 bytes).
const maxTokenBytes = 4 << 10

// FindToken finds a token for host, in this order: opts.File (an
// unreadable or empty file is an error naming the file, not a fall-through:
// the user asked for it), GITHUB_TOKEN, GH_TOKEN (both for any host:
// Codespaces and Enterprise users set them for theirs), then `gh auth
// token --hostname host`. When none gives one, the error wraps ErrNoToken
// and says in words what was looked for.
func FindToken(ctx context.Context, host string, opts TokenOptions) (string, TokenSource, error) {
	if opts.File != "" {
		tok, err := readTokenFile(opts.File)
		if err != nil {
			return "", TokenSource{}, err
		}
		return tok, TokenSource{Kind: "file", Detail: opts.File}, nil
	}
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	for _, name := range []string{"GITHUB_TOKEN", "GH_TOKEN"} {
		if tok := strings.TrimSpace(getenv(name)); tok != "" {
			return tok, TokenSource{Kind: name}, nil
		}
	}
	gh := opts.GH
	if gh == "" {
		var err error
		if gh, err = exec.LookPath("gh"); err != nil {
			return "", TokenSource{}, fmt.Errorf("%w for %s: GITHUB_TOKEN and GH_TOKEN are unset, no --github-token-file was given, and gh is not installed", ErrNoToken, host)
		}
	}
	tok, err := ghToken(ctx, gh, host)
	if err != nil {
		return "", TokenSource{}, err
	}
	return tok, TokenSource{Kind: "gh", Detail: "gh auth token --hostname " + host}, nil
}

// readTokenFile reads a token file, bounded and trimmed.
func readTokenFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: the token file %s cannot be read: %v", ErrNoToken, path, unwrapPathError(err))
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxTokenBytes+1))
	if err != nil {
		return "", fmt.Errorf("%w: the token file %s cannot be read: %v", ErrNoToken, path, unwrapPathError(err))
	}
	if len(b) > maxTokenBytes {
		return "", fmt.Errorf("%w: the token file %s is longer than a token (over %d bytes)", ErrNoToken, path, maxTokenBytes)
	}
	tok := strings.TrimSpace(string(b))
	if tok == "" {
		return "", fmt.Errorf("%w: the token file %s is empty", ErrNoToken, path)
	}
	return tok, nil
}

// unwrapPathError keeps a *PathError's reason: the path is already named.
func unwrapPathError(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// ghToken runs `gh auth token --hostname host`, bounded in time and
// output. gh's stderr says why it has none ("no oauth token found for
// github.com"); it is quoted, bounded, as it holds no token.
func ghToken(ctx context.Context, gh, host string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, ghTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, gh, "auth", "token", "--hostname", host)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &limitedBuffer{buf: &stdout, max: maxTokenBytes}
	cmd.Stderr = &limitedBuffer{buf: &stderr, max: 1 << 10}
	// A child gh left behind holding the pipes must not keep us waiting.
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	tok := strings.TrimSpace(stdout.String())
	if err != nil || tok == "" {
		why := strings.TrimSpace(stderr.String())
		if why == "" && err != nil {
			why = err.Error()
		}
		if why == "" {
			why = "it printed nothing"
		}
		return "", fmt.Errorf("%w for %s: GITHUB_TOKEN and GH_TOKEN are unset, no --github-token-file was given, and `gh auth token --hostname %s` found none (%s; run `gh auth login`)",
			ErrNoToken, host, host, clip(why, 200))
	}
	return tok, nil
}

// limitedBuffer keeps the first max bytes written and drops the rest,
// without failing the writer.
type limitedBuffer struct {
	buf *bytes.Buffer
	max int
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}
