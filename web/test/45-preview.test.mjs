// Issue 32, item 4: the Preview view. A real dev server, Vite from npm, in
// a minimal project the test writes (no template), started from a shell
// session so that the session owns its port: the view lists the port with
// its session, Follow brings it up, the iframe shows the app on its own
// origin (http://<port>.localhost:<agentmux's port>/, which Chromium
// resolves to the loopback address itself), and an edit reaches the
// iframe through Vite's hot reload over the proxied WebSocket, without a
// reload. The activity feed tells the port. At a phone's width the view is
// a full-screen sheet. With --token the iframe signs in on the preview
// origin through the ticket link. The list is kept from ports.changed
// alone: the port comes and goes in changes, with no GET /api/ports.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import {
  uiTest, sel, browser, openApp, reloadApp, createSession, waitFor, waitForPrompt, waitForLine, typeCommand, terminalPane, tempDir, TEST_DIR,
} from './harness.mjs';

const VITE = path.join(TEST_DIR, 'node_modules', '.bin', 'vite');
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true };
const TOKEN = 'preview-test-token-51c9e2';

/** A port nothing listens on now, for the dev server to take. */
async function freePort() {
  const srv = net.createServer();
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', resolve));
  const { port } = srv.address();
  await new Promise((resolve) => srv.close(resolve));
  return port;
}

/**
 * A Vite project of two files. main.js accepts its own updates, so an
 * edit is swapped in by hot reload: the page stays, and so does what a
 * script left on its window.
 */
async function viteProject() {
  const dir = await tempDir('vite');
  await fs.writeFile(path.join(dir, 'index.html'),
    '<!doctype html>\n<html><head><meta charset="utf-8"><title>preview app</title></head>\n' +
    '<body style="font:20px sans-serif;margin:2em"><h1 id="app">loading</h1><p>A Vite app in a session</p>\n' +
    '<script type="module" src="/main.js"></script></body></html>\n');
  await writeMain(dir, 'Hello from Vite, version 1');
  return dir;
}

const writeMain = (dir, text) => fs.writeFile(path.join(dir, 'main.js'),
  `document.getElementById('app').textContent = ${JSON.stringify(text)};\nif (import.meta.hot) import.meta.hot.accept();\n`);

const portRow = (page, port) => page.locator(`${sel('preview-port')}[data-port="${port}"]`);

/** The iframe's text at #app, once its document is the app's. */
const appText = (page) => page.frameLocator(sel('preview-frame')).locator('#app').textContent({ timeout: 2_000 });

/** The iframe's page, found by its origin. */
async function appFrame(page, origin) {
  return waitFor(() => page.frames().find((f) => f.url().startsWith(origin)), { message: `the iframe on ${origin}` });
}

/** Open: the app in a tab of its own, on its origin, which cannot reach back to agentmux's page. */
async function openedTab(context, open, origin, text) {
  const [tab] = await Promise.all([context.waitForEvent('page'), open.click()]);
  try {
    await waitFor(async () => tab.url().startsWith(`${origin}/`) &&
      (await tab.locator('#app').textContent({ timeout: 1_000 }).catch(() => null)) === text,
    { timeout: 15_000, message: `the app in a new tab on ${origin} (at ${tab.url()})` });
    assert.equal(await tab.evaluate(() => window.opener), null, 'the new tab has no opener');
  } finally {
    await tab.close();
  }
}

uiTest('the Preview view: a Vite server a session starts is listed with its session, followed, and hot-reloads in the iframe', {
  timeout: 120_000,
  // Said by Chromium when the test has the app try to navigate agentmux's tab, which the sandbox refuses.
  allowConsole: [/^Unsafe attempt to initiate navigation .* The frame attempting navigation of the top-level window is sandboxed/],
}, async ({ page, context, server, screenshot, errors }) => {
  const amPort = server.port;
  // The page's sockets: Vite's hot reload must go through the preview's origin.
  const sockets = [];
  page.on('websocket', (ws) => sockets.push(ws.url()));
  // Every ports.changed agentmux sends the page; while hidePorts, the
  // whole listing is given the page as empty (the container may have
  // listeners of its own) and changes are held back.
  const portsSent = [];
  let hidePorts = true;
  const amHost = new URL(server.url).host;
  await page.routeWebSocket((url) => url.host === amHost && url.pathname === '/ws', (ws) => {
    const upstream = ws.connectToServer();
    upstream.onMessage((message) => {
      if (typeof message === 'string' && message.includes('"type":"ports.changed"')) {
        const m = JSON.parse(message);
        portsSent.push(m);
        if (hidePorts) {
          if (m.reset) ws.send(JSON.stringify({ ...m, added: [], removed: [], more: 0 }));
          return;
        }
      }
      ws.send(message);
    });
  });
  const portsAsked = [];
  page.on('request', (r) => { if (new URL(r.url()).pathname.endsWith('/api/ports')) portsAsked.push(r.url()); });

  // Before any dev server.
  await reloadApp(page);
  await page.keyboard.press('Alt+5');
  await waitFor(() => page.evaluate(() => document.getElementById('app').dataset.layout === 'preview'), { message: 'Alt+5 shows the Preview view' });
  assert.equal(await page.locator(sel('layout-preview')).getAttribute('aria-pressed'), 'true');
  const message = page.locator(sel('preview-message'));
  await message.waitFor({ state: 'visible' });
  assert.equal(await message.getAttribute('data-kind'), 'empty');
  assert.match(await message.textContent(), /No dev server is listening yet/);
  assert.match(await message.textContent(), /npm run dev/, 'the empty view says how a port comes');
  assert.ok(!(await page.locator(sel('preview-frame')).isVisible()), 'no iframe without a port');
  await screenshot('45-preview-empty');
  // From a new connection on, the page is sent what the server sends.
  hidePorts = false;
  await reloadApp(page);
  // The other layouts do not show it.
  for (const mode of ['artifact', 'split', 'changes', 'terminal']) {
    await page.locator(sel(`layout-${mode}`)).click();
    await waitFor(() => page.evaluate((m) => document.getElementById('app').dataset.layout === m, mode), { message: `layout ${mode}` });
    assert.ok(!(await page.locator(sel('preview')).isVisible()), `the Preview view is hidden in layout ${mode}`);
  }

  const dir = await viteProject();
  const port = await freePort();
  const origin = `http://${port}.localhost:${amPort}`;
  const id = await createSession(page, 'web');
  await waitForPrompt(page, id);
  await typeCommand(page, `cd ${dir} && ${VITE} --port ${port} --strictPort`);
  await waitForLine(page, id, /ready in/, { timeout: 30_000, message: 'Vite ready in the session' });

  // Follow: the session on screen's agent opened a port, so the view comes up with it.
  await waitFor(() => page.evaluate(() => document.getElementById('app').dataset.layout === 'preview'),
    { timeout: 15_000, message: 'Follow switching to the Preview view' });
  const row = portRow(page, port);
  await waitFor(async () => (await row.getAttribute('aria-current')) === 'true', { message: `port ${port} selected by Follow` });
  const listed = (await server.api('api/ports')).body.ports.find((p) => p.port === port);
  assert.ok(listed, `GET /api/ports lists ${port}`);
  assert.equal(listed.sessionId, id, 'the server gives the port its session');
  assert.equal(await row.getAttribute('data-session-id'), id);
  assert.equal(await row.getAttribute('data-mine'), 'true', 'the session on screen\'s port is marked');
  assert.equal(await row.locator(sel('preview-port-command')).textContent(), listed.command);
  assert.match(await row.locator(sel('preview-port-session')).textContent(), /^web · this session$/);
  const first = await page.locator(sel('preview-port')).first().getAttribute('data-port');
  assert.equal(Number(first), port, 'the session on screen\'s port comes first');
  const came = portsSent.find((m) => m.added.some((p) => p.port === port));
  assert.ok(came && !came.reset, `port ${port} came in a change, not a whole listing: ${JSON.stringify(came)}`);

  // The app, on its own origin, through agentmux's listener, signed in
  // there by a link that works once (every preview asks for it).
  assert.ok((await page.locator(sel('preview-frame')).getAttribute('src')).startsWith(`${origin}/.agentmux/sign-in?ticket=`),
    'the iframe opens through a sign-in link');
  assert.equal(await page.locator(sel('preview-address')).textContent(), origin);
  await waitFor(async () => (await appText(page)) === 'Hello from Vite, version 1', { timeout: 15_000, message: 'the app in the iframe' });
  await waitFor(() => sockets.some((u) => u.startsWith(`ws://${port}.localhost:${amPort}/`)),
    { timeout: 10_000, message: `Vite's hot-reload socket on the preview origin (sockets: ${sockets.join(', ')})` });
  const open = page.locator(sel('preview-open'));
  assert.equal(await open.getAttribute('href'), `${origin}/`, 'Open shows the plain address');
  assert.equal(await open.getAttribute('target'), '_blank');
  assert.match(await open.getAttribute('rel'), /\bnoopener\b/);
  // Its click asks for a sign-in link of its own: the iframe's is used up.
  await openedTab(context, open, origin, 'Hello from Vite, version 1');
  await waitFor(async () => (await open.getAttribute('href')) === `${origin}/`, { message: 'Open shows the plain address again' });
  await openedTab(context, open, origin, 'Hello from Vite, version 1');

  // The app may not take agentmux's tab elsewhere.
  const frame = await appFrame(page, origin);
  const tried = await frame.evaluate(() => {
    try {
      window.top.location.href = 'http://example.invalid/';
      return 'navigated';
    } catch (err) {
      return err.name;
    }
  });
  assert.equal(tried, 'SecurityError', 'the iframe cannot navigate the top window');
  assert.equal(new URL(page.url()).port, String(amPort), 'agentmux\'s page stays');

  // An edit: hot reload swaps the module in, the page stays (its window keeps the mark).
  await frame.evaluate(() => { window.__kept = 'still here'; });
  await writeMain(dir, 'Hello from Vite, version 2');
  await waitFor(async () => (await appText(page)) === 'Hello from Vite, version 2', { timeout: 15_000, message: 'the edit in the iframe' });
  assert.equal(await frame.evaluate(() => window.__kept), 'still here', 'the iframe was updated in place, not reloaded');

  // The activity feed has the port, with its process and session.
  const line = page.locator(`${sel('activity-item')}[data-event="port"][data-port="${port}"]`);
  // Its text, then its age ("now", "12s" on a slow machine).
  assert.match((await line.textContent()).trim(), new RegExp(`^port ${port} opened by ${listed.command} \\(session web\\)(now|\\d+s)$`));
  // Ports of no session (agentmux's own, here) are listed in the view, not the feed.
  const fed = await page.locator(`${sel('activity-item')}[data-event="port"]`).evaluateAll((els) => els.map((e) => e.textContent.trim()));
  assert.deepEqual(fed.filter((t) => !t.includes('(session ')), [], `the feed's ports are sessions': ${JSON.stringify(fed)}`);
  await screenshot('45-preview-desktop');

  // Reload loads the app afresh: the mark goes.
  await page.locator(sel('preview-reload')).click();
  await waitFor(async () => {
    const f = page.frames().find((x) => x.url().startsWith(origin));
    return f && (await f.evaluate(() => window.__kept === undefined && document.getElementById('app')?.textContent === 'Hello from Vite, version 2').catch(() => false));
  }, { timeout: 15_000, message: 'the iframe reloaded' });

  // A phone: the view is a sheet over the whole screen under the top bar, with a Close.
  const phone = await (await browser()).newContext(PHONE);
  try {
    const p = await phone.newPage();
    p.setDefaultTimeout(10_000);
    p.on('console', (m) => m.type() === 'error' && errors.push({ kind: 'console', text: `phone: ${m.text()}` }));
    p.on('pageerror', (e) => errors.push({ kind: 'pageerror', text: `phone: ${e}` }));
    await openApp(p, server.url);
    await waitFor(() => p.evaluate((id) => window.__agentmux.activeSessionId() === id, id), { message: 'the session on the phone' });
    await p.locator(sel('layout-preview')).click();
    await portRow(p, port).click();
    await waitFor(async () => (await appText(p)) === 'Hello from Vite, version 2', { timeout: 15_000, message: 'the app on the phone' });
    const box = await p.evaluate(() => {
      const r = document.querySelector('[data-testid="preview"]').getBoundingClientRect();
      const top = document.querySelector('.topbar').getBoundingClientRect().bottom;
      const f = document.querySelector('[data-testid="preview-frame"]').getBoundingClientRect();
      return { left: r.left, right: r.right, top: r.top, bottom: r.bottom, bar: top, vw: innerWidth, vh: innerHeight, frameW: f.width, frameH: f.height };
    });
    assert.ok(Math.abs(box.left) < 1 && Math.abs(box.right - box.vw) < 1 && Math.abs(box.bottom - box.vh) < 1 && box.top <= box.bar + 1,
      `the Preview view covers the phone's screen under the top bar: ${JSON.stringify(box)}`);
    assert.ok(Math.abs(box.frameW - box.vw) < 1 && box.frameH > box.vh / 2, `the app takes the screen's width and most of its height: ${JSON.stringify(box)}`);
    await p.screenshot({ path: path.join(TEST_DIR, 'screenshots', '45-preview-phone.png') });
    await p.locator(sel('preview-close')).click();
    await waitFor(() => p.evaluate(() => document.getElementById('app').dataset.layout === 'terminal'), { message: 'Close goes back to the terminal' });
  } finally {
    await phone.close();
  }

  // The dev server stops: its port leaves the list, and the view says so.
  await page.keyboard.press('Alt+1');
  await terminalPane(page).click();
  await page.keyboard.press('Control+C');
  await page.keyboard.press('Alt+5');
  await waitFor(async () => (await row.count()) === 0, { timeout: 15_000, message: `port ${port} gone from the list once Vite stops` });
  const note = page.locator(sel('preview-note'));
  await note.waitFor({ state: 'visible' });
  assert.match(await note.textContent(), new RegExp(`Nothing listens on port ${port} now`));
  assert.ok(portsSent.some((m) => !m.reset && m.removed.includes(port)), `port ${port} left in a change`);
  assert.deepEqual(portsAsked, [], 'the page kept its list from ports.changed alone, asking GET /api/ports for nothing');
});

uiTest('with --token the preview asks for it; the view signs the iframe in on the preview origin, hot reload included', {
  server: false,
  timeout: 90_000,
}, async ({ page, context, startServer }) => {
  const server = await startServer({ flags: ['--token', TOKEN] });
  const amPort = server.port;
  await openApp(page, `${server.url}?token=${TOKEN}`);
  const dir = await viteProject();
  const port = await freePort();
  const origin = `http://${port}.localhost:${amPort}`;
  const id = await createSession(page, 'signed');
  await waitForPrompt(page, id);
  await typeCommand(page, `cd ${dir} && ${VITE} --port ${port} --strictPort`);
  await waitForLine(page, id, /ready in/, { timeout: 30_000, message: 'Vite ready in the session' });

  // Without the view's link, the preview origin asks for a sign-in.
  const status = await new Promise((resolve, reject) => {
    // fetch() will not send a Host of the test's choosing.
    http.get({ host: '127.0.0.1', port: amPort, path: '/', headers: { Host: `${port}.localhost:${amPort}` } }, (res) => {
      res.resume();
      resolve(res.statusCode);
    }).on('error', reject);
  });
  assert.equal(status, 401, 'a preview origin without its cookie is refused');

  // Follow may already have brought the view up; a click on the port shows it either way.
  await page.locator(sel('layout-preview')).click();
  await portRow(page, port).click();
  const src = await waitFor(() => page.locator(sel('preview-frame')).getAttribute('src'), { message: 'the iframe pointed at the preview' });
  assert.ok(src.startsWith(`${origin}/.agentmux/sign-in?ticket=`), `the iframe opens through a sign-in link: ${src}`);
  assert.equal(await page.locator(sel('preview-address')).textContent(), origin, 'the address shown is the plain one, without the ticket');
  await waitFor(async () => (await appText(page)) === 'Hello from Vite, version 1', { timeout: 15_000, message: 'the app in the iframe, signed in' });
  // Open signs its tab in too, with a link of its own.
  await openedTab(context, page.locator(sel('preview-open')), origin, 'Hello from Vite, version 1');

  // The hot-reload socket carries the preview origin's cookie too.
  const frame = await appFrame(page, origin);
  await frame.evaluate(() => { window.__kept = 'still here'; });
  // A click on the port on screen leaves the app as it is (Reload is for
  // loading it again): Follow may have shown it before the click above.
  await portRow(page, port).click();
  await writeMain(dir, 'Hello from Vite, version 2');
  await waitFor(async () => (await appText(page)) === 'Hello from Vite, version 2', { timeout: 15_000, message: 'the edit in the signed-in iframe' });
  assert.equal(await frame.evaluate(() => window.__kept), 'still here', 'the iframe was updated in place, not reloaded');
});
