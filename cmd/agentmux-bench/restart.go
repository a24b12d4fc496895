package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// restartSessions is how many busy sessions the server is stopped with.
const restartSessions = 4

// restartResult is the time to stop a server with busy sessions and to
// start it again until it lists them.
type restartResult struct {
	Sessions int `json:"sessions"`
	// ShutdownMs runs from SIGTERM to the process's exit; ExitCode is its
	// exit code.
	ShutdownMs float64 `json:"shutdownMs"`
	ExitCode   int     `json:"exitCode"`
	// ClientToldShutdown reports whether the attached client got
	// server.shutdown; ClientCloseCode is the close code its connection
	// ended with (1001 expected, 0 when there was no close frame).
	ClientToldShutdown bool `json:"clientToldShutdown"`
	ClientCloseCode    int  `json:"clientCloseCode"`
	// RestartListeningMs runs from exec to the log line saying the server
	// listens; RestartListedMs to the first GET /api/sessions listing the
	// sessions.
	RestartListeningMs float64 `json:"restartListeningMs"`
	RestartListedMs    float64 `json:"restartListedMs"`
	// DatabaseBytes is the size of the session database after shutdown.
	DatabaseBytes int64 `json:"databaseBytes"`
}

// measureRestart starts a server of its own on fresh directories, fills
// four flooding sessions' rings while a client reads them, stops the
// server with SIGTERM, and starts it again on the same directories.
func measureRestart(ctx context.Context, e *benchEnv, o serverOptions) (*restartResult, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	srv, o, err := startFreshServer(ctx, e.tmp, "restart", o)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	api := newAPIClient(srv.url, o.Token)
	defer api.close()
	var ids []string
	for i := range restartSessions {
		s, err := api.create(ctx, fmt.Sprintf("bench busy %d", i+1), busyCommand)
		if err != nil {
			return nil, err
		}
		ids = append(ids, s.ID)
	}

	// One client follows all four floods until every ring is full, then
	// keeps reading, as a browser would, until the server closes it.
	c, err := dialWS(ctx, api.wsURL(), o.Token)
	if err != nil {
		return nil, err
	}
	defer c.close()
	for _, id := range ids {
		if err := c.attach(id); err != nil {
			return nil, err
		}
	}
	if err := readUntilFull(c, ids, uint64(e.scrollback)); err != nil {
		return nil, fmt.Errorf("wait for full rings: %w", err)
	}
	var (
		reader     sync.WaitGroup
		told       bool
		closeCode  int
		readerDone = make(chan struct{})
	)
	// This function owns the reader: the connection ends when the server
	// goes, or at the latest when c.close runs, and the reader with it.
	reader.Go(func() {
		defer close(readerDone)
		var f frame
		for {
			err := c.next(&f, frameTimeout)
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) {
					closeCode = ce.Code
				}
				return
			}
			if f.Type == typeServerShutdown {
				told = true
			}
		}
	})
	defer func() {
		c.close() // ends the reader if the server is still up
		reader.Wait()
	}()

	took, code, err := srv.stop()
	if err != nil {
		return nil, err
	}
	r := &restartResult{Sessions: restartSessions, ShutdownMs: ms(took), ExitCode: code}
	select {
	case <-readerDone:
	case <-time.After(frameTimeout):
		return nil, errors.New("the client's connection outlived the server")
	}
	r.ClientToldShutdown, r.ClientCloseCode = told, closeCode
	if fi, err := os.Stat(filepath.Join(o.DataDir, databaseFile)); err == nil {
		r.DatabaseBytes = fi.Size()
	}

	srv2, err := startServer(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("restart: %w", err)
	}
	defer srv2.close()
	r.RestartListeningMs = ms(srv2.listening.Sub(srv2.started))
	api2 := newAPIClient(srv2.url, o.Token)
	defer api2.close()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		list, err := api2.list(ctx)
		if err != nil {
			return nil, fmt.Errorf("restart: %w", err)
		}
		if len(list) >= len(ids) {
			r.RestartListedMs = ms(time.Since(srv2.started))
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("restart: %d of %d sessions listed: %w", len(list), len(ids), context.Cause(ctx))
		case <-tick.C:
		}
	}
	if _, _, err := srv2.stop(); err != nil {
		return nil, fmt.Errorf("stop the restarted server: %w", err)
	}
	return r, nil
}

// readUntilFull reads c until every session has written more than n
// bytes.
func readUntilFull(c *wsConn, ids []string, n uint64) error {
	seqs := make(map[string]uint64, len(ids))
	var f frame
	for {
		full := 0
		for _, id := range ids {
			if seqs[id] > n {
				full++
			}
		}
		if full == len(ids) {
			return nil
		}
		if err := c.next(&f, frameTimeout); err != nil {
			return err
		}
		if f.Type == typeTerminalOutput || f.Type == typeSessionAttached {
			seqs[f.SessionID] = max(seqs[f.SessionID], f.Seq)
		}
	}
}

func ms(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e6 }
