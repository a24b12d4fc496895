// Issue 38, the third security review, as a browser meets it.
//
// 1. A preview lends its origin to its own pages alone. A page on another
//    port of the same host (the same site, so the browser sends it the
//    preview's sign-in cookie, partitioned under that site) tries to open
//    the preview's WebSocket and to fetch from it, every way a page can
//    without asking: nothing reaches the app. A frame it navigates to the
//    preview does reach it, which shows the cookie was in scope: the
//    refusals are the preview's doing, not a missing sign-in.
// 2. A workspace file cannot run on agentmux's origin: a .js the agent
//    wrote neither registers as a service worker nor runs as a script.
// 3. File names carry no terminal controls into the UI: a name holding an
//    escape or a bidi override shows escaped in the Changes view.
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import http from 'node:http';
import { after } from 'node:test';
import {
  uiTest, sel, waitFor, createSession, waitForPrompt, initGitRepo, git,
} from './harness.mjs';

const servers = [];
after(() => Promise.all(servers.map((s) => new Promise((resolve) => { s.closeAllConnections?.(); s.close(resolve); }))));

/** Listens on 127.0.0.1 at a free port; returns the port. */
async function listen(srv) {
  servers.push(srv);
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  return srv.address().port;
}

/**
 * The app a preview shows: a page, and a WebSocket it accepts from
 * anyone (the preview is what must refuse). It records every request and
 * upgrade that reaches it.
 */
async function toyApp() {
  const app = { requests: [], upgrades: [] };
  const srv = http.createServer((req, res) => {
    app.requests.push(req.url);
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end('<!doctype html><title>toy app</title><h1 id="app">toy app</h1>');
  });
  srv.on('upgrade', (req, socket) => {
    app.upgrades.push(req.url);
    const accept = crypto.createHash('sha1').update(`${req.headers['sec-websocket-key']}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest('base64');
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${accept}\r\n\r\n`);
  });
  app.port = await listen(srv);
  return app;
}

/**
 * The other page: on another port of 127.0.0.1, the host agentmux's page
 * is on. It tries the preview at TARGET (from its URL's fragment) every
 * way it can and records each attempt in window.__results; window.__done
 * once all have ended.
 */
const OTHER_PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><title>another page</title></head><body>
<script>
(async () => {
  const T = decodeURIComponent(location.hash.slice(1)); // http://<port>.localhost:<agentmux>/
  const results = (window.__results = {});
  const settle = (name, p) => p.then(
    (r) => { results[name] = r === undefined ? 'resolved' : r; },
    (e) => { results[name] = 'rejected: ' + e; });
  const ws = new Promise((resolve) => {
    const s = new WebSocket(T.replace(/^http/, 'ws') + 'socket');
    s.onopen = () => { resolve('opened'); s.close(); };
    s.onerror = () => resolve('error');
  });
  const tag = (kind) => new Promise((resolve) => {
    const el = document.createElement(kind);
    el.onload = () => resolve('loaded');
    el.onerror = () => resolve('error');
    el.src = T + kind + '.js';
    document.body.append(el);
  });
  await Promise.all([
    settle('websocket', ws),
    settle('fetch-cors', fetch(T + 'cors', { credentials: 'include' }).then((r) => 'status ' + r.status)),
    settle('fetch-no-cors', fetch(T + 'no-cors', { mode: 'no-cors', credentials: 'include' }).then((r) => r.type)),
    settle('post-no-cors', fetch(T + 'post', { method: 'POST', mode: 'no-cors', credentials: 'include', body: 'x=1' }).then((r) => r.type)),
    settle('script', tag('script')),
    settle('img', tag('img')),
  ]);
  // The control: a frame is a navigation, which a preview lets through.
  await settle('frame', new Promise((resolve) => {
    const f = document.createElement('iframe');
    f.onload = () => resolve('loaded');
    f.src = T + 'frame';
    document.body.append(f);
  }));
  window.__done = true;
})();
</script></body></html>`;

uiTest('a page on another port can neither open a preview\'s WebSocket nor fetch from it, signed in or not', {
  timeout: 90_000,
}, async ({ page, context, server }) => {
  const app = await toyApp();
  const preview = `http://${app.port}.localhost:${server.port}/`;

  // agentmux's page signs its frame in on the preview, as a user does.
  await page.locator(sel('layout-preview')).click();
  const row = page.locator(`${sel('preview-port')}[data-port="${app.port}"]`);
  await waitFor(() => row.count(), { timeout: 15_000, message: `port ${app.port} listed` });
  await row.click();
  await waitFor(async () => (await page.frameLocator(sel('preview-frame')).locator('#app').textContent({ timeout: 2_000 }).catch(() => null)) === 'toy app',
    { timeout: 15_000, message: 'the app in agentmux\'s frame' });
  const signedIn = app.requests.length;
  assert.ok(signedIn >= 1, 'the frame reached the app');

  const other = http.createServer((req, res) => {
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
    res.end(OTHER_PAGE);
  });
  const otherPort = await listen(other);
  const tab = await context.newPage();
  // What the browser logs about the refusals is the point of the test.
  const logged = [];
  tab.on('console', (m) => logged.push(m.text()));
  await tab.goto(`http://127.0.0.1:${otherPort}/#${encodeURIComponent(preview)}`);
  await tab.waitForFunction(() => window.__done === true, null, { timeout: 30_000 });
  const results = await tab.evaluate(() => window.__results);
  await tab.close();

  assert.equal(results.websocket, 'error', `the WebSocket was refused: ${JSON.stringify(results)}`);
  assert.match(results['fetch-cors'], /^rejected/, 'a CORS fetch fails');
  assert.equal(results.script, 'error', 'a script from the preview fails to load');
  assert.equal(results.img, 'error', 'an image from the preview fails to load');
  assert.deepEqual(app.upgrades, [], 'no WebSocket reached the app');
  assert.deepEqual(app.requests.slice(signedIn), ['/frame'],
    `only the other page's frame, a navigation, reached the app (results ${JSON.stringify(results)}, console ${JSON.stringify(logged)})`);
  assert.equal(results.frame, 'loaded');
});

uiTest('a workspace script neither registers as a service worker nor runs on agentmux\'s page', {
  allowConsole: [
    /Refused to execute script from '.*api\/files\?path=evil\.js' because its MIME type \('text\/plain'\) is not executable/,
    /^The script has an unsupported MIME type \('text\/plain'\)\.$/,
  ],
}, async ({ page, server }) => {
  await server.writeFile('sw.js', "self.addEventListener('fetch', (e) => e.respondWith(new Response('owned')));\n");
  await server.writeFile('evil.js', 'window.__evil = document.domain;\n');
  const sw = await page.evaluate(() => navigator.serviceWorker.register('api/files?path=sw.js', { scope: '/api/' })
    .then(() => 'registered', (e) => `refused: ${e.message}`));
  assert.match(sw, /^refused: .*MIME type \('text\/plain'\)/, `the service worker: ${sw}`);
  const script = await page.evaluate(() => new Promise((resolve) => {
    const s = document.createElement('script');
    s.onload = () => resolve('loaded');
    s.onerror = () => resolve('error');
    s.src = 'api/files?path=evil.js';
    document.head.append(s);
  }));
  assert.equal(script, 'error', 'the workspace script did not load as a script');
  assert.equal(await page.evaluate(() => window.__evil), undefined, 'and did not run');
  // agentmux's own worker (notifications) may be there; none from the workspace is.
  const workers = await page.evaluate(() => navigator.serviceWorker.getRegistrations()
    .then((rs) => rs.map((r) => (r.active ?? r.installing ?? r.waiting)?.scriptURL ?? r.scope)));
  assert.ok(!workers.some((u) => u.includes('api/files') || u.endsWith('/api/')), `no service worker from the workspace: ${JSON.stringify(workers)}`);
});

const ESCAPE_NAME = 'evil\x1b[31m.txt';
const BIDI_NAME = 'txt.\u202eexe.md';

uiTest('file names with controls show escaped in the Changes view', {
  setupWorkspace: async (dir) => {
    await initGitRepo(dir);
    const fs = await import('node:fs/promises');
    await fs.writeFile(`${dir}/${ESCAPE_NAME}`, 'a\n');
    await fs.writeFile(`${dir}/${BIDI_NAME}`, 'b\n');
    await git(dir, 'add', '-A');
    await git(dir, 'commit', '-q', '-m', 'odd names');
  },
}, async ({ page, server, screenshot }) => {
  await server.writeFile(ESCAPE_NAME, 'a changed\n');
  await server.writeFile(BIDI_NAME, 'b changed\n');
  const id = await createSession(page, 'names');
  await waitForPrompt(page, id);
  await page.keyboard.press('Alt+4');
  const files = page.locator(sel('changes-file'));
  await waitFor(async () => (await files.count()) === 2, { timeout: 15_000, message: 'both files listed' });
  const shown = (await files.allTextContents()).map((t) => t.replace(/[+\u2212]\d+/g, '').trim());
  assert.ok(shown.some((t) => t.includes('"evil\\x1b[31m.txt"')), `the escape shows escaped: ${JSON.stringify(shown)}`);
  assert.ok(shown.some((t) => t.includes('"txt.\\u202eexe.md"')), `the bidi override shows escaped: ${JSON.stringify(shown)}`);
  const names = await page.locator(sel('changes-diff-name')).allTextContents();
  assert.deepEqual(names.sort(), ['"evil\\x1b[31m.txt"', '"txt.\\u202eexe.md"'].sort(), 'each diff names its file escaped');
  const raw = await page.locator(sel('changes')).innerText();
  assert.ok(!/[\x1b\u202e]/.test(raw), 'no control reaches the page\'s text');
  // The data the UI works with keeps the real names.
  assert.deepEqual((await files.evaluateAll((els) => els.map((e) => e.dataset.path))).sort(), [BIDI_NAME, ESCAPE_NAME].sort());
  await screenshot('46-escaped-names');
});
