// Issue 5, test 2: two sessions in two tabs, each with its own buffer;
// closing a tab asks first and deletes the session.
import assert from 'node:assert/strict';
import { uiTest, sel, createSession, tabById, waitFor, waitForPrompt, waitForLine, typeCommand, terminalLines } from './harness.mjs';

const selected = async (page, id) =>
  (await tabById(page, id).getAttribute('aria-selected')) === 'true' &&
  (await page.evaluate(() => window.__agentmux.activeSessionId())) === id;

uiTest('two tabs keep their own buffers; closing one confirms and deletes it', async ({ page, server }) => {
  const first = await createSession(page, 'first');
  await waitForPrompt(page, first);
  const second = await createSession(page, 'second');
  assert.notEqual(first, second);
  await waitFor(() => selected(page, second), { message: 'the new tab "second" selected' });
  assert.equal(await tabById(page, first).getAttribute('aria-selected'), 'false', 'tab "first" no longer selected');
  await waitForPrompt(page, second);

  await typeCommand(page, 'echo only-in-$((1+1))-second');
  await waitForLine(page, second, 'only-in-2-second');

  await tabById(page, first).click();
  await waitFor(() => selected(page, first), { message: 'tab "first" selected after a click' });
  await typeCommand(page, 'echo only-in-$((0+1))-first');
  await waitForLine(page, first, 'only-in-1-first');

  await tabById(page, second).click();
  await waitFor(() => selected(page, second), { message: 'tab "second" selected again' });

  // Each buffer holds only its own output (the output lines, not the echoed commands).
  const out = (lines) => lines.filter((l) => /^only-in-\d-(first|second)$/.test(l.trim())).map((l) => l.trim());
  assert.deepEqual(out(await terminalLines(page, first)), ['only-in-1-first'], 'output in the "first" buffer');
  assert.deepEqual(out(await terminalLines(page, second)), ['only-in-2-second'], 'output in the "second" buffer');
  const firstText = (await terminalLines(page, first)).join('\n');
  const secondText = (await terminalLines(page, second)).join('\n');
  assert.ok(!firstText.includes('second'), `"first" buffer mentions "second":\n${firstText}`);
  assert.ok(!secondText.includes('first'), `"second" buffer mentions "first":\n${secondText}`);

  // Close "second": a confirmation first; "no" keeps it.
  const secondTab = tabById(page, second);
  await secondTab.locator(sel('tab-close')).click();
  const confirm = page.locator(sel('confirm-close'));
  await confirm.waitFor({ state: 'visible' });
  await confirm.locator(sel('confirm-no')).click();
  await confirm.waitFor({ state: 'hidden' });
  assert.equal(await secondTab.count(), 1, 'confirm-no keeps the tab');
  assert.ok((await server.sessions()).some((s) => s.id === second), 'confirm-no keeps the session');

  await secondTab.locator(sel('tab-close')).click();
  await confirm.waitFor({ state: 'visible' });
  await confirm.locator(sel('confirm-yes')).click();
  await secondTab.waitFor({ state: 'detached' });
  await confirm.waitFor({ state: 'hidden' });
  await waitFor(async () => !(await server.sessions()).some((s) => s.id === second), {
    message: 'GET /api/sessions without the closed session',
  });
  assert.deepEqual((await server.sessions()).map((s) => s.id), [first], 'only "first" is left');
  assert.equal(await page.locator(sel('tab')).count(), 1, 'one tab left');
  await waitFor(() => selected(page, first), { message: 'the remaining tab "first" selected' });
});
