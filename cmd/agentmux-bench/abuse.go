package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// The abuse measurement sends what a security review found to hurt the
// server: request bodies and WebSocket frames as large as the limits
// allow, whose values come back quoted in errors, on connections that
// never read the replies, and a prompt queue stuffed to the brim. Its
// sizes are those of the review's findings, against the server's limits
// (cmd/server's maxBodyBytes of 64 KiB, ws.ReadLimit of 1 MiB,
// sessions.MaxPromptBytes of 64 KiB and MaxQueueBytes of 256 KiB).
const (
	// abuseBigBody is the size of each whole request body with a 1 MiB
	// command: the old servers' body limit, so they decode it.
	abuseBigBody = 1 << 20
	// abuseValueBytes is the size of the value of each smaller request:
	// under the 64 KiB body limit, so it reaches the handler.
	abuseValueBytes = 60 << 10
	// abuseFrameBytes is the size of each abusive WebSocket frame: just
	// under the 1 MiB read limit, which closes the connection.
	abuseFrameBytes = 1<<20 - 64
	// stuffPrompts prompts of stuffPromptBytes each are queued to one
	// session: each the largest prompt taken, together more than a queue
	// holds.
	stuffPrompts     = 7
	stuffPromptBytes = 64 << 10
)

// abuseFiller fills every abusive value: encoding/json writes '<' as
// \u003c, six bytes, so an error that quotes it grows the most.
const abuseFiller = '<'

// How the abuse is sent and watched.
const (
	// abuseDialers bound the raw HTTP connections opened at once.
	abuseDialers = 32
	// abusePhaseTimeout bounds the abuse: what is not sent by then is
	// not, and the measurement goes on with what was.
	abusePhaseTimeout = time.Minute
	// abuseKeyPause is the pause before each key the well-behaved client
	// types during the abuse; abuseMaxKeys bounds those keys.
	abuseKeyPause = 20 * time.Millisecond
	abuseMaxKeys  = 3000
	// abuseHealthEvery is how often GET /api/health is timed during the
	// abuse.
	abuseHealthEvery = 100 * time.Millisecond
	// attachTimeout bounds a fresh client's wait for session.attached
	// after the stuffing.
	attachTimeout = 20 * time.Second
)

// The goals the report states for the abuse (not asserted anywhere): the
// server's RSS grows by less than abuseGrowthGoalMiB at its peak, and the
// well-behaved client's keystroke echo keeps a p99 under abuseEchoGoalMs.
const (
	abuseGrowthGoalMiB = 64
	abuseEchoGoalMs    = 100
)

// sessionIdleCommand sits quietly: the session whose prompt queue is
// stuffed.
var sessionIdleCommand = []string{"sh", "-c", "exec sleep 3600"}

// abuseOptions describe the abuse: Requests POST /api/sessions with a
// 1 MiB command and as many with a 60 KiB value, WSConns WebSockets
// sending WSFrames frames of just under 1 MiB each, at least Keys keys
// typed by the well-behaved client during it; the RSS is read once it has
// held still for Settle.
type abuseOptions struct {
	Requests int
	WSConns  int
	WSFrames int
	Keys     int
	Settle   time.Duration
}

// abuseResult is what the abuse did to the server and to a well-behaved
// client. Sizes are in bytes.
type abuseResult struct {
	// What was sent: BigRequests bodies of BigRequestBytes with a huge
	// command, SmallRequests with a value of SmallValueBytes in cwd,
	// agent, worktree.branch or an unknown field's name, in turn.
	BigRequests     int `json:"bigRequests"`
	BigRequestBytes int `json:"bigRequestBytes"`
	SmallRequests   int `json:"smallRequests"`
	SmallValueBytes int `json:"smallValueBytes"`
	// RequestsWritten counts the requests written whole; the others
	// failed as the server closed the connection first (RequestError is
	// the first such error) or ran out of the phase's time.
	RequestsWritten int    `json:"requestsWritten"`
	RequestError    string `json:"requestError,omitempty"`
	// RequestsSeconds and FramesSeconds run from the start of the abuse
	// until the last request, or the last frame, was written.
	RequestsSeconds float64 `json:"requestsSeconds"`
	FramesSeconds   float64 `json:"framesSeconds"`
	// WSConns connections each meant to send WSFramesPerConn frames of
	// WSFrameBytes; WSFramesWritten were; WSConnsCut stopped early on a
	// failed write (the server closed them, or the phase's time ran out),
	// the first with WSError.
	WSConns         int    `json:"wsConns"`
	WSFramesPerConn int    `json:"wsFramesPerConn"`
	WSFrameBytes    int    `json:"wsFrameBytes"`
	WSFramesWritten int    `json:"wsFramesWritten"`
	WSConnsCut      int    `json:"wsConnsCut"`
	WSError         string `json:"wsError,omitempty"`
	// StuffPrompts prompts of StuffPromptBytes were queued to one session;
	// the server accepted StuffAccepted and refused StuffRefused (the first
	// refusal is StuffRefusal); StuffError says why replies stopped, if
	// they did.
	StuffPrompts     int    `json:"stuffPrompts"`
	StuffPromptBytes int    `json:"stuffPromptBytes"`
	StuffAccepted    int    `json:"stuffAccepted"`
	StuffRefused     int    `json:"stuffRefused"`
	StuffRefusal     string `json:"stuffRefusal,omitempty"`
	StuffError       string `json:"stuffError,omitempty"`
	// Attached reports whether a fresh client attaching to the stuffed
	// session during the abuse got session.attached, after AttachMs;
	// AttachError says what came instead. AttachedAfter, AttachAfterMs
	// and AttachAfterError are the same once the abusive connections have
	// closed and the RSS has settled.
	Attached         bool    `json:"attached"`
	AttachMs         float64 `json:"attachMs"`
	AttachError      string  `json:"attachError,omitempty"`
	AttachedAfter    bool    `json:"attachedAfter"`
	AttachAfterMs    float64 `json:"attachAfterMs"`
	AttachAfterError string  `json:"attachAfterError,omitempty"`
	// Preview is the abuse's last part, once the rest is over: the
	// previews' budget held while a client types and another attaches;
	// PreviewError says why it was not measured.
	Preview      *previewBudgetResult `json:"preview,omitempty"`
	PreviewError string               `json:"previewError,omitempty"`
	// AbuseSeconds runs from the start of the abuse until everything was
	// sent and the prompts answered, or the phase's time ran out
	// (CutShort); the fresh client's attach may take longer.
	AbuseSeconds float64 `json:"abuseSeconds"`
	CutShort     bool    `json:"cutShort"`
	// Echo is the well-behaved client's keystroke round trip during the
	// abuse, each key after KeyPauseMs; EchoError is what stopped it.
	Echo       echoStats `json:"echo"`
	KeyPauseMs float64   `json:"keyPauseMs"`
	EchoError  string    `json:"echoError,omitempty"`
	// HealthProbes GET /api/health were timed during the abuse;
	// HealthFailures of them failed.
	HealthProbes   int     `json:"healthProbes"`
	HealthP50Ms    float64 `json:"healthP50Ms"`
	HealthMaxMs    float64 `json:"healthMaxMs"`
	HealthFailures int     `json:"healthFailures"`
	// The server's RSS in MiB: settled before the abuse, the peak sampled
	// every 10 ms from its start until the after figure, and settled
	// after the abusive connections closed. GrowthMiB is the peak over
	// before.
	BeforeMiB          float64 `json:"beforeMiB"`
	PeakMiB            float64 `json:"peakMiB"`
	AfterMiB           float64 `json:"afterMiB"`
	GrowthMiB          float64 `json:"growthMiB"`
	BeforeSettled      bool    `json:"beforeSettled"`
	AfterSettled       bool    `json:"afterSettled"`
	AfterSettleSeconds float64 `json:"afterSettleSeconds"`
	// SessionsCreated counts sessions the abusive requests created: 0
	// when every one was refused.
	SessionsCreated int `json:"sessionsCreated"`
	// The goals the report states.
	GrowthGoalMiB float64 `json:"growthGoalMiB"`
	EchoGoalMs    float64 `json:"echoGoalMs"`
}

// measureAbuse starts a session of cat with a well-behaved client typing
// into it and an idle session, reads the server's RSS, then sends the
// abuse all at once while the client types and /api/health is timed,
// keeps the abusive connections open until everything is sent, closes
// them, and reads the RSS once it settles again.
func measureAbuse(ctx context.Context, e *benchEnv, o abuseOptions) (_ *abuseResult, err error) {
	if e.serverPID == 0 {
		return nil, errors.New("the server's process is unknown")
	}
	// Two settled readings may wait three windows each.
	ctx, cancel := context.WithTimeout(ctx, runTimeout+abusePhaseTimeout+2*max(settleMax, 3*o.Settle))
	defer cancel()
	r := &abuseResult{
		BigRequests: o.Requests, BigRequestBytes: abuseBigBody, SmallRequests: o.Requests, SmallValueBytes: abuseValueBytes,
		WSConns: o.WSConns, WSFramesPerConn: o.WSFrames, WSFrameBytes: abuseFrameBytes,
		StuffPrompts: stuffPrompts, StuffPromptBytes: stuffPromptBytes, KeyPauseMs: ms(abuseKeyPause),
		GrowthGoalMiB: abuseGrowthGoalMiB, EchoGoalMs: abuseEchoGoalMs,
	}
	typing, err := e.newReadySession(ctx, "bench abuse echo", echoCommand)
	if err != nil {
		return nil, err
	}
	defer typing.close()
	typing.c.keepData = true
	stuffed, cleanup, err := e.newSession(ctx, "bench abuse queue", sessionIdleCommand)
	if err != nil {
		return nil, err
	}
	defer cleanup()
	// Sessions listed now are not the abuse's doing.
	listed, err := e.api.list(ctx)
	if err != nil {
		return nil, err
	}
	before, _, settled, err := settleRSS(ctx, e.serverPID, o.Settle)
	if err != nil {
		return nil, fmt.Errorf("before the abuse: %w", err)
	}
	r.BeforeMiB, r.BeforeSettled = mib(before.RSS), settled
	e.logf("abuse: RSS %.1f MiB before", r.BeforeMiB)
	peak := samplePeak(ctx, e.serverPID, before.RSS)
	defer peak.stop()

	host := strings.TrimPrefix(e.api.base, "http://")
	phase, endPhase := context.WithTimeoutCause(ctx, abusePhaseTimeout, fmt.Errorf("the abuse took over %v", abusePhaseTimeout))
	defer endPhase()
	// held keeps every abusive connection open until the phase ends.
	held := &connSet{}
	defer held.closeAll()
	stopHeld := context.AfterFunc(phase, held.closeAll)
	defer stopHeld()

	// The WebSockets that abuse are open before any abuse is sent: the
	// server's cap on connections would otherwise keep some of them
	// waiting behind the raw HTTP connections, and the abuse sent would
	// depend on the race.
	wsConns := make([]*wsConn, o.WSConns+1)
	for i := range wsConns {
		if wsConns[i], err = e.dial(phase); err != nil {
			return nil, fmt.Errorf("open the abusive WebSockets: %w", err)
		}
		held.add(wsConns[i].close)
	}
	stuffer, framers := wsConns[0], wsConns[1:]

	began := time.Now()
	var (
		senders, attaching sync.WaitGroup
		sent               httpAbuse
		framed             wsAbuse
		stuff              stuffOutcome
		attach             attachOutcome
	)
	stuffDone := make(chan struct{})
	senders.Go(func() {
		sent = abuseHTTP(phase, host, e.token, o.Requests, held)
		r.RequestsSeconds = time.Since(began).Seconds()
	})
	senders.Go(func() {
		framed = abuseWS(framers, abuseFrames(stuffed.ID), o.WSFrames)
		r.FramesSeconds = time.Since(began).Seconds()
	})
	senders.Go(func() {
		defer close(stuffDone)
		stuff = stuffQueue(stuffer, stuffed.ID)
	})
	// A fresh client comes as soon as the queue is stuffed, while the rest
	// of the abuse goes on; it is not a sender, so the typing does not
	// wait for it.
	attaching.Go(func() {
		<-stuffDone
		attach = attachFresh(phase, e, stuffed.ID, held)
	})
	// sentAll is closed once everything is sent; this goroutine ends with
	// the senders, which the phase's deadline bounds.
	sentAll := make(chan struct{})
	go func() {
		senders.Wait()
		close(sentAll)
	}()
	probes := startHealthProbes(ctx, e.api)
	rtts, echoErr := typeDuringAbuse(phase, typing, o.Keys, sentAll)
	health := probes.end()
	// The phase's end closes the abusive connections, which ends the
	// senders that were still sending.
	<-sentAll
	r.AbuseSeconds, r.CutShort = time.Since(began).Seconds(), phase.Err() != nil
	attaching.Wait()
	held.closeAll()
	endPhase()

	r.Echo = echoSummary(rtts)
	if echoErr != nil {
		r.EchoError = echoErr.Error()
	}
	r.HealthProbes, r.HealthFailures, r.HealthP50Ms, r.HealthMaxMs = health.probes, health.failures, health.p50Ms, health.maxMs
	r.RequestsWritten, r.RequestError = sent.written, sent.firstErr
	r.WSFramesWritten, r.WSConnsCut, r.WSError = framed.written, framed.cut, framed.firstErr
	r.StuffAccepted, r.StuffRefused, r.StuffRefusal, r.StuffError = stuff.accepted, stuff.refused, stuff.refusal, stuff.err
	r.Attached, r.AttachMs, r.AttachError = attach.ok, attach.ms, attach.err
	e.logf("abuse: sent in %.1f s, %d keys echoed (p99 %s), attach after stuffing %v", r.AbuseSeconds, r.Echo.Keys, micros(r.Echo.P99Micros), r.Attached)

	after, took, settled, err := settleRSS(ctx, e.serverPID, o.Settle)
	if err != nil {
		return nil, fmt.Errorf("after the abuse: %w", err)
	}
	r.AfterMiB, r.AfterSettled, r.AfterSettleSeconds = mib(after.RSS), settled, took.Seconds()
	r.PeakMiB = max(mib(peak.stop()), r.AfterMiB)
	r.GrowthMiB = r.PeakMiB - r.BeforeMiB
	e.logf("abuse: RSS peak %.1f MiB, %.1f MiB after", r.PeakMiB, r.AfterMiB)
	fresh := &connSet{}
	again := attachFresh(ctx, e, stuffed.ID, fresh)
	fresh.closeAll()
	r.AttachedAfter, r.AttachAfterMs, r.AttachAfterError = again.ok, again.ms, again.err
	if r.Preview, err = measurePreviewBudget(ctx, e, typing, stuffed.ID, o.Keys); err != nil {
		r.PreviewError = err.Error()
		e.logf("abuse: the previews' budget not measured: %v", err)
	}

	if r.SessionsCreated, err = removeCreated(ctx, e, listed); err != nil {
		return r, err
	}
	return r, nil
}

// typeDuringAbuse types keys into the well-behaved client's cat, each
// after abuseKeyPause, at least keys of them and on until sentAll is
// closed (at most abuseMaxKeys), and returns their round trips. A key
// that does not come back ends the typing with its error: that is a
// figure of the abuse, not a failure of the measurement.
func typeDuringAbuse(ctx context.Context, s *readySession, keys int, sentAll <-chan struct{}) ([]time.Duration, error) {
	roundTrip := serverRoundTrip(s.c, s.ID)
	var rtts []time.Duration
	for i := range abuseMaxKeys {
		if i >= keys {
			select {
			case <-sentAll:
				return rtts, nil
			default:
			}
		}
		if err := sleepCtx(ctx, abuseKeyPause); err != nil {
			return rtts, fmt.Errorf("typing stopped after %d keys: %w", i, err)
		}
		rtt, err := press(i, abuseMaxKeys, roundTrip)
		if err != nil {
			return rtts, err
		}
		rtts = append(rtts, rtt)
	}
	return rtts, nil
}

// healthProbes time GET /api/health every abuseHealthEvery in a
// goroutine of their own, from startHealthProbes until end.
type healthProbes struct {
	stop chan struct{}
	wg   sync.WaitGroup
	// times and failures are the goroutine's until wg is done.
	times    []time.Duration
	failures int
}

// healthFigures summarize healthProbes: how many, how many failed, and
// the successful ones' p50 and max.
type healthFigures struct {
	probes, failures int
	p50Ms, maxMs     float64
}

func startHealthProbes(ctx context.Context, api *apiClient) *healthProbes {
	p := &healthProbes{stop: make(chan struct{})}
	p.wg.Go(func() { p.times, p.failures = probeHealth(ctx, api, p.stop) })
	return p
}

// end stops the probes and sums them up.
func (p *healthProbes) end() healthFigures {
	close(p.stop)
	p.wg.Wait()
	f := healthFigures{probes: len(p.times) + p.failures, failures: p.failures}
	if len(p.times) > 0 {
		slices.Sort(p.times)
		f.p50Ms, f.maxMs = ms(percentile(p.times, 0.5)), ms(p.times[len(p.times)-1])
	}
	return f
}

// probeHealth times GET /api/health every abuseHealthEvery until stop is
// closed, and returns the times of those that succeeded and how many
// failed.
func probeHealth(ctx context.Context, api *apiClient, stop <-chan struct{}) (times []time.Duration, failures int) {
	tick := time.NewTicker(abuseHealthEvery)
	defer tick.Stop()
	for {
		start := time.Now()
		if err := api.do(ctx, http.MethodGet, "/api/health", nil, nil); err != nil {
			failures++
		} else {
			times = append(times, time.Since(start))
		}
		select {
		case <-stop:
			return times, failures
		case <-ctx.Done():
			return times, failures
		case <-tick.C:
		}
	}
}

// connSet holds the abusive connections open until closeAll, which closes
// them all; a connection added after that is closed at once. It is safe
// for concurrent use.
type connSet struct {
	// mu protects the fields below.
	mu     sync.Mutex
	closed bool
	closes []func()
}

// add keeps a connection, given by its close, and reports whether it is
// kept: false when the set is closed, and the connection with it.
func (s *connSet) add(close func()) bool {
	s.mu.Lock()
	if !s.closed {
		s.closes = append(s.closes, close)
		s.mu.Unlock()
		return true
	}
	s.mu.Unlock()
	close()
	return false
}

// closeAll closes every connection held; it may be called more than once.
func (s *connSet) closeAll() {
	s.mu.Lock()
	closes := s.closes
	s.closes, s.closed = nil, true
	s.mu.Unlock()
	for _, c := range closes {
		c()
	}
}

// httpAbuse is what abuseHTTP managed to send.
type httpAbuse struct {
	written  int
	firstErr string
}

// abuseHTTP writes requests POST /api/sessions with a 1 MiB command and
// as many with a 60 KiB value (abuseBodies), each on a raw connection of
// its own to host that it never reads and leaves open in held. At most
// abuseDialers are being written at once.
func abuseHTTP(ctx context.Context, host, token string, requests int, held *connSet) httpAbuse {
	big, small := abuseBodies()
	type job struct{ head, body []byte }
	jobs := make(chan job)
	var (
		mu  sync.Mutex // protects out
		out httpAbuse
		wg  sync.WaitGroup
	)
	for range abuseDialers {
		wg.Go(func() {
			d := net.Dialer{Timeout: writeTimeout}
			for j := range jobs {
				err := writeUnread(ctx, &d, host, j.head, j.body, held)
				mu.Lock()
				if err == nil {
					out.written++
				} else if out.firstErr == "" {
					out.firstErr = err.Error()
				}
				mu.Unlock()
			}
		})
	}
	// The two kinds alternate, so each meets the server in every state.
feed:
	for i := range 2 * requests {
		body := big
		if i%2 == 1 {
			body = small[(i/2)%len(small)]
		}
		select {
		case jobs <- job{createRequestHead(host, token, len(body)), body}:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	return out
}

// writeUnread dials host, keeps the connection in held, and writes head
// and body to it, within writeTimeout.
func writeUnread(ctx context.Context, d *net.Dialer, host string, head, body []byte, held *connSet) error {
	conn, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("dial: %w", err)
	}
	if !held.add(func() { conn.Close() }) {
		return fmt.Errorf("dial: %w", context.Cause(ctx))
	}
	_ = conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	bufs := net.Buffers{head, body}
	if _, err := bufs.WriteTo(conn); err != nil {
		return fmt.Errorf("write the request: %w", err)
	}
	return nil
}

// createRequestHead returns the head of a POST /api/sessions with a JSON
// body of n bytes, as a script sends it (no Origin).
func createRequestHead(host, token string, n int) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "POST /api/sessions HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n", host, n)
	if token != "" {
		fmt.Fprintf(&b, "Authorization: Bearer %s\r\n", token)
	}
	b.WriteString("\r\n")
	return b.Bytes()
}

// abuseBodies returns the bodies of the abusive POST /api/sessions: big,
// of abuseBigBody bytes, whose one command argument fills it, and the
// smaller ones, each with a value of abuseValueBytes in a field the
// server's errors used to quote: cwd, agent, worktree.branch, and the
// name of an unknown field.
func abuseBodies() (big []byte, small [][]byte) {
	big = fillJSON(`{"command":["`, `"]}`, abuseBigBody)
	for _, kind := range []struct{ prefix, suffix string }{
		{`{"cwd":"`, `"}`},
		{`{"agent":"`, `"}`},
		{`{"worktree":{"branch":"`, `"}}`},
		{`{"`, `":1}`},
	} {
		small = append(small, fillJSON(kind.prefix, kind.suffix, len(kind.prefix)+abuseValueBytes+len(kind.suffix)))
	}
	return big, small
}

// fillJSON returns prefix and suffix with abuseFiller between them, size
// bytes in all.
func fillJSON(prefix, suffix string, size int) []byte {
	b := make([]byte, 0, size)
	b = append(b, prefix...)
	b = append(b, bytes.Repeat([]byte{abuseFiller}, size-len(prefix)-len(suffix))...)
	return append(b, suffix...)
}

// wsAbuse is what abuseWS managed to send.
type wsAbuse struct {
	written  int
	cut      int
	firstErr string
}

// abuseWS sends frames frames on each of conns, going through kinds in
// turn, one goroutine a connection; the connections are never read.
func abuseWS(conns []*wsConn, kinds [][]byte, frames int) wsAbuse {
	var (
		mu  sync.Mutex // protects out
		out wsAbuse
		wg  sync.WaitGroup
	)
	for _, c := range conns {
		wg.Go(func() {
			n, err := func() (int, error) {
				for i := range frames {
					if err := c.sendRaw(kinds[i%len(kinds)]); err != nil {
						return i, fmt.Errorf("frame %d of %d: %w", i+1, frames, err)
					}
				}
				return frames, nil
			}()
			mu.Lock()
			defer mu.Unlock()
			out.written += n
			if err != nil {
				out.cut++
				if out.firstErr == "" {
					out.firstErr = err.Error()
				}
			}
		})
	}
	wg.Wait()
	return out
}

// abuseFrames returns the abusive WebSocket frames, abuseFrameBytes each:
// an unknown type, an attach to a session id, and a prompt for the
// session, each of them filled with abuseFiller.
func abuseFrames(sessionID string) [][]byte {
	var frames [][]byte
	for _, kind := range []struct{ prefix, suffix string }{
		{`{"type":"`, `"}`},
		{`{"type":"session.attach","sessionId":"`, `"}`},
		{`{"type":"prompt.queue","sessionId":"` + sessionID + `","text":"`, `"}`},
	} {
		frames = append(frames, fillJSON(kind.prefix, kind.suffix, abuseFrameBytes))
	}
	return frames
}

// promptFrame returns prompt.queue of n bytes of abuseFiller for the
// session.
func promptFrame(sessionID string, n int) []byte {
	prefix, suffix := `{"type":"prompt.queue","sessionId":"`+sessionID+`","text":"`, `"}`
	return fillJSON(prefix, suffix, len(prefix)+n+len(suffix))
}

// typePromptQueuedAck is the answer to a prompt.queue that was taken.
const typePromptQueuedAck = "prompt.queued.ack"

// stuffOutcome is what became of the queue stuffing.
type stuffOutcome struct {
	accepted, refused int
	refusal, err      string
}

// stuffQueue queues stuffPrompts prompts of stuffPromptBytes to the
// session on c and reads the answers.
func stuffQueue(c *wsConn, sessionID string) (out stuffOutcome) {
	prompt := promptFrame(sessionID, stuffPromptBytes)
	for i := range stuffPrompts {
		if err := c.sendRaw(prompt); err != nil {
			out.err = fmt.Sprintf("prompt %d of %d: %v", i+1, stuffPrompts, err)
			return out
		}
	}
	var f frame
	for out.accepted+out.refused < stuffPrompts {
		err := c.next(&f, frameTimeout)
		switch {
		case f.Type == typeError:
			out.refused++
			if out.refusal == "" {
				out.refusal = f.Code + ": " + f.Message
			}
		case err != nil:
			out.err = fmt.Sprintf("after %d answers: %v", out.accepted+out.refused, err)
			return out
		case f.Type == typePromptQueuedAck:
			out.accepted++
		}
	}
	return out
}

// attachOutcome is whether a fresh client got session.attached, how long
// after it began to connect, or what came instead.
type attachOutcome struct {
	ok  bool
	ms  float64
	err string
}

// attachFresh connects a fresh client, keeps it in held, attaches it to
// the session and waits up to attachTimeout for its session.attached.
func attachFresh(ctx context.Context, e *benchEnv, sessionID string, held *connSet) (out attachOutcome) {
	start := time.Now()
	c, err := e.dial(ctx)
	if err != nil {
		out.err = err.Error()
		return out
	}
	held.add(c.close)
	if err := c.attach(sessionID); err != nil {
		out.err = err.Error()
		return out
	}
	var f frame
	for {
		wait := attachTimeout - time.Since(start)
		if wait <= 0 {
			out.err = fmt.Sprintf("no session.attached within %v", attachTimeout)
			return out
		}
		if err := c.next(&f, wait); err != nil {
			out.err = err.Error()
			return out
		}
		if f.Type == typeSessionAttached && f.SessionID == sessionID {
			out.ok, out.ms = true, ms(time.Since(start))
			return out
		}
	}
}

// removeCreated deletes the sessions listed now that were not in listed,
// which the abusive requests created, and returns how many there were.
func removeCreated(ctx context.Context, e *benchEnv, listed []session) (int, error) {
	now, err := e.api.list(ctx)
	if err != nil {
		return 0, fmt.Errorf("after the abuse: %w", err)
	}
	n := 0
	for _, s := range now {
		if slices.ContainsFunc(listed, func(l session) bool { return l.ID == s.ID }) {
			continue
		}
		n++
		if err := e.api.remove(ctx, s.ID); err != nil {
			e.logf("cleanup: %v", err)
		}
	}
	return n, nil
}

// abuseWhat describes the abuse for the report.
func abuseWhat(a *abuseResult) string {
	return fmt.Sprintf("%d POST /api/sessions of %s (command) and %d with %s values, %d WebSockets × %d frames of %s, all unread; %d prompts of %s to one session",
		a.BigRequests, formatBytes(int64(a.BigRequestBytes)), a.SmallRequests, formatBytes(int64(a.SmallValueBytes)),
		a.WSConns, a.WSFramesPerConn, formatBytes(int64(a.WSFrameBytes)), a.StuffPrompts, formatBytes(int64(a.StuffPromptBytes)))
}

// goal returns "met" or "MISSED".
func goal(met bool) string {
	if met {
		return "met"
	}
	return "MISSED"
}

// abuseRows are the report's rows of the abuse.
func abuseRows(a *abuseResult) [][2]string {
	cut := ""
	if a.CutShort {
		cut = fmt.Sprintf(", CUT SHORT at %v", abusePhaseTimeout)
	}
	sent := fmt.Sprintf("%d/%d requests written whole in %.1f s, %d/%d frames in %.1f s (%d connections cut%s)",
		a.RequestsWritten, a.BigRequests+a.SmallRequests, a.RequestsSeconds, a.WSFramesWritten, a.WSConns*a.WSFramesPerConn, a.FramesSeconds, a.WSConnsCut, firstErr(a.WSError))
	created := ""
	if a.SessionsCreated > 0 {
		created = fmt.Sprintf("; the abuse CREATED %d sessions", a.SessionsCreated)
	}
	unsettled := ""
	if !a.BeforeSettled || !a.AfterSettled {
		unsettled = " (not settled)"
	}
	rows := [][2]string{{
		"abuse: " + abuseWhat(a),
		fmt.Sprintf("server RSS %.1f before / peak %.1f / %.1f MiB after%s; growth at peak %.1f MiB (goal under %g MiB: %s); sent in %.1f s%s: %s%s",
			a.BeforeMiB, a.PeakMiB, a.AfterMiB, unsettled, a.GrowthMiB, a.GrowthGoalMiB, goal(a.GrowthMiB < a.GrowthGoalMiB),
			a.AbuseSeconds, cut, sent, created),
	}}
	echo := fmt.Sprintf("%s (goal p99 under %g ms: %s)", echoLine(a.Echo), a.EchoGoalMs, goal(a.EchoError == "" && a.Echo.Keys > 0 && a.Echo.P99Micros < a.EchoGoalMs*1000))
	if a.EchoError != "" {
		echo += "; typing FAILED: " + a.EchoError
	}
	health := fmt.Sprintf("GET /api/health p50 %s, max %s over %d probes", millis(a.HealthP50Ms), millis(a.HealthMaxMs), a.HealthProbes)
	if a.HealthFailures > 0 {
		health += fmt.Sprintf(", %d FAILED", a.HealthFailures)
	}
	rows = append(rows, [2]string{
		fmt.Sprintf("the same: a client's keystroke echo, %d keys typed %g ms apart", a.Echo.Keys, a.KeyPauseMs),
		echo + "; " + health,
	})
	attach := "during the abuse " + attachLine(a.Attached, a.AttachMs, a.AttachError) +
		"; once its connections closed " + attachLine(a.AttachedAfter, a.AttachAfterMs, a.AttachAfterError)
	queue := fmt.Sprintf("%d queued, %d refused%s", a.StuffAccepted, a.StuffRefused, firstErr(a.StuffRefusal))
	if a.StuffError != "" {
		queue += "; answers stopped: " + a.StuffError
	}
	rows = append(rows, [2]string{
		fmt.Sprintf("the same: a fresh client attaching after %d prompts of %s", a.StuffPrompts, formatBytes(int64(a.StuffPromptBytes))),
		attach + "; " + queue,
	})
	switch {
	case a.Preview != nil:
		rows = append(rows, previewRows(a.Preview)...)
	case a.PreviewError != "":
		rows = append(rows, [2]string{"the same: the previews' budget held", "NOT measured: " + a.PreviewError})
	}
	return rows
}

// firstErr returns " (first: msg)", msg on one line and clipped, or
// nothing.
func firstErr(msg string) string {
	if msg == "" {
		return ""
	}
	msg = strings.ReplaceAll(msg, "\n", " ")
	if len(msg) > 160 {
		msg = strings.ToValidUTF8(msg[:160], "") + "..."
	}
	return " (first: " + msg + ")"
}

// attachLine says whether a fresh client attached.
func attachLine(ok bool, ms float64, err string) string {
	if !ok {
		return "NOT attached: " + err
	}
	return "session.attached after " + millis(ms)
}
