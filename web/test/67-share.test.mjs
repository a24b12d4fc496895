// Read-only share links (docs/protocol.md, Read-only share links): with
// --token on, the owner makes a link from the session menu; someone
// without the token opens it in a browser of their own and watches the
// session live, its scrollback included, at the session's size on a
// desktop and on a phone, while nothing they type reaches the session and
// the session keeps its size. The owner sees them as a viewer. Revoking
// the link closes the viewer at once with the revoked message; a wrong
// secret, or none, says so and does not reconnect.
import assert from 'node:assert/strict';
import {
  uiTest, sel, browser, openApp, waitFor, waitForPrompt, waitForScreen, typeCommand, createSession, screenshot, showLines,
} from './harness.mjs';

const TOKEN = 'share-test-token-5d0c7a';

/** The viewer's terminal, one line per buffer line, right-trimmed; null before it exists. */
async function viewerLines(page) {
  return page.evaluate(() => {
    const term = window.__agentmuxShare && window.__agentmuxShare.terminal();
    if (!term) return null;
    const buf = term.buffer.active;
    const lines = [];
    for (let i = 0; i < buf.length; i++) lines.push((buf.getLine(i)?.translateToString(true) ?? '').trimEnd());
    return lines;
  });
}

async function waitForViewer(page, pred, message, timeout = 15_000) {
  let last = null;
  try {
    return await waitFor(async () => {
      last = await viewerLines(page);
      return last && pred(last) ? last : null;
    }, { timeout, message });
  } catch (err) {
    if (last) err.message += `\nthe viewer shows:\n${showLines(last)}`;
    throw err;
  }
}

/**
 * A viewer: a page in a browser context of its own (no token, no cookie),
 * its errors, the frames it sends and its sockets recorded.
 */
async function viewerPage(fx, contextOptions, who) {
  const b = await browser();
  const context = await b.newContext(contextOptions);
  fx.onCleanup(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  const rec = { page, context, errors: [], sent: [], received: [], sockets: 0 };
  page.on('console', (msg) => {
    if (msg.type() === 'error') rec.errors.push(`[${who}] ${msg.text()}`);
  });
  page.on('pageerror', (err) => rec.errors.push(`[${who}] ${err}`));
  page.on('websocket', (sock) => {
    rec.sockets++;
    sock.on('framesent', ({ payload }) => {
      try {
        rec.sent.push(JSON.parse(String(payload)));
      } catch {
        rec.sent.push({ type: '(not JSON)', payload: String(payload) });
      }
    });
    sock.on('framereceived', ({ payload }) => {
      try {
        const m = JSON.parse(String(payload));
        if (m.type !== 'terminal.output' && m.type !== 'heartbeat') rec.received.push(m);
      } catch {}
    });
  });
  return rec;
}

/** What a refused WebSocket logs in Chromium: expected when a link is dead. */
const REFUSED_SOCKET = /WebSocket connection to .*failed/;

async function sessionSize(server, id) {
  const { status, body } = await server.api(`api/sessions/${id}`);
  assert.equal(status, 200, `GET /api/sessions/${id}: ${JSON.stringify(body)}`);
  const s = body.session ?? body;
  return { cols: s.cols, rows: s.rows };
}

/** The message the viewer shows once it stopped: its kind and title. */
async function viewerEnding(page) {
  const msg = page.locator(sel('share-message'));
  await msg.waitFor({ state: 'visible' });
  return { kind: await msg.getAttribute('data-kind'), title: (await page.locator(sel('share-message-title')).textContent()).trim() };
}

uiTest('a read-only link: watched live with its scrollback, at its size on a desktop and a phone; typing reaches nothing; revoked at once', {
  server: false,
  timeout: 240_000,
}, async (fx) => {
  const server = await fx.startServer({ token: TOKEN });
  const { page } = fx;
  await openApp(page, `${server.url}?token=${TOKEN}`);

  // A session with a screenful of history before anyone watches.
  const id = await createSession(page, 'shared');
  await waitForPrompt(page, id);
  await typeCommand(page, 'seq -f "history-%g" 1 200; echo MARK-BEFORE');
  await waitForScreen(page, id, (l) => l.some((x) => x === 'MARK-BEFORE'), 'the history in the owner\'s terminal');
  const size = await sessionSize(server, id);
  assert.ok(size.cols > 40 && size.rows > 10, `the session has the owner's size: ${JSON.stringify(size)}`);

  // The session menu: Share read-only…, then the dialog.
  await page.locator(sel('session-menu')).click();
  await page.locator(sel('session-share')).click();
  const dialog = page.locator(sel('share-dialog'));
  await dialog.waitFor({ state: 'visible' });
  assert.equal(await dialog.locator(sel('share-expiry')).inputValue(), '86400', '24 hours by default');
  assert.equal(await dialog.locator(sel('share-scrollback')).isChecked(), true, 'scrollback included by default');
  assert.equal(await dialog.locator(sel('share-empty')).isVisible(), true, 'no links yet');
  await dialog.locator(sel('share-create')).click();
  const linkBox = dialog.locator(sel('share-link'));
  await linkBox.waitFor({ state: 'visible' });
  const link = await linkBox.inputValue();
  assert.match(link, new RegExp(`^${server.url.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}share\\.html#[A-Za-z0-9_-]{16,}$`), `the link: ${link}`);
  assert.doesNotMatch(link, new RegExp(TOKEN), 'the token is not in the link');
  await waitFor(async () => (await dialog.locator(sel('share-item')).count()) === 1, { message: 'the new link listed' });
  await screenshot(page, 'share-dialog');
  await page.locator(sel('share-close')).click();
  await dialog.waitFor({ state: 'hidden' });

  // A viewer on a desktop, without the token.
  const desk = await viewerPage(fx, { viewport: { width: 1280, height: 800 } }, 'desktop viewer');
  await desk.page.goto(link);
  await waitForViewer(desk.page, (l) => l.includes('MARK-BEFORE') && l.includes('history-1'), 'the screen and the scrollback (history-1) in the viewer');
  assert.equal((await desk.page.locator(sel('share-name')).textContent()).trim(), 'shared');
  assert.ok((await desk.page.locator(sel('share-agent')).textContent()).trim().length > 0, 'the agent is named');
  assert.match(await desk.page.locator(sel('share-status')).textContent(), /running|idle|waiting/);
  assert.equal(await desk.page.locator(sel('share-readonly')).isVisible(), true, 'the Read-only badge');
  assert.match(await desk.page.locator(sel('share-expires')).textContent(), /^Link expires in 2[34] h/);
  assert.deepEqual(await desk.page.evaluate(() => ({ cols: window.__agentmuxShare.terminal().cols, rows: window.__agentmuxShare.terminal().rows })), size,
    'the viewer draws the session at its size');

  // Live output reaches the viewer.
  await typeCommand(page, 'echo LIVE-$((6*7))');
  await waitForViewer(desk.page, (l) => l.includes('LIVE-42'), 'live output in the viewer');

  // The owner sees a viewer, as a viewer, never as a typist.
  const viewerAvatar = page.locator(`${sel('session-people')} ${sel('avatar')}[data-viewer="true"]`);
  await viewerAvatar.first().waitFor({ state: 'visible' });
  assert.match(await viewerAvatar.first().getAttribute('title'), /viewer \(read-only link\)/);
  assert.doesNotMatch((await page.locator(sel('typing-hint')).textContent()) ?? '', /viewer/);

  // Typing into the viewer reaches nothing: no frame but attach, detach and heartbeats goes out, and the shell never sees it.
  await desk.page.locator(sel('share-terminal')).click();
  await desk.page.keyboard.type('echo HACKED-BY-VIEWER');
  await desk.page.keyboard.press('Enter');
  await desk.page.keyboard.press('Control+C');
  await typeCommand(page, 'echo AFTER-$((2+3))');
  await waitForScreen(page, id, (l) => l.includes('AFTER-5'), 'the owner\'s own command');
  await waitForViewer(desk.page, (l) => l.includes('AFTER-5'), 'the owner\'s command in the viewer');
  for (const [who, lines] of [['owner', await waitForScreen(page, id, () => true, 'the owner\'s screen')], ['viewer', await viewerLines(desk.page)]]) {
    assert.ok(!lines.some((l) => l.includes('HACKED')), `the viewer's keys reached the session (${who}'s screen):\n${showLines(lines)}`);
  }
  const kinds = [...new Set(desk.sent.map((m) => m.type))].sort();
  assert.ok(kinds.every((k) => ['heartbeat', 'session.attach', 'session.detach'].includes(k)), `the viewer sent only attaches and heartbeats: ${kinds}`);
  assert.ok(desk.sent.every((m) => m.type !== 'session.attach' || m.sessionId === id), 'it attached its own session only');
  assert.deepEqual(desk.received.filter((m) => m.type === 'error'), [], 'the server refused nothing: the page sent nothing it may not');
  assert.deepEqual(await sessionSize(server, id), size, 'the session kept its size with a desktop viewer');

  // The same viewer narrowed to a phone's width, and a phone of its own: the session keeps its size.
  await desk.page.setViewportSize({ width: 390, height: 844 });
  await desk.page.waitForTimeout(300); // the view's resize is debounced (50 ms); what would go out, would by then
  const phone = await viewerPage(fx, { viewport: { width: 390, height: 844 }, isMobile: true, hasTouch: true }, 'phone viewer');
  await phone.page.goto(link);
  await waitForViewer(phone.page, (l) => l.includes('AFTER-5'), 'the phone viewer\'s screen');
  await typeCommand(page, 'echo PHONE-$((3*3))');
  await waitForViewer(phone.page, (l) => l.includes('PHONE-9'), 'live output on the phone');
  assert.deepEqual(await phone.page.evaluate(() => ({ cols: window.__agentmuxShare.terminal().cols, rows: window.__agentmuxShare.terminal().rows })), size,
    'the phone draws the session at its size too');
  const fit = await phone.page.evaluate(() => {
    const host = document.querySelector('.term-host');
    return { font: window.__agentmuxShare.terminal().options.fontSize, scrollWidth: host.scrollWidth, clientWidth: host.clientWidth, pageWidth: document.documentElement.scrollWidth };
  });
  assert.ok(fit.font < 13, `the font is scaled down on a phone: ${JSON.stringify(fit)}`);
  assert.ok(fit.pageWidth <= 390, `the page itself does not scroll sideways, only the terminal: ${JSON.stringify(fit)}`);
  assert.ok(fit.scrollWidth > fit.clientWidth, `the session's ${size.cols} columns scroll sideways on a phone: ${JSON.stringify(fit)}`);
  await screenshot(phone.page, 'share-viewer-phone');
  await desk.page.setViewportSize({ width: 1280, height: 800 });
  await waitForViewer(desk.page, (l) => l.includes('PHONE-9'), 'the desktop viewer still follows');
  await screenshot(desk.page, 'share-viewer-desktop');
  assert.deepEqual(await sessionSize(server, id), size, 'the session kept its size with a phone viewer');
  assert.ok([...phone.sent, ...desk.sent].every((m) => m.type !== 'terminal.resize'), 'no viewer sent a size');
  // Two viewers now.
  await waitFor(async () => (await viewerAvatar.count()) === 2, { message: 'two viewers in the owner\'s header' });

  // A restart is an ordinary close: the viewers reconnect, with backoff, and watch on.
  const before = { desktop: desk.sockets, phone: phone.sockets };
  await server.restart();
  for (const [who, v] of [['desktop', desk], ['phone', phone]]) {
    let seen = null;
    await waitFor(async () => {
      seen = { sockets: v.sockets, before: before[who], state: await v.page.evaluate(() => window.__agentmuxShare.connectionState()), ended: await v.page.evaluate(() => window.__agentmuxShare.ended()) };
      return seen.sockets > seen.before && seen.state === 'connected';
    }, { timeout: 20_000, message: `the ${who} viewer reconnected after the restart` }).catch((err) => {
      err.message += ` ${JSON.stringify(seen)}`;
      throw err;
    });
    assert.equal(await v.page.locator(sel('share-message')).isVisible(), false, `the ${who} viewer did not give up`);
    await waitForViewer(v.page, (l) => l.includes('PHONE-9'), `the ${who} viewer's screen after the restart`);
  }
  await waitFor(async () => (await viewerAvatar.count()) === 2, { timeout: 15_000, message: 'two viewers again after the restart' });

  // Revoke from the dialog: both viewers close at once, say why, and do not come back.
  await page.locator(sel('session-menu')).click();
  await page.locator(sel('session-share')).click();
  await dialog.waitFor({ state: 'visible' });
  assert.equal(await dialog.locator(sel('share-created')).isVisible(), false, 'the link is not shown again');
  await waitFor(async () => (await dialog.locator(sel('share-item')).count()) === 1, { message: 'the link listed again' });
  await waitFor(async () => Number(await dialog.locator(sel('share-item')).first().getAttribute('data-viewers')) === 2,
    { message: 'the dialog counts the two viewers' });
  assert.match(await dialog.locator(sel('share-item-text')).textContent(), /2 viewers/);
  await screenshot(page, 'share-dialog-viewers');
  const socketsBefore = desk.sockets;
  const revokedAt = Date.now();
  await dialog.locator(sel('share-revoke')).click();
  for (const v of [desk, phone]) {
    const end = await viewerEnding(v.page);
    assert.deepEqual(end, { kind: 'ended', title: 'This read-only link was revoked' });
  }
  assert.ok(Date.now() - revokedAt < 5_000, `the viewers were closed at once (${Date.now() - revokedAt} ms)`);
  await waitFor(async () => (await dialog.locator(sel('share-item')).count()) === 0, { message: 'the link gone from the list' });
  await viewerAvatar.first().waitFor({ state: 'detached' });
  assert.equal(await desk.page.locator(sel('share-terminal')).isVisible(), false, 'the terminal is gone');
  await screenshot(desk.page, 'share-revoked');
  await desk.page.waitForTimeout(2_500); // past the first reconnection's backoff (1 s ± 20 %)
  assert.equal(desk.sockets, socketsBefore, 'no reconnection after a revoke');
  assert.equal(await desk.page.evaluate(() => window.__agentmuxShare.connectionState()), 'closed');
  await page.locator(sel('share-close')).click();
  await dialog.waitFor({ state: 'hidden' });

  // The owner on a phone's width: the menu and the dialog fit.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.locator(sel('session-menu')).click();
  await page.locator(sel('session-share')).click();
  await dialog.waitFor({ state: 'visible' });
  await dialog.locator(sel('share-create')).click();
  await dialog.locator(sel('share-link')).waitFor({ state: 'visible' });
  assert.equal(await dialog.locator(sel('share-create')).textContent(), 'Create another link');
  await waitFor(async () => (await dialog.locator(sel('share-item')).count()) === 1, { message: 'the phone\'s link listed' });
  const box = await dialog.boundingBox();
  assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `the dialog fits the phone: ${JSON.stringify(box)}`);
  await screenshot(page, 'share-dialog-phone');
  await dialog.locator(sel('share-revoke')).click();
  await waitFor(async () => (await dialog.locator(sel('share-item')).count()) === 0, { message: 'the phone\'s link revoked' });
  await page.locator(sel('share-close')).click();
  await page.setViewportSize({ width: 1280, height: 800 });

  // A wrong secret, and none at all.
  const stranger = await viewerPage(fx, { viewport: { width: 1280, height: 800 } }, 'stranger');
  await stranger.page.goto(`${server.url}share.html#not-a-real-secret-0123456789`);
  const wrong = await viewerEnding(stranger.page);
  assert.equal(wrong.kind, 'refused');
  assert.match(wrong.title, /expired or was revoked/);
  await screenshot(stranger.page, 'share-refused');
  const opened = stranger.sockets;
  await stranger.page.waitForTimeout(2_500);
  assert.equal(stranger.sockets, opened, 'a refused link is not tried again');
  await stranger.page.goto(`${server.url}share.html`);
  assert.equal((await viewerEnding(stranger.page)).kind, 'no-secret');
  assert.equal(stranger.sockets, opened, 'without a secret, no socket at all');

  // The revoked link opens nothing any more.
  await stranger.page.goto(link);
  assert.equal((await viewerEnding(stranger.page)).kind, 'refused');
  assert.deepEqual(await sessionSize(server, id), size, 'the session kept its size throughout');

  const bad = [...desk.errors, ...phone.errors, ...stranger.errors].filter((e) => !REFUSED_SOCKET.test(e));
  assert.deepEqual(bad, [], 'the viewers logged errors');
});
