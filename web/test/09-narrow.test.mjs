// Issue 5, test 9: a narrow window still shows the sessions (through the
// switcher, issue 31) and the terminal, and does not scroll sideways.
import assert from 'node:assert/strict';
import { uiTest, sel, createSession, waitForPrompt, waitForLine, typeCommand, terminalPane } from './harness.mjs';

uiTest('narrow window (500x800): the session switcher and terminal, no horizontal overflow', { viewport: { width: 500, height: 800 } }, async ({ page, screenshot }) => {
  const id = await createSession(page, 'narrow');
  await waitForPrompt(page, id);
  await typeCommand(page, 'echo narrow-$((2+3))');
  await waitForLine(page, id, 'narrow-5');

  // At 800 px and below the session switcher takes the tab strip's place (issue 31): it names the session.
  const switcher = page.getByRole('button', { name: 'Sessions', exact: true });
  assert.ok(await switcher.isVisible(), 'the session switcher is visible');
  assert.equal(await page.locator(sel('switcher-current')).textContent(), 'narrow', 'it names the session');
  assert.ok(await terminalPane(page).isVisible(), 'the terminal is visible');
  assert.ok(await page.locator(sel('new-session')).isVisible(), 'the new-session button is visible');

  await screenshot('narrow');

  const m = await page.evaluate(() => ({
    doc: document.documentElement.scrollWidth,
    body: document.body.scrollWidth,
    inner: window.innerWidth,
  }));
  assert.ok(m.doc <= 500, `document.documentElement.scrollWidth ${m.doc} <= 500`);
  assert.ok(m.body <= 500, `document.body.scrollWidth ${m.body} <= 500`);

  // The switcher, the "+" and the terminal lie within the window.
  for (const [what, loc] of [['switcher', switcher], ['new-session', page.locator(sel('new-session'))], ['terminal', terminalPane(page)]]) {
    const box = await loc.boundingBox();
    assert.ok(box, `${what} has a box`);
    assert.ok(box.x >= 0 && box.x + box.width <= 500 + 0.5, `${what} within the 500px window: x=${box.x} w=${box.width}`);
    assert.ok(box.width > 0 && box.height > 0, `${what} has a size`);
  }
  const term = await page.evaluate((id) => window.__agentmux.terminals.get(id).cols, id);
  assert.ok(term >= 20, `the terminal has a usable width: ${term} cols`);

  // The side panel becomes a drawer: it opens over the terminal, fits the
  // window, and closing it leaves no sideways scroll behind.
  const drawer = page.locator('#sidebar');
  assert.ok(!(await drawer.isVisible()), 'the drawer starts closed');
  await page.click('#sidebar-toggle');
  await drawer.waitFor({ state: 'visible', timeout: 5000 });
  await page.locator(sel('workflow')).waitFor({ state: 'visible', timeout: 5000 });
  await page.waitForFunction(() => {
    const r = document.getElementById('sidebar').getBoundingClientRect();
    return r.right <= window.innerWidth + 0.5 && r.left >= 0;
  }, null, { timeout: 5000 });
  await page.click('#sidebar-toggle');
  await drawer.waitFor({ state: 'hidden', timeout: 5000 });
  const after = await page.evaluate(() => document.documentElement.scrollWidth);
  assert.ok(after <= 500, `after closing the drawer, scrollWidth ${after} <= 500`);
});
