// agentmux hub (issue 44): one inbox over many workspaces, with real
// processes throughout. Three agentmux workspaces, alice, bob and carol,
// each with a token and a workspace directory of its own, run sessions
// whose sh scripts ask a question and wait at `read` (agentmux's detector
// makes them wait, the question their reason); `agentmux hub` follows them
// from a --peers file that gives carol the wrong token and names a port
// where nothing listens. The page is the hub's own (hub.html).
//
// - Desktop (1280 x 800): every workspace's sessions in one list, those
//   that wait first, the oldest wait first; the unreachable workspaces
//   with why (refused, token rejected); the title and favicon count the
//   waiting sessions; the filters by workspace and status; a reply from
//   the hub reaches the right workspace's session (its script writes what
//   it read into its own workspace), naming who answered; a reply to a
//   session answered elsewhere meanwhile is refused with the workspace's
//   words; Open links to the session in its workspace's own page; a page
//   of another origin is refused by the hub's API.
// - Phone (390 x 844, touch): cards, the filters in a sheet opened from
//   the top bar, every control at least 44 px, a reply from a card.
// - The hub going away: the page says the connection is lost and keeps
//   the list; once the hub is back it catches up with what changed.
// - Notifications: a stand-in for Claude Code asks a permission in alice;
//   the hub's page, in the background, shows it through the service
//   worker with Allow, Deny and Open; the worker's Allow answers through
//   the hub and the stand-in receives Claude's "1"; its question follows as
//   a notification with Open, which opens the session's own page; a reply
//   from the list reaches it; a stale notification's Allow is refused,
//   which a notification says.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { PERMISSION_DIALOG, SERVER_DOWN_CONSOLE, initGitRepo, screenshot, sel, tempDir, uiTest, waitFor } from './harness.mjs';

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true };
/** A question left on screen makes a session wait after this much quiet. */
const QUIET = ['--question-quiet', '300ms'];

/**
 * A session that asks, waits at `read`, and writes what it read into
 * <file> in its workspace (which is the hub's proof of where a reply went).
 */
const asks = (question, file) => ['sh', '-c', `printf "${question} "; read x; printf "%s" "$x" > ${file}; echo "read: $x"; exec sleep 120`];
const busy = ['sh', '-c', 'echo working; exec sleep 600'];

/**
 * Where nothing listens: port 1 (tcpmux), below the ports a listener is
 * given for port 0, so that no server of the test (the hub above all) can
 * come to listen there, as on a port that was free a moment ago.
 */
const NOWHERE = 'http://127.0.0.1:1';

/** A workspace's address as the hub has it: without the last '/'. */
const base = (server) => server.url.replace(/\/$/, '');

/**
 * alice and bob as they should be, carol with a wrong token in the peers
 * file, and a port where nothing listens. aliceEnv: more of alice's
 * environment (a stand-in agent on its PATH); aliceRepo: alice's workspace
 * is a git repository.
 */
async function setUp(fx, { aliceEnv = {}, aliceRepo = false } = {}) {
  const [alice, bob, carol] = await Promise.all([
    fx.startServer({ token: 'alice-token-5b1e3f9a', flags: ['--name', 'alice', ...QUIET], env: aliceEnv, setupWorkspace: aliceRepo ? initGitRepo : undefined }),
    fx.startServer({ token: 'bob-token-7c2d4e8f', flags: ['--name', 'bob', ...QUIET] }),
    fx.startServer({ token: 'carol-token-9a8b7c6d', flags: ['--name', 'carol', ...QUIET] }),
  ]);
  const nowhere = NOWHERE;
  const hub = await fx.startHub({
    peers: [
      { url: base(alice), token: alice.token },
      { url: base(bob), token: bob.token },
      { url: base(carol), token: 'not-carols-token-00' },
      { url: nowhere },
    ],
  });
  return { alice, bob, carol, nowhere, hub };
}

/** Waits until the workspace says the session waits (or, with false, no longer does). */
async function waitUntilWaiting(server, id, waiting = true) {
  return waitFor(async () => {
    const s = (await server.sessions()).find((x) => x.id === id);
    return s && (s.status === 'waiting') === waiting && s;
  }, { timeout: 15_000, message: `session ${id} ${waiting ? 'waiting' : 'no longer waiting'} in ${server.url}` });
}

/** Opens the hub's page in page and waits for its first inbox. */
async function openHub(page, hub) {
  // Four servers and a browser on two cores: a step may take a while.
  page.setDefaultTimeout(20_000);
  await page.goto(hub.url);
  await page.waitForFunction(() => window.__agentmuxHub && window.__agentmuxHub.loaded(), null, { timeout: 15_000 });
}

const rows = (page) => page.locator(sel('hub-session'));
const row = (page, server, id) => page.locator(`${sel('hub-session')}[data-workspace="${base(server)}"][data-session-id="${id}"]`);

/** What the list shows, row by row: workspace name, session name, whether it needs input. */
const listed = (page) => rows(page).evaluateAll((els) => els.map((el) => [
  el.querySelector('[data-testid=hub-session-workspace]').textContent,
  el.querySelector('[data-testid=hub-session-name]').textContent,
  el.dataset.needsInput === 'true',
]));

/** A request as another site's page would send it (node's own HTTP, so the Origin header is ours to set). */
function send(method, url, origin, body) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? '' : JSON.stringify(body);
    const headers = { ...(origin ? { Origin: origin } : {}), ...(data ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } : {}) };
    const req = http.request(url, { method, headers }, (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode, text }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

/** The file a session's script wrote into its workspace, once it is there. */
const answerIn = (server, file) => waitFor(() => fs.readFile(path.join(server.workspace, file), 'utf8').catch(() => null), {
  timeout: 15_000, message: `${file} in ${server.workspace}`,
}).then((text) => text);

uiTest('hub: every workspace\'s sessions in one inbox, the waiting first; the unreachable with why; filters; a reply reaches its workspace', {
  server: false,
  viewport: DESKTOP,
  timeout: 120_000,
  // The reply to a session answered meanwhile is refused: the browser logs the 409.
  allowConsole: [/the server responded with a status of 409/],
}, async (fx) => {
  const { page } = fx;
  const { alice, bob, carol, nowhere, hub } = await setUp(fx, { aliceRepo: true });

  // alice's deploy asks first, then bob's review: deploy has waited longest.
  const deploy = await alice.createSession({ name: 'deploy', command: asks('Proceed?', 'deploy.answer') });
  await waitUntilWaiting(alice, deploy.id);
  // build works on a branch of its own, and has changed two lines.
  const build = await alice.createSession({
    name: 'build',
    worktree: { branch: 'feature/login' },
    command: ['sh', '-c', 'printf "one\\ntwo\\n" >> README.md; echo working; exec sleep 600'],
  });
  const review = await bob.createSession({ name: 'review', command: asks('Ship it?', 'review.answer') });
  const notes = await bob.createSession({ name: 'notes', command: busy });
  await waitUntilWaiting(bob, review.id);

  // The hub's WebSocket to the page, through the test: held back on demand,
  // so that the page can show a question answered elsewhere meanwhile.
  let hold = false;
  await page.routeWebSocket(/\/ws$/, (ws) => {
    const server = ws.connectToServer();
    server.onMessage((m) => {
      if (!hold) ws.send(m);
    });
  });
  await openHub(page, hub);

  await waitFor(async () => (await rows(page).count()) === 4, { message: 'the four sessions of alice and bob' });
  // The hub hears of each workspace's changes a moment after the workspace: both waits, then the order.
  await waitFor(async () => (await page.title()) === '(2) agentmux hub', { message: 'the page told of both waits' });
  assert.deepEqual((await listed(page)).slice(0, 2), [['alice', 'deploy', true], ['bob', 'review', true]], 'the waiting first, the oldest wait first');
  assert.deepEqual((await listed(page)).slice(2).map((r) => r[2]), [false, false]);
  assert.deepEqual(new Set((await listed(page)).slice(2).map((r) => r[1])), new Set(['build', 'notes']));
  const d = row(page, alice, deploy.id);
  assert.equal(await d.locator(sel('hub-session-waits')).textContent(), 'Proceed?');
  assert.equal(await d.locator(sel('hub-session-status')).textContent(), 'waiting');
  assert.equal(await row(page, bob, review.id).locator(sel('hub-session-waits')).textContent(), 'Ship it?');
  assert.equal(await d.locator(sel('hub-session-agent')).textContent(), deploy.agent);
  // A worktree's branch, and what its agent changed.
  const b = row(page, alice, build.id);
  await waitFor(async () => (await b.locator(sel('hub-session-branch')).count()) === 1, { message: 'build\'s branch' });
  assert.equal(await b.locator(sel('hub-session-branch')).textContent(), 'feature/login');
  await waitFor(async () => (await b.locator(sel('hub-session-diff')).getAttribute('data-additions').catch(() => null)) === '2', { timeout: 15_000, message: 'build\'s +2' });
  assert.equal(await b.locator(sel('hub-session-diff')).textContent(), '+2 −0');

  // The unreachable: why, in the hub's word.
  const problem = (url) => page.locator(`${sel('hub-workspace-problem')}[data-workspace="${url}"]`);
  await waitFor(async () => (await problem(base(carol)).count()) === 1 && (await problem(nowhere).count()) === 1, { message: 'carol and the empty port shown unreachable' });
  assert.equal(await problem(base(carol)).locator(sel('hub-workspace-problem-kind')).textContent(), 'token rejected');
  assert.equal(await problem(nowhere).locator(sel('hub-workspace-problem-kind')).textContent(), 'refused');
  assert.match(await problem(nowhere).locator(sel('hub-workspace-problem-detail')).textContent(), /nothing listens/);
  // And in the filter beside the list, with the reachable ones.
  const wsChoice = (url) => page.locator(`${sel('hub-filter-workspace')}[data-workspace="${url}"]`);
  assert.equal(await wsChoice(base(carol)).getAttribute('data-reachable'), 'false');
  assert.equal(await wsChoice(base(carol)).locator(sel('hub-workspace-error')).textContent(), 'token rejected');
  assert.equal(await wsChoice(nowhere).locator(sel('hub-workspace-error')).textContent(), 'refused');
  assert.equal(await wsChoice(base(alice)).getAttribute('data-reachable'), 'true');
  assert.equal(await wsChoice(base(alice)).locator(sel('hub-choice-count')).textContent(), '2');
  assert.match(await page.locator(sel('hub-summary')).textContent(), /^2 need you · 4 sessions · 4 workspaces, 2 unreachable$/);

  // The title and the favicon count every workspace's waiting sessions.
  await waitFor(async () => (await page.title()) === '(2) agentmux hub', { message: 'the title counting two' });
  const icon = page.locator('link[rel="icon"]');
  await waitFor(async () => (await icon.getAttribute('data-count')) === '2' && (await icon.getAttribute('href')).startsWith('data:image/png'), { message: 'the favicon counting two' });

  // Open: the session in its workspace's own page, in a tab of its own.
  const open = d.locator(sel('hub-open'));
  const href = await open.getAttribute('href');
  assert.ok(href.startsWith(base(alice)) && new URL(href).searchParams.get('session') === deploy.id, `Open's link ${href}`);
  assert.equal(await open.getAttribute('target'), '_blank');
  assert.match(await open.getAttribute('rel'), /noopener/);

  const shot = await screenshot(page, 'hub-desktop');
  fx.t.diagnostic(`screenshot: ${shot}`);

  // Filters: a workspace, a status, both; remembered across a reload.
  await wsChoice(base(bob)).click();
  await waitFor(async () => JSON.stringify(await listed(page)) === JSON.stringify([['bob', 'review', true], ['bob', 'notes', false]]), { message: 'bob\'s sessions only' });
  const statusChoice = (st) => page.locator(`${sel('hub-filter-status')}[data-status="${st}"]`);
  assert.equal(await statusChoice('waiting').locator(sel('hub-choice-count')).textContent(), '1', 'the statuses count within bob');
  await statusChoice('waiting').click();
  await waitFor(async () => JSON.stringify(await listed(page)) === JSON.stringify([['bob', 'review', true]]), { message: 'bob\'s waiting session' });
  await wsChoice('').click();
  await waitFor(async () => JSON.stringify(await listed(page)) === JSON.stringify([['alice', 'deploy', true], ['bob', 'review', true]]), { message: 'every waiting session' });
  await wsChoice(base(carol)).click();
  await page.locator(sel('hub-empty')).waitFor({ state: 'visible' });
  assert.equal(await rows(page).count(), 0);
  await page.reload();
  await page.waitForFunction(() => window.__agentmuxHub && window.__agentmuxHub.loaded());
  assert.equal(await wsChoice(base(carol)).getAttribute('aria-pressed'), 'true', 'the filter is remembered');
  await page.locator(sel('hub-show-all')).click();
  await waitFor(async () => (await rows(page).count()) === 4, { message: 'every session again' });
  assert.equal(await statusChoice('all').getAttribute('aria-pressed'), 'true');

  // Who answers: a name, kept in this browser.
  await page.locator(sel('you')).click();
  await page.locator(sel('identity-name')).fill('Tess');
  await page.locator(sel('identity-save')).click();
  await page.locator(sel('identity')).waitFor({ state: 'hidden' });

  // A reply from the hub goes to alice's deploy, and nowhere else.
  await d.locator(sel('hub-reply')).fill('yes please');
  await d.locator(sel('hub-send')).click();
  assert.equal(await answerIn(alice, 'deploy.answer'), 'yes please');
  await waitUntilWaiting(alice, deploy.id, false);
  await waitFor(async () => (await d.getAttribute('data-needs-input')) === 'false', { message: 'deploy no longer waiting in the hub' });
  await waitFor(async () => (await page.title()) === '(1) agentmux hub', { message: 'the title counting one' });
  assert.equal(await fs.readFile(path.join(bob.workspace, 'deploy.answer'), 'utf8').catch(() => null), null, 'bob got nothing');
  assert.equal((await bob.sessions()).find((s) => s.id === review.id).status, 'waiting', 'bob\'s review still waits');
  await waitFor(() => /msg="session answered".*answer=reply.*by="Tess \(hub\)"/.test(alice.log), { message: 'alice recording who answered' });
  await waitFor(async () => (await page.locator(`${sel('toast')}[data-kind="info"]`).allTextContents()).some((t) => t.includes('Replied to deploy (alice)')), { message: 'the info toast' });

  // bob's review answered elsewhere while the page still shows it asking:
  // the page's reply is refused, in the workspace's words.
  hold = true;
  const elsewhere = await bob.api(`api/sessions/${review.id}/answer`, { method: 'POST', body: JSON.stringify({ answer: { text: 'from the terminal' }, by: 'someone else' }) });
  assert.equal(elsewhere.status, 204, JSON.stringify(elsewhere.body));
  await waitUntilWaiting(bob, review.id, false);
  const r = row(page, bob, review.id);
  assert.equal(await r.getAttribute('data-needs-input'), 'true', 'the page, held back, still shows it asking');
  await r.locator(sel('hub-reply')).fill('too late');
  await r.locator(sel('hub-send')).click();
  const refusal = page.locator(`${sel('toast')}[data-kind="error"]`);
  await refusal.waitFor();
  assert.match(await refusal.textContent(), /^review \(bob\) was not answered: .*no longer waits/);
  assert.equal(await r.locator(sel('hub-reply')).inputValue(), 'too late', 'a refused reply stays in its box');
  assert.equal(await answerIn(bob, 'review.answer'), 'from the terminal');
  hold = false;

  // Another site's page may not answer through the hub; the hub's own may.
  const req = { workspace: base(bob), sessionId: notes.id, answer: { text: 'x' } };
  const evil = await send('POST', `${hub.url}api/inbox/answer`, 'http://evil.example', req);
  assert.equal(evil.status, 403, `a foreign origin's answer is refused: ${evil.text}`);
  const own = await send('POST', `${hub.url}api/inbox/answer`, new URL(hub.url).origin, { ...req, sessionId: 'no-such-session' });
  assert.equal(own.status, 404, `the hub's own origin passes the check: ${own.text}`);
  const read = await send('GET', `${hub.url}api/inbox`, 'http://evil.example');
  assert.equal(read.status, 403, `a foreign origin may not read the inbox either: ${read.text}`);
  assert.equal((await bob.sessions()).find((x) => x.id === notes.id).status !== 'waiting', true);
});

uiTest('hub on a phone: cards, the filters in a sheet, thumb-sized controls, a reply from a card', {
  server: false,
  contextOptions: PHONE,
  viewport: PHONE.viewport,
  timeout: 120_000,
}, async (fx) => {
  const { page } = fx;
  const { alice, bob, hub } = await setUp(fx);
  const deploy = await alice.createSession({ name: 'deploy', command: asks('Proceed with the migration?', 'deploy.answer') });
  await waitUntilWaiting(alice, deploy.id);
  await alice.createSession({ name: 'build', command: busy });
  const review = await bob.createSession({ name: 'review', command: asks('Ship it?', 'review.answer') });
  await waitUntilWaiting(bob, review.id);
  await openHub(page, hub);
  await waitFor(async () => (await rows(page).count()) === 3 && (await page.title()) === '(2) agentmux hub', { message: 'three sessions, two waiting' });
  await page.locator(sel('hub-workspace-problem')).nth(1).waitFor();

  // No side panel and no table head: cards, across the screen.
  assert.equal(await page.locator('#hub-side').isVisible(), false);
  const width = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(width <= 390, `no sideways scroll: ${width}`);
  for (const box of await rows(page).evaluateAll((els) => els.map((el) => el.getBoundingClientRect().toJSON()))) {
    assert.ok(box.left >= 0 && box.right <= 390 && box.width > 330, `a card across the screen: ${JSON.stringify(box)}`);
  }
  const d = row(page, alice, deploy.id);
  for (const testid of ['hub-reply', 'hub-send', 'hub-open']) {
    const b = await d.locator(sel(testid)).boundingBox();
    assert.ok(b && b.height >= 44 && b.x >= 0 && b.x + b.width <= 390, `${testid} thumb-sized on screen: ${JSON.stringify(b)}`);
  }
  for (const testid of ['hub-filters-open', 'bell', 'you']) {
    const b = await page.locator(sel(testid)).boundingBox();
    assert.ok(b && b.height >= 44 && b.x >= 0 && b.x + b.width <= 390, `${testid} thumb-sized on screen: ${JSON.stringify(b)}`);
  }
  await screenshot(page, 'hub-phone');

  // The filters: a sheet from the top bar's switcher.
  const opener = page.locator(sel('hub-filters-open'));
  assert.equal(await page.locator(sel('hub-filters-current')).textContent(), 'All workspaces');
  assert.equal(await page.locator(sel('hub-filters-waiting')).isVisible(), false, 'nothing waiting is hidden');
  await opener.tap();
  const sheet = page.locator(sel('hub-filters-sheet'));
  await sheet.waitFor({ state: 'visible' });
  assert.equal(await opener.getAttribute('aria-expanded'), 'true');
  const choice = sheet.locator(`${sel('hub-filter-workspace')}[data-workspace="${base(bob)}"]`);
  // The sheet opens before an inbox that lands meanwhile has drawn its choices again.
  await choice.waitFor({ state: 'visible' });
  const cb = await choice.boundingBox();
  assert.ok(cb.height >= 44, `a choice is thumb-sized: ${JSON.stringify(cb)}`);
  await choice.tap();
  await waitFor(async () => (await choice.getAttribute('aria-pressed')) === 'true', { message: 'bob chosen' });
  assert.match(await sheet.locator(sel('hub-filters-done')).textContent(), /^Show 1 session$/);
  await screenshot(page, 'hub-phone-filters');
  await sheet.locator(sel('hub-filters-done')).tap();
  await sheet.waitFor({ state: 'hidden' });
  assert.deepEqual(await listed(page), [['bob', 'review', true]]);
  assert.equal(await page.locator(sel('hub-filters-current')).textContent(), 'bob');
  // alice's deploy waits out of sight: the switcher says so.
  assert.equal(await page.locator(sel('hub-filters-waiting')).textContent(), '1');

  // A reply from a card.
  const r = row(page, bob, review.id);
  await r.locator(sel('hub-reply')).tap();
  await r.locator(sel('hub-reply')).fill('ship');
  await r.locator(sel('hub-send')).tap();
  assert.equal(await answerIn(bob, 'review.answer'), 'ship');
  await waitFor(async () => (await r.getAttribute('data-needs-input')) === 'false', { message: 'review answered' });
  await waitFor(async () => (await page.title()) === '(1) agentmux hub', { message: 'the title counting alice\'s deploy' });
});

// The stand-in for Claude Code (installed as `claude` on alice's PATH, so
// alice gives it the claude profile's hooks): a permission dialog like
// Claude's, told through the PermissionRequest hook, then a question (the
// AskUserQuestion hook). Every chunk it receives goes into received.log in
// its workspace, as JSON, a line each.
const STAND_IN = PERMISSION_DIALOG + `process.stdin.on('data', (buf) => {
  const s = buf.toString('utf8');
  fs.appendFileSync('received.log', JSON.stringify(s) + '\\n');
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

/** The hub's notifications as its page sees them, read once the page has shown or withdrawn what it meant to. */
async function notifications(page) {
  return page.evaluate(async () => {
    const reg = await navigator.serviceWorker.ready;
    await window.__agentmuxHub.notificationsSettled();
    return (await reg.getNotifications()).map((n) => ({
      title: n.title, body: n.body, tag: n.tag, actions: n.actions.map((a) => `${a.action}:${a.title}`), data: n.data,
    }));
  });
}

/** What the stand-in received, chunk by chunk. */
async function received(server) {
  const text = await fs.readFile(path.join(server.workspace, 'received.log'), 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

uiTest('hub notifications: a permission\'s Allow answers through the hub, a question\'s Open opens its workspace\'s page', {
  server: false,
  viewport: DESKTOP,
  timeout: 120_000,
}, async (fx) => {
  const { page, context } = fx;
  const binDir = await tempDir('hub-stand-in');
  await fs.writeFile(path.join(binDir, 'claude'), STAND_IN, { mode: 0o755 });
  const { alice, hub } = await setUp(fx, { aliceEnv: { PATH: `${binDir}:${process.env.PATH}` } });
  await context.grantPermissions(['notifications'], { origin: new URL(hub.url).origin });
  await openHub(page, hub);
  assert.ok(await page.evaluate(async () => !!(await navigator.serviceWorker.ready).active), 'the service worker is active');
  const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent('serviceworker'));
  // The user has gone to another tab: the hub's page tells what begins to wait.
  await page.evaluate(() => Object.defineProperty(document, 'hidden', { configurable: true, get: () => true }));

  const s = await alice.createSession({ name: 'planner', agent: 'claude' });
  assert.equal(s.agent, 'claude');
  const n = await waitFor(async () => (await notifications(page)).find((x) => x.title === 'planner (alice) asks to use Write'), { timeout: 15_000, message: 'the permission\'s notification' });
  assert.equal(n.body, 'docs/plan.md');
  const maxActions = await page.evaluate(() => Notification.maxActions);
  assert.deepEqual(n.actions, ['allow:Allow', 'deny:Deny', 'open:Open'].slice(0, Math.max(2, maxActions)));
  assert.equal(n.data.hub, true);
  assert.equal(n.data.workspace, base(alice));
  assert.equal(n.data.sessionId, s.id);
  assert.deepEqual(n.data.permission, { tool: 'Write', summary: 'docs/plan.md' });
  // The list says the same, with Allow and Deny of its own.
  const r = row(page, alice, s.id);
  await waitFor(async () => (await r.getAttribute('data-wait')) === 'permission', { message: 'the permission in the list' });
  assert.equal(await r.locator(sel('hub-session-waits')).textContent(), 'Claude wants to use Write on docs/plan.md');
  assert.equal(await r.locator(sel('hub-allow')).isVisible(), true);
  assert.equal(await r.locator(sel('hub-deny')).isVisible(), true);
  assert.equal(await page.title(), '(1) agentmux hub');
  await screenshot(page, 'hub-desktop-permission');

  // Allow, as a click on the notification's button: the worker answers
  // through the hub, which has alice type Claude's "1".
  await worker.evaluate(async (tag) => {
    const [note] = await self.registration.getNotifications({ tag });
    await self.agentmuxNotificationClick(note, 'allow');
  }, n.tag);
  await waitFor(async () => (await received(alice)).includes('1'), { message: 'the stand-in receiving "1"' });
  assert.deepEqual(await received(alice), ['1'], 'the keys went once');

  // The question that follows: a notification of its own, with Open only;
  // the permission's went with its answer.
  // Found by its words: between the answer and the question the agent may wait a moment for something else.
  const q = await waitFor(async () => (await notifications(page)).find((x) => x.title === 'planner (alice) needs input' && x.body === 'Which database?'),
    { timeout: 15_000, message: 'the question\'s notification' });
  assert.deepEqual(q.actions, ['open:Open']);
  assert.equal((await notifications(page)).length, 1, `one notification: ${JSON.stringify(await notifications(page))}`);
  const opened = await worker.evaluate(async (tag) => {
    let url = null;
    self.clients.openWindow = async (u) => {
      url = u;
      return null;
    };
    const [note] = await self.registration.getNotifications({ tag });
    await self.agentmuxNotificationClick(note, 'open');
    return url;
  }, q.tag);
  assert.ok(opened.startsWith(base(alice)) && new URL(opened).searchParams.get('session') === s.id, `Open opened ${opened}`);

  // A reply from the list reaches the stand-in: its text, then Enter.
  await waitFor(async () => (await r.getAttribute('data-wait')) === 'question' && (await r.locator(sel('hub-session-waits')).textContent()) === 'Which database?',
    { message: 'the question in the list' });
  await r.locator(sel('hub-reply')).fill('postgres');
  await r.locator(sel('hub-reply')).press('Enter');
  await waitFor(async () => (await received(alice)).join('').endsWith('postgres\r'), { message: 'the reply and its Enter' });
  await waitFor(async () => (await r.getAttribute('data-needs-input')) === 'false', { message: 'the planner no longer waiting' });
  await waitFor(async () => (await notifications(page)).length === 0, { message: 'the question\'s notification withdrawn' });
  assert.equal(await page.title(), 'agentmux hub');

  // A stale notification's Allow (the planner no longer asks): the hub
  // passes on alice's refusal, which a notification of its own says, and
  // nothing is typed.
  const stale = await worker.evaluate(async (d) => {
    await self.registration.showNotification('planner (alice) asks to use Write', { tag: 'stale', body: 'docs/plan.md', data: d });
    const [note] = await self.registration.getNotifications({ tag: 'stale' });
    await self.agentmuxNotificationClick(note, 'allow');
    return (await self.registration.getNotifications()).map((x) => ({ title: x.title, body: x.body, data: x.data }));
  }, { ...n.data });
  assert.equal(stale.length, 1, JSON.stringify(stale));
  assert.equal(stale[0].title, 'planner (alice): not answered');
  assert.match(stale[0].body, /no longer waits/);
  assert.equal(stale[0].data.openUrl, n.data.openUrl, 'its click opens the session');
  assert.equal((await received(alice)).filter((x) => x === '1').length, 1, 'no second "1"');
});

uiTest('hub: a lost connection is said, the list stays, and the page catches up once the hub is back', {
  server: false,
  viewport: DESKTOP,
  timeout: 90_000,
  allowConsole: SERVER_DOWN_CONSOLE,
}, async (fx) => {
  const { page } = fx;
  const dave = await fx.startServer({ flags: ['--name', 'dave', ...QUIET] });
  const first = await dave.createSession({ name: 'first', command: busy });
  const hub = await fx.startHub({ peers: [{ url: base(dave) }] });
  await openHub(page, hub);
  await row(page, dave, first.id).waitFor();
  const banner = page.locator(sel('banner-connection'));
  assert.equal(await banner.isVisible(), false, 'no banner while connected');

  await hub.stop();
  await waitFor(async () => (await banner.getAttribute('data-state')) === 'reconnecting' && banner.isVisible(), { message: 'the connection banner' });
  assert.match(await banner.textContent(), /Connection lost\. Reconnecting/);
  assert.equal(await row(page, dave, first.id).isVisible(), true, 'the list stays');
  await screenshot(page, 'hub-connection-lost');

  // Meanwhile a session of dave's starts to wait.
  const late = await dave.createSession({ name: 'late', command: asks('Still there?', 'late.answer') });
  await waitUntilWaiting(dave, late.id);
  await hub.restart();
  await banner.waitFor({ state: 'hidden', timeout: 20_000 });
  await waitFor(async () => (await row(page, dave, late.id).getAttribute('data-needs-input').catch(() => null)) === 'true', { timeout: 15_000, message: 'the wait that began meanwhile' });
  await waitFor(async () => (await page.title()) === '(1) agentmux hub', { message: 'the title counting it' });
});
