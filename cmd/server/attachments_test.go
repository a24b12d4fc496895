package main

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentmux/agentmux/attachments"
	"github.com/agentmux/agentmux/wire"
)

// pngFile is the start of a real PNG: its signature and header chunk.
var pngFile = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"), bytes.Repeat([]byte{0, 7, 0xff}, 200)...)

// multipartBody is a form with content in field as a file called name.
func multipartBody(t *testing.T, field, name string, content []byte) (string, string) {
	t.Helper()
	var b bytes.Buffer
	w := multipart.NewWriter(&b)
	if err := w.WriteField("note", "a field before the file, skipped"); err != nil {
		t.Fatal(err)
	}
	part, err := w.CreateFormFile(field, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := part.Write(content); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return w.FormDataContentType(), b.String()
}

// attach posts content as the file name to session id's attachments.
func (e *apiEnv) attach(id, name string, content []byte, header ...string) (*http.Response, []byte) {
	e.t.Helper()
	ctype, body := multipartBody(e.t, "file", name, content)
	return e.do(http.MethodPost, "/api/sessions/"+id+"/attachments", body, append([]string{"Content-Type", ctype}, header...)...)
}

// attached posts an attachment that must be stored and returns its path.
func (e *apiEnv) attached(id, name string, content []byte) string {
	e.t.Helper()
	resp, b := e.attach(id, name, content)
	wantStatus(e.t, "attach "+name, resp, b, http.StatusCreated)
	var r struct {
		Path         string `json:"path"`
		AbsolutePath string `json:"absolutePath"`
	}
	if err := json.Unmarshal(b, &r); err != nil || r.Path == "" {
		e.t.Fatalf("attach %s: body %s: %v", name, b, err)
	}
	s := e.get(id)
	tree := s.Cwd
	if s.Worktree != nil {
		tree = s.Worktree.Path
	}
	if want := filepath.Join(tree, r.Path); r.AbsolutePath != want {
		e.t.Errorf("attach %s: absolutePath %q, want %q", name, r.AbsolutePath, want)
	}
	return r.Path
}

// TestAttachments: a file posted to a session's attachments lands byte
// for byte in its tree under its own folder, kept out of git, at a path
// its program opens from where it runs; what is not taken is refused
// with a code and a message that says why, and nothing is stored; the
// files go with the session and only its own.
func TestAttachments(t *testing.T) {
	e := newRepoAPI(t, "--attachment-max", "4KiB", "--attachments-per-session", "6KiB")
	shell := e.createCommand([]string{"sh"})
	other := e.createCommand(sleeper())

	path := e.attached(shell.ID, "Screen shot.png", pngFile)
	if want := attachments.Dir + "/" + shell.ID + "/Screen shot.png"; path != want {
		t.Fatalf("path %q, want %q", path, want)
	}
	if b, err := os.ReadFile(filepath.Join(e.dir, path)); err != nil || !bytes.Equal(b, pngFile) {
		t.Fatalf("stored file differs from the one sent (%v)", err)
	}
	// The session's program opens it by that path, from where it runs.
	e.typeInto(shell.ID, "wc -c < '"+path+"'\n")
	e.waitScreen(shell.ID, strconv.Itoa(len(pngFile)))
	if got := git(t, e.dir, "status", "--porcelain", "--untracked-files=all"); got != "" {
		t.Errorf("git status shows the attachment:\n%s", got)
	}
	if b, _ := os.ReadFile(filepath.Join(e.dir, ".git", "info", "exclude")); !strings.Contains(string(b), "\n/.agentmux/attachments/\n") && !strings.HasPrefix(string(b), "/.agentmux/attachments/\n") {
		t.Errorf("exclude file:\n%s", b)
	}
	if _, err := os.Stat(filepath.Join(e.dir, ".gitignore")); err == nil {
		t.Error("a .gitignore was written")
	}
	otherPath := e.attached(other.ID, "notes.md", []byte("# notes\n"))

	for _, c := range []struct {
		what, name string
		content    []byte
		status     int
		code, says string
	}{
		{"a program named as an image", "cat.png", append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 64)...), http.StatusUnsupportedMediaType, wire.CodeAttachmentType, "name does not count"},
		{"over --attachment-max", "big.txt", bytes.Repeat([]byte("a"), 4097), http.StatusRequestEntityTooLarge, wire.CodeAttachmentTooLarge, "4 KiB"},
		{"far over it", "huge.txt", bytes.Repeat([]byte("a"), 1<<20), http.StatusRequestEntityTooLarge, wire.CodeAttachmentTooLarge, "--attachment-max"},
		{"a path for a name", "../../../escape.png", pngFile, http.StatusBadRequest, wire.CodeInvalidMessage, "is a path"},
		{"an empty file", "empty.txt", nil, http.StatusBadRequest, wire.CodeInvalidMessage, "empty"},
	} {
		resp, b := e.attach(shell.ID, c.name, c.content)
		if msg := wantError(t, c.what, resp, b, c.status, c.code); !strings.Contains(msg, c.says) {
			t.Errorf("%s: message %q does not say %q", c.what, msg, c.says)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.dir), "escape.png")); err == nil {
		t.Error("a traversal escaped the tree")
	}
	// Two files of 4 KiB fit in 6 KiB no more than one and a half.
	e.attached(shell.ID, "a.txt", bytes.Repeat([]byte("a"), 4096))
	resp, b := e.attach(shell.ID, "b.txt", bytes.Repeat([]byte("b"), 4096))
	if msg := wantError(t, "past --attachments-per-session", resp, b, http.StatusConflict, wire.CodeAttachmentsFull); !strings.Contains(msg, "--attachments-per-session") {
		t.Errorf("full: message %q does not name the flag", msg)
	}
	if n := len(dirNames(t, filepath.Join(e.dir, attachments.Dir, shell.ID))); n != 2 {
		t.Errorf("%d files in the session's folder, want the 2 taken", n)
	}

	// Bodies that are not an upload.
	ctype, body := multipartBody(t, "other", "x.png", pngFile)
	resp, b = e.do(http.MethodPost, "/api/sessions/"+shell.ID+"/attachments", body, "Content-Type", ctype)
	wantError(t, "no file field", resp, b, http.StatusBadRequest, wire.CodeInvalidMessage)
	resp, b = e.do(http.MethodPost, "/api/sessions/"+shell.ID+"/attachments", `{"file":"x"}`, "Content-Type", "application/json")
	if msg := wantError(t, "JSON", resp, b, http.StatusUnsupportedMediaType, wire.CodeUnsupportedMediaType); !strings.Contains(msg, "multipart/form-data") {
		t.Errorf("JSON: message %q does not say what to send", msg)
	}
	resp, b = e.attach("no-such-session", "x.png", pngFile)
	wantError(t, "unknown session", resp, b, http.StatusNotFound, wire.CodeSessionNotFound)
	// A form from another page is refused before anything is read.
	ctype, body = multipartBody(t, "file", "evil.png", pngFile)
	resp, b = e.browserRequest(http.MethodPost, "/api/sessions/"+other.ID+"/attachments", "http://evil.test", "cross-site", ctype, body)
	wantError(t, "a form from another site", resp, b, http.StatusForbidden, wire.CodePermissionDenied)
	if n := len(dirNames(t, filepath.Join(e.dir, attachments.Dir, other.ID))); n != 1 {
		t.Errorf("%d files in the other session's folder after the attack, want 1", n)
	}

	// Deleting the session drops its files, not the other's.
	resp, b = e.do(http.MethodDelete, "/api/sessions/"+shell.ID, "")
	wantStatus(t, "delete", resp, b, http.StatusNoContent)
	if _, err := os.Stat(filepath.Join(e.dir, attachments.Dir, shell.ID)); !os.IsNotExist(err) {
		t.Errorf("the deleted session's attachments: %v, want gone", err)
	}
	if _, err := os.Stat(filepath.Join(e.dir, otherPath)); err != nil {
		t.Errorf("the other session's attachment went too: %v", err)
	}
	resp, b = e.do(http.MethodDelete, "/api/sessions/"+other.ID, "")
	wantStatus(t, "delete the other", resp, b, http.StatusNoContent)
	if _, err := os.Stat(filepath.Join(e.dir, ".agentmux")); !os.IsNotExist(err) {
		t.Errorf(".agentmux: %v, want gone with the last session's files", err)
	}
}

// TestAttachmentsInWorktree: a worktree session's files are stored in
// its worktree, out of git through the repository's shared exclude file;
// its worktree removed with it removes cleanly, and one kept loses the
// files all the same.
func TestAttachmentsInWorktree(t *testing.T) {
	e := newRepoAPI(t)
	for _, remove := range []bool{true, false} {
		branch := map[bool]string{true: "shot-removed", false: "shot-kept"}[remove]
		s := e.create(`{"worktree":{"branch":"` + branch + `"}}`)
		path := e.attached(s.ID, "shot.png", pngFile)
		tree := s.Worktree.Path
		if b, err := os.ReadFile(filepath.Join(tree, path)); err != nil || !bytes.Equal(b, pngFile) {
			t.Fatalf("%s: the file in the worktree differs (%v)", branch, err)
		}
		if got := git(t, tree, "status", "--porcelain", "--untracked-files=all"); got != "" {
			t.Errorf("%s: git status in the worktree shows the attachment:\n%s", branch, got)
		}
		q := ""
		if remove {
			q = "?removeWorktree=true"
		}
		resp, b := e.do(http.MethodDelete, "/api/sessions/"+s.ID+q, "")
		wantStatus(t, branch+": delete", resp, b, http.StatusNoContent)
		_, err := os.Stat(tree)
		if remove && !os.IsNotExist(err) || !remove && err != nil {
			t.Errorf("%s: worktree after delete: %v", branch, err)
		}
		if _, err := os.Stat(filepath.Join(tree, attachments.Dir)); !os.IsNotExist(err) {
			t.Errorf("%s: the attachments stayed: %v", branch, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(e.dir, ".git", "info", "exclude"))
	if n := strings.Count(string(b), "/.agentmux/attachments/"); n != 1 {
		t.Errorf("exclude file has %d lines for the attachments, want 1:\n%s", n, b)
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
