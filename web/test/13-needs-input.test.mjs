// Agent awareness: a session whose agent rings the bell waits for its user.
// Its tab in the background gets the dot and data-status waiting, the page
// title counts it, one browser notification says so, and typing an answer
// clears all of it (the server then reports the session active again).
import assert from 'node:assert/strict';
import { uiTest, recordNotifications, sel, createSession, tabById, waitFor, waitForLine, waitForPrompt, typeCommand } from './harness.mjs';

const ASKER = ['sh', '-c', 'sleep 0.3; printf "\\a"; read x; echo got $x; sleep 30'];

uiTest('a bell makes a background session wait; answering it clears the dot and the title', async ({ page, server, frames, screenshot }) => {
  await recordNotifications(page);
  const front = await createSession(page, 'front');
  await waitForPrompt(page, front);

  const asker = await server.createSession({ name: 'asker', command: ASKER });
  assert.equal(asker.running, true, `a new session runs: ${JSON.stringify(asker)}`);
  const tab = tabById(page, asker.id);
  await tab.waitFor({ state: 'visible' });
  assert.equal(await tabById(page, front).getAttribute('aria-selected'), 'true', '"front" stays in front');

  await waitFor(async () => (await tab.getAttribute('data-status')) === 'waiting', { message: 'the background tab data-status waiting' });
  await waitFor(async () => (await tab.locator(sel('tab-dot')).count()) === 1, { message: 'the background tab has its tab-dot' });
  await waitFor(async () => (await page.title()).startsWith('(1) '), { message: 'document.title starting "(1) "' });
  assert.equal(await page.title(), '(1) agentmux');
  assert.equal(await tabById(page, front).locator(sel('tab-dot')).count(), 0, 'no dot on "front"');
  await waitFor(() => frames.some((f) => f.type === 'session.needsInput' && f.sessionId === asker.id), {
    message: 'a session.needsInput for the asker',
  });
  await waitFor(() => page.evaluate(() => window.__notifications.length > 0), { message: 'a browser notification' });
  const notes = await page.evaluate(() => window.__notifications);
  assert.equal(notes.length, 1, `one notification for one waiting period: ${JSON.stringify(notes)}`);
  assert.equal(notes[0].title, 'asker needs input');
  assert.match(notes[0].body, /bell/, 'the notification says why');
  await screenshot('needs-input');

  await tab.click();
  await waitFor(async () => (await page.evaluate(() => window.__agentmux.activeSessionId())) === asker.id, {
    message: 'the asker on screen after a click',
  });
  await typeCommand(page, 'yes');

  await waitForLine(page, asker.id, 'got yes');
  await waitFor(async () => (await tab.getAttribute('data-status')) === 'active', { message: 'data-status active after the answer' });
  await waitFor(async () => (await tab.locator(sel('tab-dot')).count()) === 0, { message: 'tab-dot gone after the answer' });
  await waitFor(async () => (await page.title()) === 'agentmux', { message: 'document.title back to "agentmux"' });

  // The server said so once for this waiting period, and then that the user answered.
  const mine = frames.filter((f) => f.sessionId === asker.id);
  assert.equal(mine.filter((f) => f.type === 'session.needsInput').length, 1, `one session.needsInput:\n${JSON.stringify(mine)}`);
  const waiting = mine.findIndex((f) => f.type === 'session.status' && f.status === 'waiting');
  const active = mine.findLastIndex((f) => f.type === 'session.status' && f.status === 'active');
  assert.ok(waiting >= 0 && active > waiting, `session.status waiting, then active:\n${JSON.stringify(mine)}`);
  assert.equal(mine[waiting].running, true, 'a waiting session runs');
});
