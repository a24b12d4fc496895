package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/gorilla/websocket"
)

// ttyd's WebSocket protocol (its src/server.h): every message is binary
// and starts with a command byte. The client's first message is the JSON
// that makes ttyd start the program.
const (
	ttydInput  = '0' // client to server: keystrokes
	ttydOutput = '0' // server to client: terminal output
)

// ttydPeer runs ttyd (github.com/tsl0922/ttyd), the terminal server the
// issue compares agentmux with, so both are measured in one run on one
// machine: this machine's figures move too much from run to run for a
// comparison with a number taken earlier.
type ttydPeer struct {
	bin     string
	version string
}

// newTTYDPeer checks that bin runs and learns its version.
func newTTYDPeer(ctx context.Context, bin string) (*ttydPeer, error) {
	out, err := exec.CommandContext(ctx, bin, "--version").CombinedOutput()
	if err != nil {
		return nil, fmt.Errorf("--ttyd %s: %w: %s", bin, err, bytes.TrimSpace(out))
	}
	// "ttyd version 1.7.7-40e79c7"
	v := strings.TrimSpace(string(out))
	v = strings.TrimPrefix(v, "ttyd version ")
	return &ttydPeer{bin: bin, version: v}, nil
}

// ttydConn is a client of one ttyd running one program. Like wsConn, one
// goroutine reads it and one writes it.
type ttydConn struct {
	conn *websocket.Conn
	// data is the output of the last message read (valid until the next).
	data []byte
}

// start runs argv, a workload that prints readyLine when it is ready, in
// a ttyd of its own on a free loopback port, connects to it as ttyd's own
// page does, and returns the client once the ready line has been read,
// with the function that ends it all.
func (p *ttydPeer) start(ctx context.Context, argv []string) (*ttydConn, func(), error) {
	port, err := freePort()
	if err != nil {
		return nil, nil, err
	}
	args := append([]string{"--writable", "--once", "--interface", "127.0.0.1", "--port", strconv.Itoa(port), "--debug", "3"}, argv...)
	cmd := exec.Command(p.bin, args...)
	out := newLogWatch(nil)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start ttyd: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	var conn *websocket.Conn
	end := func() {
		if conn != nil {
			_ = conn.Close()
		}
		_ = cmd.Process.Kill()
		<-exited
	}
	conn, err = dialTTYD(ctx, port, exited)
	if err != nil {
		end()
		return nil, nil, fmt.Errorf("%w; ttyd said: %s", err, out.tail())
	}
	stop := context.AfterFunc(ctx, func() { _ = conn.Close() })
	endAll := func() { stop(); end() }
	c := &ttydConn{conn: conn}
	// The page's first message: the size, which starts the program.
	hello, _ := json.Marshal(map[string]any{"AuthToken": "", "columns": 80, "rows": 24})
	if err := c.write(hello); err != nil {
		endAll()
		return nil, nil, err
	}
	var head []byte
	for !bytes.Contains(head, []byte(readyLine)) {
		if err := c.next(frameTimeout); err != nil {
			endAll()
			return nil, nil, fmt.Errorf("wait for the ready line through ttyd: %w; ttyd said: %s", err, out.tail())
		}
		head = append(head, c.data...)
	}
	return c, endAll, nil
}

// dialTTYD connects to a ttyd starting on port, retrying until it listens,
// it exits or ctx ends.
func dialTTYD(ctx context.Context, port int, exited <-chan struct{}) (*websocket.Conn, error) {
	url := fmt.Sprintf("ws://127.0.0.1:%d/ws", port)
	dialer := websocket.Dialer{HandshakeTimeout: frameTimeout, ReadBufferSize: 64 << 10, Subprotocols: []string{"tty"}}
	ctx, cancel := context.WithTimeout(ctx, frameTimeout)
	defer cancel()
	for {
		conn, resp, err := dialer.DialContext(ctx, url, nil)
		if resp != nil && resp.Body != nil {
			resp.Body.Close()
		}
		if err == nil {
			return conn, nil
		}
		select {
		case <-exited:
			return nil, fmt.Errorf("ttyd exited before it took a connection: %w", err)
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to ttyd at %s: %w", url, err)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// freePort returns a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port for ttyd: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func (c *ttydConn) write(b []byte) error {
	_ = c.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := c.conn.WriteMessage(websocket.BinaryMessage, b); err != nil {
		return fmt.Errorf("send to ttyd: %w", err)
	}
	return nil
}

// input types keys.
func (c *ttydConn) input(keys []byte) error {
	return c.write(append([]byte{ttydInput}, keys...))
}

// next reads messages until one of terminal output, which it leaves in
// c.data. ttyd ends the connection when the program exits: that is
// io.EOF-like and reported as errTTYDClosed.
func (c *ttydConn) next(timeout time.Duration) error {
	for {
		_ = c.conn.SetReadDeadline(time.Now().Add(timeout))
		_, b, err := c.conn.ReadMessage()
		if err != nil {
			if websocket.IsCloseError(err, websocket.CloseNormalClosure) {
				return errTTYDClosed
			}
			return fmt.Errorf("read from ttyd: %w", err)
		}
		if len(b) > 0 && b[0] == ttydOutput {
			c.data = b[1:]
			return nil
		}
	}
}

// errTTYDClosed is ttyd closing the connection as its program exits.
var errTTYDClosed = errors.New("ttyd closed the connection: the program exited")

// ttydCat runs the throughput workload through ttyd and reads it until the
// file has come whole, the peer's side of serverCat. Its cat does not exit
// when done: ttyd 1.7.7 can close the connection on the program's exit
// before the last output has gone out (seen here: 6.6 KB of 2 MiB
// missing, close 1006), and the measurement is of the flow, not of that.
func ttydCat(ctx context.Context, p *ttydPeer, path string, size int64) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, runTimeout)
	defer cancel()
	c, end, err := p.start(ctx, []string{"sh", "-c", rawScript(`cat "$0"; exec sleep 3600`), path})
	if err != nil {
		return 0, err
	}
	defer end()
	start := time.Now()
	if err := c.input([]byte("\n")); err != nil {
		return 0, err
	}
	var got int64
	for got < size {
		if err := c.next(frameTimeout); err != nil {
			return 0, fmt.Errorf("read cat through ttyd after %d of %d bytes: %w", got, size, err)
		}
		got += int64(len(c.data))
	}
	d := time.Since(start)
	if got != size {
		return 0, fmt.Errorf("read %d bytes of cat through ttyd, want %d", got, size)
	}
	return d, nil
}

// ttydRoundTrip types a key into echoCommand through ttyd and waits for
// its echo, as serverRoundTrip does through the server.
func ttydRoundTrip(c *ttydConn) func(key byte) error {
	return func(key byte) error {
		if err := c.input([]byte{key}); err != nil {
			return err
		}
		for {
			if err := c.next(frameTimeout); err != nil {
				return err
			}
			if len(c.data) > 0 && c.data[len(c.data)-1] == key {
				return nil
			}
		}
	}
}
