// Issue 40, point 3: keys typed into the page reach the terminal on screen
// when no other field has the focus. After a reload the focus used to sit
// on the page's body, and Alt+1 back from the Changes view left it there:
// what the user typed was lost.
import assert from 'node:assert/strict';
import {
  uiTest, sel, tabById, waitFor, waitForPrompt, waitForLine, reloadApp, terminalHasFocus, initGitRepo,
} from './harness.mjs';

uiTest('keys typed right after a reload, after Alt+1 from Changes and after a dialog closes reach the terminal', { setupWorkspace: initGitRepo }, async ({ page, server, screenshot }) => {
  const s = await server.createSession({ name: 'keys' });
  await tabById(page, s.id).click();
  await waitForPrompt(page, s.id);

  /** Types a command with no click first, as a person who just looked up would. */
  const typed = async (word, where) => {
    await waitFor(() => terminalHasFocus(page), { message: `the terminal has the focus ${where} (it is on ${await page.evaluate(() => document.activeElement?.tagName)})` });
    await page.keyboard.type(`echo ${word}-$((6*7))`);
    await page.keyboard.press('Enter');
    await waitForLine(page, s.id, `${word}-42`, { message: `the keys typed ${where} reached the shell` });
  };

  await reloadApp(page);
  await waitForPrompt(page, s.id);
  await typed('reloaded', 'after a reload');

  await page.keyboard.press('Alt+4');
  await waitFor(async () => (await page.locator(sel('changes')).isVisible()), { message: 'the Changes view' });
  await page.locator(sel('changes-view-unified')).focus(); // a control of the view, hidden by Alt+1
  await page.keyboard.press('Alt+1');
  await typed('back', 'after Alt+1 from Changes');

  await page.locator(sel('new-session')).click();
  const dialog = page.locator(sel('new-session-dialog'));
  await dialog.waitFor({ state: 'visible' });
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  await typed('closed', 'after the new-session dialog closed');
  await screenshot('focus-keys');
  assert.ok(await terminalHasFocus(page), 'the terminal keeps the focus');
});

// Keys typed while the page is still loading, before the terminal has
// replayed its screen and taken the focus, are not lost: they reach it
// once it has, in order, and a Backspace among them takes back a key.
uiTest('keys typed while the page loads reach the terminal once it takes the focus', async ({ page, server }) => {
  const s = await server.createSession({ name: 'early' });
  await tabById(page, s.id).click();
  await waitForPrompt(page, s.id);
  // A slow network: the reloaded page's WebSocket reaches the server a
  // second late, so the keys below are typed before the terminal can
  // have caught up, as on a remote machine.
  await page.routeWebSocket(/\/ws(\?|$)/, async (ws) => {
    await new Promise((resolve) => setTimeout(resolve, 1000));
    ws.connectToServer();
  });
  await page.reload({ waitUntil: 'domcontentloaded' });
  const early = await page.evaluate(() => document.activeElement === document.body && !document.querySelector('.xterm-helper-textarea:focus'));
  assert.ok(early, 'the keys go out before the terminal has the focus');
  await page.keyboard.type('echo early-$((6*7))x');
  await page.keyboard.press('Backspace');
  await page.keyboard.press('Enter');
  await waitForLine(page, s.id, 'early-42', { message: 'the keys typed while the page loaded reached the shell' });
  assert.ok(await terminalHasFocus(page), 'and the terminal has the focus');
});
