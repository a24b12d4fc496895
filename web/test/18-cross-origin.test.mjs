// A page served from another port of 127.0.0.1 cannot drive agentmux.
//
// To the browser, http://127.0.0.1:<other port> is "same-site" with the
// server (sites ignore ports), so it sends such a page's requests the
// SameSite=Strict token cookie: only the server's same-origin check stands
// between that page and a shell. The page below, served by a plain node
// server in this process, tries what a hostile page can do without asking
// first (no-cors fetches, a text/plain form that smuggles JSON, a
// WebSocket) and the test checks that none of it started, stopped or
// resumed anything. The positive control shows agentmux's own page still
// works with the same cookie, so the refusals are not an artefact of a
// missing sign-in.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after } from 'node:test';
import { uiTest, openApp, createSession, waitFor, tempDir } from './harness.mjs';

const TOKEN = 'xo-test-token-6b1f0c';
const REFUSAL_LOG = 'refused a request from another web page';
const DONE_TIMEOUT = 45_000;
// Room for every session the attacker might start, so that on a server
// with a hole each attempt shows, none hidden by the limit of 4.
const FLAGS = ['--max-sessions', '16'];

// ---------------------------------------------------------------------------
// The attacker: a plain HTTP server on another port, no CSP, one page.

// The page reads its target and the ids and paths to use from the URL's
// fragment, records each attempt in window.__results and sets
// window.__done when every attempt has completed one way or another.
const ATTACK_HTML = `<!doctype html>
<html><head><meta charset="utf-8"><title>not agentmux</title></head>
<body><h1>Totally harmless page</h1>
<script>
(async () => {
  const cfg = JSON.parse(decodeURIComponent(location.hash.slice(1)));
  const T = cfg.target; // agentmux's URL, ending in '/'
  const results = (window.__results = {});
  window.__done = false;
  const attempts = [];
  const settle = (name, promise) =>
    attempts.push(
      promise.then(
        (r) => { results[name] = { settled: 'resolved', type: r.type, status: r.status }; },
        (e) => { results[name] = { settled: 'rejected', error: String(e) }; },
      ),
    );
  const touch = (marker) => ['sh', '-c', 'touch ' + marker];

  // 1. no-cors POST, a JSON body sent as text/plain (a "simple" request:
  //    no preflight, the browser sends it and hides the answer).
  settle('post-text', fetch(T + 'api/sessions', {
    method: 'POST', mode: 'no-cors', credentials: 'include',
    body: JSON.stringify({ name: 'pwned', command: touch(cfg.markers.fetch) }),
  }));
  // 2. The same with no body: a session with the default agent.
  settle('post-empty', fetch(T + 'api/sessions', { method: 'POST', mode: 'no-cors', credentials: 'include' }));
  // 3. DELETE: no-cors refuses the method outright; cors sends a preflight.
  settle('delete-no-cors', Promise.resolve().then(() =>
    fetch(T + 'api/sessions/' + cfg.running, { method: 'DELETE', mode: 'no-cors', credentials: 'include' })));
  settle('delete-cors', fetch(T + 'api/sessions/' + cfg.running, { method: 'DELETE', mode: 'cors', credentials: 'include' }));
  // 4. Resume, a POST with no body: of the running session and of the ended one.
  settle('resume-running', fetch(T + 'api/sessions/' + cfg.running + '/resume', { method: 'POST', mode: 'no-cors', credentials: 'include' }));
  settle('resume-ended', fetch(T + 'api/sessions/' + cfg.ended + '/resume', { method: 'POST', mode: 'no-cors', credentials: 'include' }));

  // 5. A plain HTML form, enctype text/plain, whose one field makes the
  //    body JSON. text/plain sends name=value: the name opens the JSON and
  //    the shell command, the '=' lands after a '#' (a shell comment) and
  //    the value closes it, so the body is
  //      {"name":"pwned2","command":["sh","-c","touch <marker> #="]}
  //    with no field the server does not know (it refuses unknown ones).
  attempts.push(new Promise((resolve) => {
    const frame = document.createElement('iframe');
    frame.name = 'sink';
    document.body.append(frame); // the initial about:blank load happens here, before the listener
    const form = document.createElement('form');
    form.method = 'POST';
    form.enctype = 'text/plain';
    form.action = T + 'api/sessions';
    form.target = 'sink';
    const field = document.createElement('input');
    field.type = 'hidden';
    field.name = '{"name":"pwned2","command":["sh","-c","touch ' + cfg.markers.form + ' #';
    field.value = '"]}';
    form.append(field);
    document.body.append(form);
    frame.addEventListener('load', () => { results.form = { settled: 'iframe-load' }; resolve(); }, { once: true });
    form.submit();
  }));

  // 6. A WebSocket: terminals, input, the session list.
  attempts.push(new Promise((resolve) => {
    const r = (results.ws = { opened: false, error: false });
    const sock = new WebSocket(T.replace(/^http/, 'ws') + 'ws');
    sock.onopen = () => { r.opened = true; };
    sock.onmessage = (ev) => { r.messages = (r.messages || 0) + 1; if (r.opened) sock.close(); };
    sock.onerror = () => { r.error = true; };
    sock.onclose = (ev) => { r.closeCode = ev.code; resolve(); };
  }));

  await Promise.allSettled(attempts);
  window.__done = true;
})().catch((e) => { window.__results = { crashed: String(e) }; window.__done = true; });
</script></body></html>`;

let attacker;
async function attackerServer() {
  if (attacker) return attacker;
  const srv = http.createServer((req, res) => {
    if (req.method === 'GET' && (req.url === '/' || req.url.startsWith('/attack'))) {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
      res.end(ATTACK_HTML);
    } else {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('not here\n');
    }
  });
  await new Promise((resolve, reject) => {
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', resolve);
  });
  attacker = { srv, url: `http://127.0.0.1:${srv.address().port}/` };
  return attacker;
}
after(async () => {
  if (!attacker) return;
  attacker.srv.closeAllConnections();
  await new Promise((resolve) => attacker.srv.close(resolve));
  attacker = undefined;
});

// ---------------------------------------------------------------------------
// Talking to agentmux as a script does (Bearer token when there is one).

const auth = (token) => (token ? { Authorization: `Bearer ${token}` } : {});

async function listSessions(server, token) {
  const { status, body } = await server.api('api/sessions', { headers: auth(token) });
  assert.equal(status, 200, `GET /api/sessions: ${status} ${JSON.stringify(body)}`);
  return body.sessions;
}

async function newSession(server, token, req) {
  const { status, body } = await server.api('api/sessions', { method: 'POST', headers: auth(token), body: JSON.stringify(req) });
  assert.equal(status, 201, `POST /api/sessions ${JSON.stringify(req)}: ${status} ${JSON.stringify(body)}`);
  return body.session;
}

const summary = (s) => ({ id: s.id, name: s.name, status: s.status, running: s.running, exitCode: s.exitCode ?? null });

// ---------------------------------------------------------------------------
// The attack and what must hold after it.

async function attack({ t, context, server, token }) {
  const dir = await tempDir('xo');
  const markers = {
    fetch: path.join(dir, 'pwned-by-fetch'),
    form: path.join(dir, 'pwned-by-form'),
    resumed: path.join(dir, 'resumed'),
  };

  // Two victims: one running, one whose command has ended (a resume would
  // run it again, and the second run leaves a mark and keeps running).
  const running = await newSession(server, token, { name: 'victim-running', command: ['sh', '-c', 'exec sleep 600'] });
  const once = path.join(dir, 'ran-once');
  const ended = await newSession(server, token, {
    name: 'victim-ended',
    command: ['sh', '-c', `if [ -e ${once} ]; then touch ${markers.resumed}; exec sleep 600; fi; touch ${once}`],
  });
  await waitFor(
    async () => {
      const s = (await listSessions(server, token)).find((x) => x.id === ended.id);
      return s && !s.running && existsSync(once);
    },
    { timeout: 20_000, message: 'the session victim-ended to run once and end' },
  );
  const before = (await listSessions(server, token)).map(summary);
  assert.deepEqual(before.map((s) => s.name).sort(), ['victim-ended', 'victim-running']);
  assert.equal(before.find((s) => s.id === running.id).running, true, 'victim-running runs');

  // The attacker's page, in the same browser context as agentmux's page
  // (so with its cookie, if there is one). Every request it makes to
  // agentmux is recorded with the headers Chromium actually sent.
  const { url: attackerUrl } = await attackerServer();
  assert.notEqual(new URL(attackerUrl).port, String(server.port));
  const evil = await context.newPage();
  const consoleLines = [];
  evil.on('console', (m) => consoleLines.push(`${m.type()}: ${m.text()}`));
  evil.on('pageerror', (e) => consoleLines.push(`pageerror: ${e}`));
  // The headers Chromium put on the wire come from the DevTools protocol:
  // Playwright's request.allHeaders() falls back to the renderer's
  // provisional headers (no Origin, no Cookie) for a fetch whose answer
  // the browser then blocks.
  const cdp = await context.newCDPSession(evil);
  const wire = new Map(); // requestId -> { method, url, headers }
  const entry = (id) => wire.get(id) ?? wire.set(id, {}).get(id);
  cdp.on('Network.requestWillBeSent', (e) => Object.assign(entry(e.requestId), { method: e.request.method, url: e.request.url }));
  cdp.on('Network.requestWillBeSentExtraInfo', (e) => {
    entry(e.requestId).headers = Object.fromEntries(Object.entries(e.headers).map(([k, v]) => [k.toLowerCase(), v]));
  });
  cdp.on('Network.webSocketCreated', (e) => Object.assign(entry(e.requestId), { method: 'WEBSOCKET', url: e.url }));
  // (This one is the handshake before the network stack adds cookies.)
  cdp.on('Network.webSocketWillSendHandshakeRequest', (e) => {
    entry(e.requestId).headers = Object.fromEntries(Object.entries(e.request.headers).map(([k, v]) => [k.toLowerCase(), v]));
  });
  cdp.on('Network.responseReceivedExtraInfo', (e) => { entry(e.requestId).status = e.statusCode; });
  await cdp.send('Network.enable');

  const cfg = { target: server.url, running: running.id, ended: ended.id, markers };
  await evil.goto(`${attackerUrl}attack#${encodeURIComponent(JSON.stringify(cfg))}`);
  await evil.waitForFunction(() => window.__done === true, null, { timeout: DONE_TIMEOUT, polling: 100 }).catch(async (err) => {
    const partial = await evil.evaluate(() => window.__results).catch(() => undefined);
    err.message += `\nthe attacker's attempts so far: ${JSON.stringify(partial)}\nits console: ${consoleLines.join(' | ')}`;
    throw err;
  });
  const results = await evil.evaluate(() => window.__results);
  // The last extra-info events may trail the page's own view a little.
  const toServer = () => [...wire.values()].filter((r) => r.url && (r.url.startsWith(server.url) || r.url.startsWith(server.url.replace(/^http/, 'ws'))));
  const isCreate = (r) => r.method === 'POST' && new URL(r.url).pathname === '/api/sessions';
  await waitFor(() => toServer().filter((r) => isCreate(r) && r.headers).length >= 3, {
    timeout: 10_000, message: 'the wire headers of the three POSTs to /api/sessions',
  }).catch(() => {}); // asserted below, after the diagnostics
  const requests = toServer();
  t.diagnostic(`attacker results: ${JSON.stringify(results)}`);
  for (const r of requests) {
    const h = r.headers ?? {};
    t.diagnostic(`sent ${r.method} ${new URL(r.url).pathname} status=${r.status} origin=${h.origin} sec-fetch-site=${h['sec-fetch-site']} ` +
      `sec-fetch-mode=${h['sec-fetch-mode']} content-type=${h['content-type']} ` +
      (r.method === 'WEBSOCKET' ? 'cookie=(not shown to DevTools)' : `cookie=${h.cookie ? 'yes' : 'no'}`) +
      (r.headers ? '' : ' (never sent: no wire headers)'));
  }
  t.diagnostic(`attacker console: ${consoleLines.join(' | ').slice(0, 2000)}`);
  await cdp.detach().catch(() => {});
  await evil.close();

  assert.ok(!results.crashed, `the attacker's script ran: ${results.crashed}`);

  // The requests did reach agentmux, with the cookie when there is one:
  // it is the server that refused them, not the browser that held them back.
  const posts = requests.filter(isCreate);
  assert.equal(posts.length, 3, `the two fetches and the form POSTed to /api/sessions: ${JSON.stringify(requests.map((r) => `${r.method} ${r.url}`))}`);
  for (const r of posts) {
    assert.ok(r.headers, `the wire headers of ${r.method} ${r.url}`);
    assert.equal(r.headers.origin, new URL(attackerUrl).origin, `Origin of ${r.method} ${r.url}`);
    if (token) assert.match(r.headers.cookie ?? '', /agentmux_token=/, `the browser sent the token cookie with ${r.method} ${r.url}`);
  }
  for (const name of ['post-text', 'post-empty', 'resume-running', 'resume-ended', 'delete-no-cors', 'delete-cors', 'form', 'ws']) {
    assert.ok(results[name], `the attempt ${name} completed: ${JSON.stringify(results)}`);
  }

  // What got through, all of it, so a failure lists every hole at once.
  const breaches = [];
  const afterList = (await listSessions(server, token)).map(summary);
  for (const s of afterList) {
    const was = before.find((b) => b.id === s.id);
    if (!was) breaches.push(`a session was created: ${JSON.stringify(s)}`);
    else if (JSON.stringify(s) !== JSON.stringify(was)) breaches.push(`a session changed: ${JSON.stringify(was)} -> ${JSON.stringify(s)}`);
  }
  for (const b of before) {
    if (!afterList.some((s) => s.id === b.id)) breaches.push(`a session was destroyed: ${JSON.stringify(b)}`);
  }
  for (const [what, file] of [['the fetch', markers.fetch], ['the form', markers.form], ['the resumed session', markers.resumed]]) {
    if (existsSync(file)) breaches.push(`${what}'s command ran: ${file} exists`);
  }
  if (results.ws.opened) breaches.push(`the WebSocket opened: ${JSON.stringify(results.ws)}`);
  if (results.ws.messages) breaches.push(`${results.ws.messages} WebSocket message(s) reached the attacker`);
  // And the operator is told.
  const logged = await waitFor(() => server.log.includes(REFUSAL_LOG), { timeout: 10_000, message: 'the refusal in the log' }).catch(() => false);
  if (!logged) breaches.push(`the server log has no "${REFUSAL_LOG}"`);
  assert.deepEqual(breaches, [], `the page on another port got through:\n  ${breaches.join('\n  ')}`);

  // The same, as plain facts: only the two victims, unchanged.
  assert.deepEqual(afterList.map((s) => s.name).sort(), ['victim-ended', 'victim-running'], 'no pwned, pwned2 or default session');
  assert.equal(afterList.find((s) => s.id === running.id)?.status, before.find((s) => s.id === running.id).status, 'victim-running kept its status');
  return { running, ended };
}

// The page's own requests still work: the UI's "+" and a same-origin
// fetch with a JSON body; a text/plain body is refused with 415.
async function positiveControl({ page, server, token, allowConsole }) {
  const id = await createSession(page, 'legit');
  await waitFor(async () => (await listSessions(server, token)).some((s) => s.id === id && s.name === 'legit'), {
    timeout: 15_000,
    message: 'the session "legit" made through the UI in GET /api/sessions',
  });

  allowConsole(/Failed to load resource: the server responded with a status of 415 \(Unsupported Media Type\)/);
  const replies = await page.evaluate(async () => {
    const send = async (headers, body) => {
      const res = await fetch('/api/sessions', { method: 'POST', headers, body });
      let json;
      try {
        json = await res.json();
      } catch {}
      return { status: res.status, json };
    };
    const body = JSON.stringify({ name: 'same-origin', command: ['sh', '-c', 'exec sleep 600'] });
    return {
      json: await send({ 'Content-Type': 'application/json' }, body),
      text: await send({ 'Content-Type': 'text/plain' }, body),
    };
  });
  assert.equal(replies.json.status, 201, `same-origin JSON POST: ${JSON.stringify(replies.json)}`);
  assert.equal(replies.json.json.session.name, 'same-origin');
  assert.equal(replies.text.status, 415, `same-origin text/plain POST: ${JSON.stringify(replies.text)}`);
  assert.equal(replies.text.json?.error?.code, 'UNSUPPORTED_MEDIA_TYPE');

  const names = (await listSessions(server, token)).map((s) => s.name).sort();
  assert.deepEqual(names, ['legit', 'same-origin', 'victim-ended', 'victim-running']);
}

uiTest('with --token, a page on another port gets the cookie sent but cannot drive agentmux', { server: false, timeout: 120_000 }, async (fx) => {
  const { t, page, context } = fx;
  const server = await fx.startServer({ flags: [...FLAGS, '--token', TOKEN] });
  fx.server = server; // the server log tail goes into a failure's message

  // Sign in as the user would: the cookie is set, HttpOnly and Strict.
  await openApp(page, `${server.url}?token=${TOKEN}`);
  assert.equal(new URL(page.url()).search, '', 'the token is gone from the address bar');
  const cookie = (await context.cookies(server.url)).find((c) => c.name === 'agentmux_token');
  assert.ok(cookie, `the agentmux_token cookie is set: ${JSON.stringify(await context.cookies())}`);
  assert.equal(cookie.value, TOKEN);
  assert.equal(cookie.httpOnly, true, 'HttpOnly');
  assert.equal(cookie.sameSite, 'Strict', 'SameSite=Strict');

  await attack({ t, context, server, token: TOKEN });
  await positiveControl({ page, server, token: TOKEN, allowConsole: fx.allowConsole });
});

uiTest('without a token, a page on another port cannot drive agentmux', { flags: FLAGS, timeout: 120_000 }, async ({ t, page, context, server, allowConsole }) => {
  await attack({ t, context, server, token: null });
  await positiveControl({ page, server, token: null, allowConsole });
});
