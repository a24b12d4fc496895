// Issue 5, test 1: create a session through the UI and use its terminal.
import assert from 'node:assert/strict';
import { uiTest, sel, createSession, tabById, waitFor, waitForPrompt, waitForLine, typeCommand, terminalHasFocus } from './harness.mjs';

uiTest('create a session through the UI and run a command in it', async ({ page, server, screenshot }) => {
  assert.equal(await page.title(), 'agentmux', 'title with no session needing input');
  assert.equal(await page.locator('#app').getAttribute('data-layout'), 'terminal', '#app[data-layout] at start');

  const id = await createSession(page, 'first');

  const tab = tabById(page, id);
  await tab.waitFor({ state: 'visible' });
  assert.equal((await tab.locator(sel('tab-name')).innerText()).trim(), 'first');
  await waitFor(async () => (await tab.getAttribute('data-status')) === 'active', { message: 'tab data-status=active' });
  assert.match(await tab.locator(sel('tab-status')).innerText(), /active/i, 'tab-status text');
  assert.equal(await tab.getAttribute('aria-selected'), 'true', 'the new tab is selected');
  assert.equal(await page.evaluate(() => window.__agentmux.activeSessionId()), id, '__agentmux.activeSessionId()');
  assert.equal(await tab.locator(sel('tab-dot')).count(), 0, 'no tab-dot: the session does not need input');

  // The server agrees: one session, named "first", active.
  const list = await server.sessions();
  assert.deepEqual(list.map((s) => [s.id, s.name, s.status]), [[id, 'first', 'active']]);

  await waitForPrompt(page, id);
  await typeCommand(page, 'echo hello-$((6*7))');
  assert.ok(await terminalHasFocus(page), 'typing target: focus is inside [data-testid=terminal]');
  await waitForLine(page, id, 'hello-42');
  await screenshot('session');
});
