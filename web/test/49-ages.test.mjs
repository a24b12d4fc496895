// Issue 40, point 12: "8s ago" labels never updated. Every relative time
// on screen moves on without a reload: a queued prompt's, a checkpoint's,
// the activity feed's, and, in the tooltip of someone's avatar, when they
// typed (it stayed "typed last, just now" for good); each keeps the
// moment itself in its tooltip. The page's clock is Playwright's, so a
// minute passes at once.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  uiTest, sel, browser, openApp, tabById, waitFor, waitForLine, terminalPane, asParticipant, git, initGitRepo,
} from './harness.mjs';

async function setupWorkspace(dir) {
  await initGitRepo(dir);
  await git(dir, 'config', 'user.name', 'Age Tester');
  await git(dir, 'config', 'user.email', 'ages@example.test');
}

const text = async (loc) => ((await loc.textContent()) ?? '').trim();

uiTest('ages: "just now" becomes "1m ago" without a reload, everywhere, the moment kept in the tooltip', {
  server: false, timeout: 90_000,
}, async ({ page, startServer, open, errors, onCleanup, screenshot }) => {
  const server = await startServer({ setupWorkspace });
  // The page's clock runs as a real one until the test moves it on.
  await page.clock.install();
  await open(server);
  // cat never waits: a queued prompt stays in the queue.
  const s = await server.createSession({ name: 'ages', command: ['cat'] });
  await tabById(page, s.id).click();

  // Someone else, in a context (and with a clock) of their own, types.
  const b = await browser();
  const other = await b.newContext({ viewport: { width: 1280, height: 800 } });
  onCleanup(() => other.close());
  const pageB = await other.newPage();
  pageB.on('pageerror', (err) => errors.push({ kind: 'pageerror', text: `[B] ${err}` }));
  await openApp(pageB, server.url);
  await tabById(pageB, s.id).click();
  await terminalPane(pageB).click();
  await pageB.keyboard.type('hello');
  await pageB.keyboard.press('Enter');
  await waitForLine(page, s.id, 'hello');
  const avatarB = page.locator(`${sel('session-people')} ${sel('avatar')}:not([data-me])`);
  await waitFor(async () => /typed last, just now$/.test((await avatarB.getAttribute('title')) ?? ''), {
    timeout: 15_000, message: `B's avatar says B typed last, just now, once B stopped typing (now "${await avatarB.getAttribute('title').catch(() => null)}")`,
  });

  // A prompt in the queue, a file changed, a checkpoint.
  await asParticipant(page, { id: s.id, texts: ['for later'] });
  await page.locator(sel('queue-toggle')).click();
  const queued = page.locator(sel('queue-time')).first();
  await waitFor(async () => (await text(queued)) === 'just now', { message: 'the queued prompt, just now' });
  await fs.writeFile(path.join(server.workspace, 'notes.txt'), 'a note\n');
  const activity = page.locator(`${sel('activity-item')}[data-path="notes.txt"][data-event="add"] time`);
  await waitFor(async () => (await activity.count()) === 1 && (await text(activity)) === 'now', { message: 'the activity feed says now' });
  await page.locator(sel('layout-changes')).click();
  await page.locator(sel('ship-checkpoints')).click();
  await page.locator(sel('checkpoint-now')).click();
  const cpAge = page.locator(`${sel('checkpoint')}[data-id="1"] .checkpoint-age`);
  await waitFor(async () => (await cpAge.count()) === 1 && (await text(cpAge)) === 'just now', { message: 'checkpoint 1, just now' });
  await screenshot('ages-just-now');

  // A minute later, with no reload and nothing new from the server.
  await page.clock.fastForward('01:05');
  const said = async () => ({
    checkpoint: await text(cpAge),
    activity: await text(activity),
    queued: await text(queued),
    typed: ((await avatarB.getAttribute('title')) ?? '').replace(/^.* · /, ''),
  });
  const want = { checkpoint: '1m ago', activity: '1m', queued: '1m ago', typed: 'typed last, 1m ago' };
  await waitFor(async () => JSON.stringify(await said()) === JSON.stringify(want), {
    message: `every label a minute older: ${JSON.stringify(want)} (now ${JSON.stringify(await said())})`,
  });
  await screenshot('ages-a-minute-later');

  // The moment itself stays in the tooltips.
  const moment = /\d{1,2}:\d{2}:\d{2}/;
  assert.match((await queued.getAttribute('title')) ?? '', /^Queued .*\d{1,2}:\d{2}:\d{2}/, 'the queued prompt\'s tooltip');
  assert.match((await cpAge.getAttribute('title')) ?? '', moment, 'the checkpoint age\'s tooltip');
  assert.match((await activity.getAttribute('title')) ?? '', moment, 'the activity item\'s tooltip');
});
