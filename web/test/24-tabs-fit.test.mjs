// Issue 14: with four sessions at 1280 px every tab's status and close
// button show. Tabs shrink (their names ellipsized) down to a minimum
// width; past that the strip scrolls sideways and keeps the active tab in
// view.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { uiTest, sel, createSession, tabById, waitFor, waitForPrompt, initGitRepo } from './harness.mjs';

const LONG_NAMES = [
  'refactor-the-authentication-middleware',
  'migrate-the-billing-service-to-postgres',
  'write-the-end-to-end-tests-for-checkout',
  'document-the-public-http-api-endpoints',
];

/**
 * Where each tab's parts are, against the strip's visible box: whether its
 * status badge and close button lie inside it, are not faded out at the
 * strip's edges, and are what a click at their centre hits.
 */
function measure(page) {
  return page.evaluate(() => {
    const strip = document.querySelector('[data-testid=tabs]');
    const s = strip.getBoundingClientRect();
    const inside = (r) => r.width > 0 && r.left >= s.left - 0.5 && r.right <= s.right + 0.5 && r.top >= s.top - 0.5 && r.bottom <= s.bottom + 0.5;
    // The strip fades 28 px at an edge with more tabs past it.
    const fadeL = strip.classList.contains('more-left') ? 28 : 0;
    const fadeR = strip.classList.contains('more-right') ? 28 : 0;
    const clear = (r) => r.left >= s.left + fadeL - 0.5 && r.right <= s.right - fadeR + 0.5;
    const hit = (el) => {
      const r = el.getBoundingClientRect();
      const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      return !!at && (at === el || el.contains(at));
    };
    return {
      scrollable: strip.scrollWidth > strip.clientWidth + 1,
      strip: { left: s.left, right: s.right },
      tabs: [...strip.querySelectorAll('[data-testid=tab]')].map((t) => {
        const r = t.getBoundingClientRect();
        const name = t.querySelector('[data-testid=tab-name]');
        const status = t.querySelector('[data-testid=tab-status]');
        const close = t.querySelector('[data-testid=tab-close]');
        const sr = status.getBoundingClientRect();
        const cr = close.getBoundingClientRect();
        return {
          id: t.dataset.sessionId,
          selected: t.getAttribute('aria-selected') === 'true',
          left: r.left,
          right: r.right,
          width: r.width,
          nameEllipsized: name.scrollWidth > name.clientWidth,
          nameWidth: name.getBoundingClientRect().width,
          statusInside: inside(sr) && clear(sr) && hit(status),
          closeInside: inside(cr) && clear(cr) && hit(close),
        };
      }),
    };
  });
}

const describe = (m) => JSON.stringify(m.tabs.map((t) => ({ ...t, left: Math.round(t.left), right: Math.round(t.right), width: Math.round(t.width) })));

uiTest('four sessions with long names fit the tab strip at 1280 px', { setupWorkspace: initGitRepo, timeout: 90_000 }, async ({ page, server, screenshot }) => {
  const ids = [];
  for (const name of LONG_NAMES.slice(0, 3)) {
    const id = await createSession(page, name);
    await waitForPrompt(page, id);
    ids.push(id);
  }
  // The fourth in a worktree with a long branch: its tab carries the branch too.
  const wt = await createSession(page, LONG_NAMES[3], { branch: 'feature/document-the-public-http-api' });
  await waitForPrompt(page, wt);
  ids.push(wt);
  // A change in the worktree: its tab shows "+N −M" as well. (Issue 27: a
  // change in the workspace shows in the status bar, on no tab.)
  const wtPath = (await server.sessions()).find((s) => s.id === wt).worktree.path;
  await fs.writeFile(path.join(wtPath, 'notes.txt'), 'one\ntwo\n');
  await tabById(page, wt).locator(sel('tab-diff')).waitFor({ state: 'visible' });
  await tabById(page, wt).locator(sel('tab-branch')).waitFor({ state: 'visible' });

  // Tabs shrink: all four fit, no scrolling, names cut with an ellipsis.
  await waitFor(async () => {
    const m = await measure(page);
    return m.tabs.length === 4 && m.tabs.every((t) => t.statusInside && t.closeInside);
  }, { message: `every tab's status and close button inside the strip: ${describe(await measure(page))}` });
  const m = await measure(page);
  await screenshot('tabs-fit-four');
  assert.equal(m.scrollable, false, `four tabs fit without scrolling: ${describe(m)}`);
  assert.deepEqual(m.tabs.map((t) => t.id), ids, 'the tabs in creation order');
  assert.ok(m.tabs.every((t) => t.nameEllipsized), `each long name is ellipsized: ${describe(m)}`);
  assert.ok(m.tabs.every((t) => t.nameWidth >= 30), `each name keeps some of its text: ${describe(m)}`);
  assert.ok(m.tabs.find((t) => t.id === wt).selected, 'the newest tab is selected');
  // Every close button works where it is: a click asks to close that session.
  const last = tabById(page, wt);
  await last.locator(sel('tab-close')).click();
  const confirm = page.locator(sel('confirm-close'));
  await confirm.waitFor({ state: 'visible' });
  await confirm.locator(sel('confirm-no')).click();
  await confirm.waitFor({ state: 'hidden' });
});

uiTest('past the minimum width the strip scrolls and keeps the active tab in view', {
  setupWorkspace: initGitRepo,
  flags: ['--max-sessions', '8'],
  viewport: { width: 1280, height: 800 },
  timeout: 120_000,
}, async ({ page, server, screenshot }) => {
  const ids = [];
  for (let i = 0; i < 8; i++) {
    const { id } = await server.createSession({ name: `${LONG_NAMES[i % 4]}-${i + 1}` });
    ids.push(id);
  }
  await waitFor(async () => (await page.locator(sel('tab')).count()) === 8, { message: 'eight tabs' });
  await tabById(page, ids[0]).click();

  /** Waits until the tab is the selected one with its status and close button in view. */
  const inView = async (id, what) => {
    await waitFor(async () => {
      const t = (await measure(page)).tabs.find((x) => x.id === id);
      return t?.selected && t.statusInside && t.closeInside;
    }, { message: `${what}: tab ${ids.indexOf(id) + 1} selected and in view: ${describe(await measure(page))}` });
    const m = await measure(page);
    assert.equal(m.scrollable, true, 'eight tabs with long names overflow the strip');
    // Shrunk to the minimum, not below: every tab keeps the start of its name, its status and close button.
    for (const t of m.tabs) assert.ok(t.width >= 120 && t.nameWidth >= 30, `tab ${t.id} at least 120 px wide, its name 30: ${describe(m)}`);
  };
  await inView(ids[0], 'a click');
  await tabById(page, ids[0]).focus();

  // From the keyboard (the strip focused): End, Home, then along with the
  // arrows; the strip scrolls to the selected tab each time.
  await page.keyboard.press('End');
  await inView(ids[7], 'End');
  await screenshot('tabs-fit-scroll');
  await page.keyboard.press('Home');
  await inView(ids[0], 'Home');
  for (let i = 1; i < 8; i++) {
    await page.keyboard.press('ArrowRight');
    await inView(ids[i], 'ArrowRight');
  }
});
