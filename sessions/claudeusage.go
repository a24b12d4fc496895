package sessions

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// Claude Code records each message of a conversation in its transcript,
// and each assistant message there carries the API's usage: the tokens
// the turn spent. The transcript is read at each turn's end (its Stop
// hook names the file) and at each status line report, which Claude runs
// after its messages and which names the file too: Claude writes the
// transcript a moment after its Stop hook. Each read goes on from where
// the last stopped (jsonltail.go), so nothing is read while the session
// is idle, and each byte once. The totals are the session's tokens,
// which its status line leaves out (it gives the last message's), so
// that its turns add up to them.

// transcript follows a Claude run's transcript. Claude Code writes a
// line for each block of an assistant message, each with the message's
// usage so far, so a message is counted once, with the usage of its last
// line. Guarded by the Session's tailMu; stored with the session, so a
// restart reads on where the last read stopped.
type transcript struct {
	tail jsonlTail
	// in and out are the conversation's tokens so far; last is the
	// message counted last, with the tokens counted for it.
	in, out         int64
	last            string
	lastIn, lastOut int64
}

// transcriptState is a transcript reader as the store keeps it.
type transcriptState struct {
	Path    string `json:"path"`
	Off     int64  `json:"off"`
	In      int64  `json:"in"`
	Out     int64  `json:"out"`
	Last    string `json:"last,omitempty"`
	LastIn  int64  `json:"lastIn,omitempty"`
	LastOut int64  `json:"lastOut,omitempty"`
}

func (t *transcript) state() *transcriptState {
	if t == nil {
		return nil
	}
	return &transcriptState{Path: t.tail.path, Off: t.tail.wholeLinesEnd(), In: t.in, Out: t.out, Last: t.last, LastIn: t.lastIn, LastOut: t.lastOut}
}

func (st *transcriptState) reader() *transcript {
	if st == nil {
		return nil
	}
	return &transcript{tail: jsonlTail{path: st.Path, off: st.Off}, in: st.In, out: st.Out, last: st.Last, lastIn: st.LastIn, lastOut: st.LastOut}
}

// claudeEntry is the part of a transcript line agentmux reads.
type claudeEntry struct {
	Type    string `json:"type"`
	Message struct {
		ID    string `json:"id"`
		Usage *struct {
			Input         int64 `json:"input_tokens"`
			CacheCreation int64 `json:"cache_creation_input_tokens"`
			CacheRead     int64 `json:"cache_read_input_tokens"`
			Output        int64 `json:"output_tokens"`
		} `json:"usage"`
	} `json:"message"`
}

// read counts the assistant messages written since the last read, and
// reports whether any were.
func (t *transcript) read() (bool, error) {
	lines, err := t.tail.lines()
	if err != nil {
		return false, err
	}
	counted := false
	for line := range lines {
		if !bytes.Contains(line, []byte(`"usage"`)) {
			continue
		}
		var e claudeEntry
		if json.Unmarshal(line, &e) != nil || e.Type != "assistant" || e.Message.Usage == nil {
			continue
		}
		u := e.Message.Usage
		// Cache reads and writes are input the model took, and billed.
		in, out := u.Input+u.CacheCreation+u.CacheRead, u.Output
		if e.Message.ID != "" && e.Message.ID == t.last {
			t.in -= t.lastIn
			t.out -= t.lastOut
		}
		t.in += in
		t.out += out
		t.last, t.lastIn, t.lastOut = e.Message.ID, in, out
		counted = true
	}
	return counted, nil
}

// readTranscript reads what the turn that just ended spent from the
// transcript at path (the Stop hook's transcript_path), and keeps the
// conversation's tokens as the session's. A path that is not a
// transcript is ignored.
func (s *Session) readTranscript(path string) {
	if !filepath.IsAbs(path) || !strings.HasSuffix(path, ".jsonl") {
		return
	}
	s.tailMu.Lock()
	defer s.tailMu.Unlock()
	// A copy is read, outside mu, while the session's record may be
	// taken from the one kept.
	t := &transcript{tail: jsonlTail{path: path}} // a new conversation: read it from its start
	s.mu.Lock()
	if s.transcript != nil && s.transcript.tail.path == path {
		*t = *s.transcript
	}
	s.mu.Unlock()
	counted, err := t.read()
	if errors.Is(err, fs.ErrNotExist) {
		// Claude writes it after the first turn's Stop hook.
		s.log.Debug("Claude's transcript is not written yet", "file", path)
		return
	}
	if err != nil {
		s.log.Warn("read Claude's transcript for what the turn spent", "file", path, "err", err)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transcript = t
	if !counted {
		return
	}
	u := Usage{Source: "claude-statusline"}
	if s.usage != nil {
		u = *s.usage
	}
	u.UpdatedAt = time.Now().UTC()
	s.noteUsageLocked(withTranscriptTokens(u, t))
}

// withTranscriptTokens gives u the transcript's tokens, when one has been
// read.
func withTranscriptTokens(u Usage, t *transcript) Usage {
	if t == nil {
		return u
	}
	in, out := t.in, t.out
	u.InputTokens, u.OutputTokens = &in, &out
	return u
}

// transcriptLate is how long after a turn's end its transcript is
// watched for the lines Claude writes after its Stop hook, and after its
// last status line report.
const transcriptLate = 5 * time.Second

// followTranscript reads the transcript at path as Claude writes it, for
// transcriptLate after a turn's end (or until the run ends): what the
// turn's last message spent comes after the hook that ended it, and
// often after the last status line report too. An fsnotify watch on its
// folder (the file may not be there yet), so nothing is read while
// nothing is written; one at a time per session.
func (s *Session) followTranscript(path string) {
	if !filepath.IsAbs(path) || !strings.HasSuffix(path, ".jsonl") {
		return
	}
	s.mu.Lock()
	done := s.run.done
	if s.followingTranscript || done == nil {
		s.mu.Unlock()
		return
	}
	s.followingTranscript = true
	s.mu.Unlock()
	stopped := func() {
		s.mu.Lock()
		s.followingTranscript = false
		s.mu.Unlock()
	}
	w, err := fsnotify.NewWatcher()
	if err == nil {
		err = w.Add(filepath.Dir(path))
		if err != nil {
			w.Close()
		}
	}
	if err != nil {
		s.log.Debug("watch Claude's transcript for the turn's last lines", "file", path, "err", err)
		stopped()
		return
	}
	go func() {
		defer stopped()
		defer w.Close()
		timer := time.NewTimer(transcriptLate)
		defer timer.Stop()
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if ev.Name == path && ev.Has(fsnotify.Write|fsnotify.Create) {
					s.readTranscript(path)
				}
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				s.log.Debug("watching Claude's transcript", "file", path, "err", err)
			case <-timer.C:
				return
			case <-done:
				return
			}
		}
	}()
}
