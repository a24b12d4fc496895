// Issue 40, point 9: a reload forgets nothing of where the user was. The
// view (here Changes) comes back for the same session, the queue panel
// stays open, the activity feed shows the lines it had (the server keeps
// the recent file events and sends them to a new connection), and the
// terminal keeps its text size when the queue opens or closes afterwards
// (the page that held the session's size before the reload holds it
// again, so its terminal fits its pane rather than scaling the font).
import assert from 'node:assert/strict';
import {
  uiTest, sel, createSession, selectSession, waitFor, waitForPrompt, typeCommand, reloadApp, initGitRepo,
} from './harness.mjs';

const layout = (page) => page.locator('#app').getAttribute('data-layout');

async function waitLayout(page, want) {
  await waitFor(async () => (await layout(page)) === want, { message: `#app[data-layout=${want}] (now ${await layout(page)})` });
}

/** The feed's file lines, newest first, as "event:path". */
const feedLines = (page) =>
  page.locator(`${sel('activity-item')}:not([data-event=port])`).evaluateAll((els) => els.map((e) => `${e.dataset.event}:${e.dataset.path}`));

/**
 * The feed as it stands once every event is in: it names path and has not
 * moved for longer than the watcher's 500 ms window, at whose end a write
 * may follow its add with a trailing change (which a reload replays too).
 */
async function settledFeed(page, path) {
  let feed = null;
  await waitFor(async () => {
    const now = await feedLines(page);
    const same = feed && JSON.stringify(feed) === JSON.stringify(now);
    feed = now;
    return same && now.some((l) => l.endsWith(`:${path}`));
  }, { interval: 700, message: `the feed settled with ${path}` });
  return feed;
}

/**
 * Whether two drawings have the same text size: the same font, and cells
 * as wide (xterm.js rounds a cell to device pixels over the whole row, so
 * its width in CSS pixels moves by a few thousandths with the columns).
 */
const sameText = (a, b) => a.fontSize === b.fontSize && Math.abs(a.cellWidth - b.cellWidth) < 0.05;

/** The active terminal's font size, cell width and columns, as drawn. */
const drawn = (page) =>
  page.evaluate(() => {
    const id = window.__agentmux.activeSessionId();
    const term = window.__agentmux.terminals.get(id);
    const cell = term._core._renderService.dimensions.css.cell;
    return { fontSize: term.options.fontSize, cellWidth: cell.width, cols: term.cols };
  });

const queueOpen = async (page) => (await page.locator(sel('queue-toggle')).getAttribute('aria-expanded')) === 'true';

/** Opens or closes the queue with its toggle, and waits until the terminal has been fitted to the pane it leaves. */
async function toggleQueue(page, open) {
  const before = await page.locator(`${sel('terminal')} .term-host:not([hidden])`).evaluate((el) => el.clientWidth);
  await page.locator(sel('queue-toggle')).click();
  await waitFor(async () => (await queueOpen(page)) === open, { message: `the queue ${open ? 'open' : 'closed'}` });
  // The pane's width changes; the terminal refits after its debounce.
  await waitFor(
    async () => (await page.locator(`${sel('terminal')} .term-host:not([hidden])`).evaluate((el) => el.clientWidth)) !== before,
    { message: 'the terminal pane resized' },
  );
}

/** Waits until the drawing settles (the refit is debounced), and returns it. */
async function settled(page) {
  let last = null;
  return waitFor(async () => {
    const now = await drawn(page);
    const same = last && JSON.stringify(last) === JSON.stringify(now);
    last = now;
    return same ? now : null;
  }, { interval: 250, message: 'the terminal drawn the same twice in a row' });
}

uiTest('a reload brings back the Changes view, the open queue, the feed, and the terminal keeps its text size', {
  setupWorkspace: initGitRepo,
  viewport: { width: 1440, height: 900 },
  timeout: 120_000,
}, async ({ page, server, screenshot }) => {
  // Two sessions, the second on screen: the one restored is not simply the first.
  const other = await createSession(page, 'other');
  await waitForPrompt(page, other);
  const id = await createSession(page, 'agent');
  await waitForPrompt(page, id);
  await selectSession(page, id);

  // The user types in the terminal (this page holds the session's size)
  // and the agent changes the workspace: Changes has something to show,
  // the feed has lines.
  await typeCommand(page, "printf 'alpha\\n' > notes.txt; printf 'more\\n' >> README.md");
  await server.writeFile('src/first.txt', 'one\n');
  await server.writeFile('src/second.txt', 'two\n');
  await server.writeFile('src/third.txt', 'three\n');
  await page.locator(`${sel('activity-item')}[data-path="src/third.txt"]`).first().waitFor({ state: 'visible' });
  const base = await settled(page);
  assert.equal(base.fontSize, 13, 'drawn at the normal font before the reload');

  // The queue opens (the terminal refits, same font), then Changes.
  await toggleQueue(page, true);
  const narrow = await settled(page);
  assert.equal(narrow.fontSize, 13, 'the holder keeps its font when the queue opens');
  await page.keyboard.press('Alt+4');
  await waitLayout(page, 'changes');
  const changes = page.locator(sel('changes'));
  await waitFor(async () => (await changes.getAttribute('data-state')) === 'ready', { message: 'the Changes view lists the changes' });
  const files = await page.locator(sel('changes-file')).evaluateAll((els) => els.map((e) => e.dataset.path));
  assert.ok(files.includes('notes.txt'), `Changes lists notes.txt: ${JSON.stringify(files)}`);
  const feed = await settledFeed(page, 'src/third.txt');
  assert.ok(feed.length >= 4, `the feed has lines: ${JSON.stringify(feed)}`);

  await reloadApp(page);
  await waitLayout(page, 'changes');
  assert.equal(await page.locator(sel('layout-changes')).getAttribute('aria-pressed'), 'true', 'the Changes button is pressed');
  await waitFor(async () => (await changes.getAttribute('data-session-id')) === id && (await changes.getAttribute('data-state')) === 'ready', {
    message: `Changes shows session ${id}, ready (now ${await changes.getAttribute('data-session-id')}, ${await changes.getAttribute('data-state')})`,
  });
  assert.equal(await page.evaluate(() => window.__agentmux.activeSessionId()), id, 'the same session on screen');
  assert.ok(await queueOpen(page), 'the queue panel is still open');
  // Same lines, same order (newest first), told by the server.
  await waitFor(async () => JSON.stringify(await feedLines(page)) === JSON.stringify(feed), {
    message: `the feed's lines after the reload ${JSON.stringify(feed)}`,
  }).catch(async (err) => {
    err.message += `\nnow: ${JSON.stringify(await feedLines(page))}`;
    throw err;
  });
  await screenshot('49-reload-changes-1440');

  // Back to the terminal: same font as before; the queue closing and
  // opening again refits it without scaling its text.
  await page.keyboard.press('Alt+1');
  await waitLayout(page, 'terminal');
  await page.locator(sel('queue')).waitFor({ state: 'visible' });
  const back = await settled(page);
  assert.equal(back.fontSize, 13, 'the normal font after the reload');
  await toggleQueue(page, false);
  const wide = await settled(page);
  assert.ok(wide.fontSize === 13 && sameText(wide, back), `closing the queue keeps the text size (${JSON.stringify(back)} → ${JSON.stringify(wide)})`);
  assert.ok(wide.cols > back.cols, `the terminal widens with its pane (${back.cols} → ${wide.cols} columns)`);
  await toggleQueue(page, true);
  const again = await settled(page);
  assert.ok(again.fontSize === 13 && sameText(again, back), `opening the queue keeps the text size (${JSON.stringify(back)} → ${JSON.stringify(again)})`);
  assert.equal(again.cols, back.cols, 'and gives back the columns');
  await screenshot('49-reload-terminal-queue-1440');

  // The issue's own order: the queue closed before a reload in Changes,
  // opened after it. (Typing first: whatever page held the size, this
  // one now does, and the session is as wide as its pane.)
  await typeCommand(page, 'true');
  await toggleQueue(page, false);
  await settled(page);
  await page.keyboard.press('Alt+4');
  await waitLayout(page, 'changes');
  await reloadApp(page);
  await waitLayout(page, 'changes');
  assert.equal(await queueOpen(page), false, 'the queue stays closed');
  await page.keyboard.press('Alt+1');
  await waitLayout(page, 'terminal');
  const before = await settled(page);
  await toggleQueue(page, true);
  const after = await settled(page);
  assert.ok(before.fontSize === 13 && sameText(after, before),
    `opening the queue after a reload keeps the text size (${JSON.stringify(before)} → ${JSON.stringify(after)})`);
  assert.ok(after.cols < before.cols, `the terminal narrows with its pane instead (${before.cols} → ${after.cols} columns)`);
});

uiTest('on a phone, a reload brings back the view and the feed', {
  setupWorkspace: initGitRepo,
  viewport: { width: 390, height: 844 },
  contextOptions: { isMobile: true, hasTouch: true, deviceScaleFactor: 2 },
}, async ({ page, server, screenshot }) => {
  const s = await server.createSession({ name: 'agent', command: ['sh', '-c', "printf 'x\\n' > made.txt; exec sleep 60"] });
  await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, s.id), { message: 'the session on screen' });
  await server.writeFile('docs/plan.md', '# Plan\n');
  await page.locator(sel('layout-changes')).click();
  await waitLayout(page, 'changes');
  const feed = await settledFeed(page, 'docs/plan.md');
  await reloadApp(page);
  await waitLayout(page, 'changes');
  await waitFor(async () => (await page.locator(sel('changes')).getAttribute('data-state')) === 'ready', { message: 'the Changes view lists the changes' });
  await waitFor(async () => JSON.stringify(await feedLines(page)) === JSON.stringify(feed), { message: `the feed's lines after the reload ${JSON.stringify(feed)}` });
  await screenshot('49-reload-changes-390');
  // The side panel's sheet shows the feed.
  await page.locator('#sidebar-toggle').click();
  await page.locator(`${sel('activity-item')}[data-path="docs/plan.md"]`).first().waitFor({ state: 'visible' });
  await screenshot('49-reload-feed-390');
});

// The page did not make the session: it watched it, then typed into it,
// which gave it the size. A reload keeps that too.
uiTest('a page that took the size by typing keeps its text size after a reload', {
  viewport: { width: 1440, height: 900 },
}, async ({ page, server }) => {
  const s = await server.createSession({ name: 'api-made' });
  await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, s.id), { message: 'the session on screen' });
  await waitForPrompt(page, s.id);
  if (await queueOpen(page)) await toggleQueue(page, false);
  await typeCommand(page, 'echo typed-here');
  await waitFor(async () => (await drawn(page)).cols > 120, { message: 'the session fits the page once it typed' });
  await reloadApp(page);
  await waitForPrompt(page, s.id);
  const before = await settled(page);
  await toggleQueue(page, true);
  const after = await settled(page);
  assert.ok(before.fontSize === 13 && sameText(after, before),
    `opening the queue after a reload keeps the text size (${JSON.stringify(before)} → ${JSON.stringify(after)})`);
  assert.ok(after.cols < before.cols, `the terminal narrows with its pane instead (${before.cols} → ${after.cols} columns)`);
});
