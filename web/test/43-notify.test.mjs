// Answer without typing (issue 31, items 4 and 5). A stand-in for Claude
// Code (installed as `claude`, so the server gives it the claude profile's
// hooks) draws a permission dialog like Claude's, tells the server through
// the PermissionRequest hook, and writes on its screen every byte it
// receives. Then it asks a question (the AskUserQuestion hook) and reads a
// line. The real Claude Code 2.1.197 takes "1" as Allow and Esc as Deny at
// that dialog (see src/models/answers.ts); test 44 checks it with the real CLI.
//
// - On a phone (390 x 844, touch, device pixel ratio 3) the session shows
//   a card "Claude wants to use Write on docs/plan.md"; Allow delivers
//   "1"; the question's card shows the question and its reply reaches the
//   program as the text, then Enter. On a desktop, Deny delivers Esc.
// - The service worker registers; a session.needsInput with two pages open
//   makes exactly one notification, with the session's name, the request
//   and Allow / Deny / Open; its Allow (the worker's click handler, called
//   as a notification click would) delivers "1"; the question that follows
//   is a notification of its own, with Open only; the run's end is a
//   "finished" notification, with a tag of its own, whose Open shows the
//   session in a page.
// - With no page of agentmux open, Allow still answers, once.
// - The page's title and favicon count the sessions waiting.
// - Where there can be no service worker (plain http under a name), the
//   bell says to use https or localhost.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { chromium } from 'playwright-core';
import {
  PERMISSION_DIALOG,
  browser, openApp, screenshot, sel, tabById, tempDir, uiTest, waitFor, waitForLine, waitForPrompt,
} from './harness.mjs';

const TITLE = 'Claude wants to use Write on docs/plan.md';

// The stand-in for Claude: raw mode, so that every key arrives as typed.
const STAND_IN = PERMISSION_DIALOG + `process.stdin.on('data', (buf) => {
  const s = buf.toString('utf8');
  out('received ' + JSON.stringify(s) + '\\n');
  if (stage === 'permission' && (s === '1' || s === '\\x1b')) {
    out(s === '1' ? 'allowed\\n' : 'denied\\n');
    stage = 'question';
    out('Which database?\\n');
    hook({ hook_event_name: 'PreToolUse', tool_name: 'AskUserQuestion', tool_input: { questions: [{ question: 'Which database?' }] } });
  } else if (stage === 'question') {
    line += s;
    if (line.endsWith('\\r')) {
      out('answer=' + line.slice(0, -1) + '\\n');
      stage = 'done';
      setTimeout(() => process.exit(0), 300);
    }
  }
});
`;

const binDir = await tempDir('stand-in-claude');
await fs.writeFile(path.join(binDir, 'claude'), STAND_IN, { mode: 0o755 });
const env = { PATH: `${binDir}:${process.env.PATH}` };

const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true };

/** A page of its own context, whose console errors fail the test as the fixture page's do. */
async function openPage(fx, contextOptions) {
  const ctx = await (await browser()).newContext(contextOptions);
  fx.onCleanup(() => ctx.close());
  const page = await ctx.newPage();
  page.on('console', (m) => m.type() === 'error' && fx.errors.push({ kind: 'console', text: m.text() }));
  page.on('pageerror', (err) => fx.errors.push({ kind: 'pageerror', text: String(err) }));
  await openApp(page, fx.server.url);
  return page;
}

const card = (page) => page.locator(sel('answer-card'));

uiTest('a permission card answers with the dialog\'s keys, a question card with a reply, on a phone and a desktop', { env, timeout: 90_000 }, async (fx) => {
  const { page, server } = fx;
  const phone = await openPage(fx, PHONE);
  const s = await server.createSession({ name: 'planner', agent: 'claude' });
  assert.equal(s.agent, 'claude');

  // The only session is on screen, and waits at its permission request.
  const c = card(phone);
  await waitFor(async () => (await c.getAttribute('data-kind')) === 'permission' && c.isVisible(), { message: 'the permission card on the phone' });
  assert.equal(await c.getAttribute('data-session-id'), s.id);
  assert.equal(await c.locator(sel('answer-title')).textContent(), TITLE);
  await waitForLine(phone, s.id, /Do you want to create plan\.md\?/);
  const shot = await screenshot(phone, 'notify-permission-card-phone');
  fx.t.diagnostic(`screenshot: ${shot}`);
  // Thumb-sized buttons inside the screen.
  for (const id of ['answer-allow', 'answer-deny']) {
    const box = await c.locator(sel(id)).boundingBox();
    assert.ok(box && box.height >= 40 && box.x >= 0 && box.x + box.width <= 390, `${id} at ${JSON.stringify(box)}`);
  }

  const sizeOf = async () => (await server.sessions()).find((x) => x.id === s.id);
  const before = await sizeOf();
  await c.locator(sel('answer-allow')).tap();
  await waitForLine(phone, s.id, 'received "1"');
  await waitForLine(phone, s.id, 'allowed');
  // An answer is not sitting down at the terminal: the phone leaves the
  // session at the size it had.
  const after = await sizeOf();
  assert.deepEqual([after.cols, after.rows], [before.cols, before.rows], 'answering from the phone kept the session\'s size');

  // The question that follows: its own card, and a reply typed as keys, then Enter.
  await waitFor(async () => (await c.getAttribute('data-kind')) === 'question' && c.isVisible(), { message: 'the question card' });
  assert.equal(await c.locator(sel('answer-question')).textContent(), 'Which database?');
  await c.locator(sel('answer-reply')).fill('postgres');
  await screenshot(phone, 'notify-question-card-phone');
  await c.locator(sel('answer-send')).tap();
  await waitForLine(phone, s.id, 'answer=postgres');
  await waitForLine(phone, s.id, 'received "\\r"');
  await c.waitFor({ state: 'hidden' });

  // A desktop, the same card: Deny sends Esc.
  const other = await server.createSession({ name: 'denier', agent: 'claude' });
  await tabById(page, other.id).click();
  const dc = card(page);
  await waitFor(async () => (await dc.getAttribute('data-session-id')) === other.id && (await dc.getAttribute('data-kind')) === 'permission' && dc.isVisible(),
    { message: 'the permission card on the desktop' });
  await screenshot(page, 'notify-permission-card-desktop');
  await dc.locator(sel('answer-deny')).click();
  await waitForLine(page, other.id, 'received "\\u001b"');
  await waitForLine(page, other.id, 'denied');
});

/**
 * The service worker's notifications, as a page sees them, read once no
 * page of the app is showing one: Chromium's getNotifications() deletes
 * from its database a notification written but not yet on display when the
 * read began (platform_notification_context_impl.cc), so a test that polled
 * while the app showed one lost it now and then.
 */
async function notifications(page) {
  for (const p of page.context().pages()) {
    if (p !== page) await p.evaluate(() => window.__agentmux?.notificationsSettled?.());
  }
  return page.evaluate(async () => {
    const reg = await navigator.serviceWorker.ready;
    // The read starts in the same step as the wait ends: nothing can begin showing between them.
    await window.__agentmux.notificationsSettled();
    return (await reg.getNotifications()).map((n) => ({
      title: n.title, body: n.body, tag: n.tag, actions: n.actions.map((a) => `${a.action}:${a.title}`), data: n.data,
    }));
  });
}

uiTest('the service worker shows one actionable notification per event, and its Allow answers the dialog', { env, timeout: 90_000 }, async (fx) => {
  const { page, server, context } = fx;
  await context.grantPermissions(['notifications'], { origin: new URL(server.url).origin });
  // A session on screen in both pages: the one that asks is in the background.
  const front = await server.createSession({ name: 'front' });
  await tabById(page, front.id).waitFor();
  await waitForPrompt(page, front.id);
  const second = await context.newPage();
  second.on('console', (m) => m.type() === 'error' && fx.errors.push({ kind: 'console', text: m.text() }));
  await openApp(second, server.url);
  for (const p of [page, second]) {
    assert.equal(await p.evaluate(() => window.__agentmux.activeSessionId()), front.id);
    assert.ok(await p.evaluate(async () => !!(await navigator.serviceWorker.ready).active), 'the service worker is active');
  }
  const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
  assert.match(worker.url(), /\/sw\.js$/);

  const s = await server.createSession({ name: 'planner', agent: 'claude' });
  const notes = await waitFor(async () => {
    const n = await notifications(page);
    return n.length > 0 && n;
  }, { message: 'a notification' });
  // Both pages heard the event: still one notification.
  for (const p of [page, second]) {
    await waitFor(() => p.evaluate((id) => document.querySelector(`[data-testid="tab"][data-session-id="${id}"]`)?.dataset.status === 'waiting', s.id),
      { message: 'the planner waiting in both pages' });
  }
  assert.deepEqual(await notifications(second), notes, 'both pages see the same notifications');
  assert.equal(notes.length, 1, `one notification: ${JSON.stringify(notes)}`);
  const [n] = notes;
  assert.equal(n.title, 'planner asks to use Write');
  assert.equal(n.body, 'docs/plan.md');
  assert.equal(n.tag, `agentmux-${s.id}-waiting`);
  assert.deepEqual(n.actions.slice(0, 2), ['allow:Allow', 'deny:Deny'], `actions ${JSON.stringify(n.actions)}`);
  const maxActions = await page.evaluate(() => Notification.maxActions);
  assert.deepEqual(n.actions, ['allow:Allow', 'deny:Deny', 'open:Open'].slice(0, Math.max(2, maxActions)));
  assert.deepEqual(n.data.keys, { allow: '1', deny: '\u001b' });

  // The title and favicon count it.
  await waitFor(async () => (await page.title()) === '(1) agentmux', { message: 'the title counting one' });
  assert.equal(await page.locator('link[rel="icon"]').getAttribute('data-count'), '1');

  // Allow, as a click on the notification's button: the worker types "1"
  // through the server, with neither page focused.
  await worker.evaluate(async (tag) => {
    const [note] = await self.registration.getNotifications({ tag });
    await self.agentmuxNotificationClick(note, 'allow');
  }, n.tag);
  await tabById(page, s.id).click();
  await waitForLine(page, s.id, 'received "1"');
  await waitForLine(page, s.id, 'allowed');

  // The question: a notification of its own, from the page that does not show it.
  const q = await waitFor(async () => (await notifications(second)).find((x) => x.title === 'planner needs input'), { message: 'the question\'s notification' });
  assert.match(q.body, /Which database\?/);
  assert.equal(q.tag, `agentmux-${s.id}-waiting`);
  assert.deepEqual(q.actions, ['open:Open']);
  assert.equal((await notifications(second)).length, 1, 'the permission\'s notification went with its answer');

  // Answered in the page that shows it; the run ends: "finished", told apart.
  const c = card(page);
  await waitFor(async () => (await c.getAttribute('data-kind')) === 'question' && c.isVisible(), { message: 'the question card' });
  await c.locator(sel('answer-reply')).fill('sqlite');
  await c.locator(sel('answer-send')).click();
  await waitForLine(page, s.id, 'answer=sqlite');
  const done = await waitFor(async () => (await notifications(second)).find((x) => x.tag === `agentmux-${s.id}-finished`), { message: 'the finished notification' });
  assert.equal(done.title, 'planner finished');
  assert.match(done.body, /exited with code 0/);
  assert.deepEqual(done.actions, ['open:Open']);
  assert.ok(!(await notifications(second)).some((x) => x.tag === `agentmux-${s.id}-waiting`), 'nothing waits any more');
  await waitFor(async () => (await page.title()) === 'agentmux', { message: 'the title without a count' });
  assert.equal(await page.locator('link[rel="icon"]').getAttribute('data-count'), '0');

  // Open brings a page to the session it names.
  await tabById(page, front.id).click();
  await worker.evaluate(async (tag) => {
    const [note] = await self.registration.getNotifications({ tag });
    await self.agentmuxNotificationClick(note, 'open');
  }, done.tag);
  await waitFor(async () => {
    const shown = await Promise.all([page, second].map((p) => p.evaluate(() => window.__agentmux.activeSessionId())));
    return shown.includes(s.id);
  }, { message: 'a page showing the planner after Open' });
  assert.deepEqual(await notifications(second), [], 'the clicked notification is gone');
});

uiTest('the title and the favicon count the sessions that wait', { env }, async ({ page, server }) => {
  const bell = ['sh', '-c', 'sleep 0.3; printf "\\a"; read x; echo "got $x"; exec sleep 30'];
  const a = await server.createSession({ name: 'one', command: bell });
  const b = await server.createSession({ name: 'two', command: bell });
  await waitFor(async () => (await page.title()) === '(2) agentmux', { message: 'the title counting two' });
  const icon = page.locator('link[rel="icon"]');
  await waitFor(async () => (await icon.getAttribute('data-count')) === '2' && (await icon.getAttribute('href')).startsWith('data:image/png;base64,'),
    { message: 'the favicon with a badge' });
  // Look at the favicon as drawn, larger.
  const href = await icon.getAttribute('href');
  const look = await page.context().newPage();
  await look.setContent(`<body style="margin:0;background:#fff"><img src="${href}" style="width:128px;height:128px;image-rendering:pixelated"></body>`);
  await look.setViewportSize({ width: 128, height: 128 });
  await screenshot(look, 'notify-favicon-badge');
  await look.close();

  for (const [id, left] of [[a.id, '(1) agentmux'], [b.id, 'agentmux']]) {
    await tabById(page, id).click();
    await page.keyboard.type('y');
    await page.keyboard.press('Enter');
    await waitForLine(page, id, 'got y');
    await waitFor(async () => (await page.title()) === left, { message: `the title ${left}` });
  }
  await waitFor(async () => (await icon.getAttribute('data-count')) === '0' && (await icon.getAttribute('href')).endsWith('favicon.svg'),
    { message: 'the plain favicon again' });
});

// Service workers exist only in secure contexts: a page at a plain-http
// name (here agentmux.test, which this browser resolves to the server)
// has none, and the bell says what to do instead.
uiTest('on plain http under a name, the bell says to use https or localhost', { flags: ['--allowed-hosts', 'agentmux.test'] }, async (fx) => {
  const other = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--host-resolver-rules=MAP agentmux.test 127.0.0.1'],
  });
  fx.onCleanup(() => other.close());
  const page = await other.newPage();
  page.on('console', (m) => m.type() === 'error' && fx.errors.push({ kind: 'console', text: m.text() }));
  page.on('pageerror', (err) => fx.errors.push({ kind: 'pageerror', text: String(err) }));
  const url = `http://agentmux.test:${fx.server.port}/`;
  await openApp(page, url);
  assert.deepEqual(await page.evaluate(() => [window.isSecureContext, 'serviceWorker' in navigator]), [false, false]);
  const bell = page.locator('#bell');
  assert.match(await bell.getAttribute('title'), /https or localhost/);
  await bell.click();
  const note = page.locator(`${sel('toast')}[data-kind="warning"]`);
  await note.waitFor();
  assert.match(await note.textContent(), /need https or localhost, and this page is at http:\/\/agentmux\.test:\d+: open agentmux at http:\/\/localhost/);
});

// Installable: Chromium reads the manifest without errors, with the icons
// a home screen needs, and finds nothing that keeps the page from being
// installed.
uiTest('the web app manifest makes the UI installable', async ({ page, context }) => {
  await page.evaluate(() => navigator.serviceWorker.ready);
  const cdp = await context.newCDPSession(page);
  const { url, errors, data } = await cdp.send('Page.getAppManifest');
  assert.match(url, /\/manifest\.webmanifest$/);
  assert.deepEqual(errors, []);
  const m = JSON.parse(data);
  assert.equal(m.name, 'agentmux');
  assert.equal(m.display, 'standalone');
  assert.equal(m.start_url, './');
  assert.ok(m.theme_color);
  for (const size of ['192x192', '512x512']) {
    const icon = m.icons.find((i) => i.sizes === size && i.type === 'image/png');
    assert.ok(icon, `a ${size} PNG icon`);
    const res = await page.request.get(new URL(icon.src, url).href);
    assert.equal(res.status(), 200);
    assert.equal(res.headers()['content-type'], 'image/png');
  }
  // A test's browser context is off the record, which no page can change.
  const { installabilityErrors } = await cdp.send('Page.getInstallabilityErrors');
  assert.deepEqual(installabilityErrors.filter((e) => e.errorId !== 'in-incognito'), []);
});

// No page of agentmux open at all (the only one has gone elsewhere): the
// notification stays, and its Allow still reaches the agent, through the
// server's input endpoint; a second Allow of the same notification, the
// request answered, types nothing.
uiTest('with no page open, a notification\'s Allow still answers', { env }, async ({ page, server, context }) => {
  await context.grantPermissions(['notifications'], { origin: new URL(server.url).origin });
  const front = await server.createSession({ name: 'front' });
  await waitForPrompt(page, front.id);
  // As the test above: the asking session is in the background, and the
  // page's service worker is up before it asks.
  assert.equal(await page.evaluate(() => window.__agentmux.activeSessionId()), front.id);
  assert.ok(await page.evaluate(async () => !!(await navigator.serviceWorker.ready).active), 'the service worker is active');
  const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
  const s = await server.createSession({ name: 'planner', agent: 'claude' });
  const [n] = await waitFor(async () => {
    const list = await notifications(page);
    return list.length > 0 && list;
  }, { message: 'a notification' });
  assert.equal(n.title, 'planner asks to use Write');

  await page.goto('about:blank');
  const clients = await worker.evaluate(async () => (await self.clients.matchAll({ includeUncontrolled: true })).length);
  assert.equal(clients, 0, 'no page of agentmux open');
  const left = await worker.evaluate(async (tag) => {
    const [note] = await self.registration.getNotifications({ tag });
    const data = note.data;
    await self.agentmuxNotificationClick(note, 'allow');
    // The same answer again, as a second click on a stale notification.
    const res = await fetch(new URL(`api/sessions/${data.sessionId}/input`, self.registration.scope), {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ data: data.keys.allow, permission: data.permission }),
    });
    return { status: res.status, open: (await self.registration.getNotifications()).length };
  }, n.tag);
  assert.deepEqual(left, { status: 409, open: 0 });

  await openApp(page, server.url);
  await tabById(page, s.id).click();
  await waitForLine(page, s.id, 'allowed');
  const lines = (await page.evaluate((id) => {
    const buf = window.__agentmux.terminals.get(id).buffer.active;
    const out = [];
    for (let i = 0; i < buf.length; i++) out.push(buf.getLine(i).translateToString(true));
    return out;
  }, s.id)).filter((l) => l.startsWith('received'));
  assert.deepEqual(lines, ['received "1"'], 'the keys went once');
});
