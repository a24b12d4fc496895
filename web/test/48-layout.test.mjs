// Issue 40, points 2, 5 and two of 12: what a first-time user could not
// reach or read. On a phone (320 and 390 px, touch) every action of the
// Changes view is on screen, or in a container a finger can scroll, and
// takes a tap; the view buttons close the prompt queue's sheet; the
// session switcher shows a worktree's whole branch. At 1280 px four
// sessions with branches and changes keep eight characters of each name
// readable, a click in a tab's middle selects it (only the counts' own
// control opens the Changes view, from the mouse or the keyboard).
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { uiTest, sel, tabById, tempDir, waitFor, git, initGitRepo , readableTabNames } from './harness.mjs';

const layout = (page) => page.locator('#app').getAttribute('data-layout');
const phone = (width, height) => ({ viewport: { width, height }, contextOptions: { deviceScaleFactor: 2, isMobile: true, hasTouch: true } });

/** A repository on main with a git identity of its own, whose origin is GitHub's (pushes go to a bare repository beside it). */
async function shipWorkspace(dir) {
  await initGitRepo(dir);
  await git(dir, 'config', 'user.name', 'Layout Tester');
  await git(dir, 'config', 'user.email', 'layout@example.test');
  const bare = path.join(await tempDir('remote'), 'widgets.git');
  await git(path.dirname(bare), 'init', '-q', '--bare', bare);
  await git(dir, 'remote', 'add', 'origin', 'git@github.com:acme/widgets.git');
  await git(dir, 'config', 'remote.origin.pushurl', bare);
}

const BRANCH = 'feature/login-form-validation';

/**
 * A worktree session whose branch is merged and pushed, with work in
 * progress on top: the ship bar shows all it can (the branch, the pull
 * request, Checkpoints, Commit, Merge, Push, Archive).
 */
async function mergedSession(server) {
  const s = await server.createSession({ name: 'feature-login-form', worktree: { branch: BRANCH } });
  const wt = s.worktree.path;
  await fs.writeFile(path.join(wt, 'login.js'), 'export const login = () => true;\n');
  await git(wt, 'add', 'login.js');
  await git(wt, 'commit', '-q', '-m', 'the login form');
  let r = await server.api(`api/sessions/${s.id}/merge`, { method: 'POST', body: JSON.stringify({ mode: 'merge' }) });
  assert.equal(r.status, 200, `merge: ${r.status} ${JSON.stringify(r.body)}`);
  r = await server.api(`api/sessions/${s.id}/push`, { method: 'POST', body: '{}' });
  assert.equal(r.status, 200, `push: ${r.status} ${JSON.stringify(r.body)}`);
  await fs.writeFile(path.join(wt, 'validate.js'), 'export const validate = (form) => form.email.includes("@");\n');
  return s;
}

/**
 * Every visible control of the Changes view's header and ship bar: whether
 * it lies inside the viewport once its scroll containers (those a person
 * can scroll: overflow auto or scroll) are scrolled to it, and is what a
 * tap at its centre hits. Scrolling an overflow-hidden box, which a
 * finger cannot, does not count.
 */
function reachable(page) {
  return page.evaluate(() => {
    const pane = document.querySelector('[data-testid=changes]');
    const controls = [...pane.querySelectorAll('.pane-header button, .pane-header a[href], [data-testid=ship] button, [data-testid=ship] a[href]')]
      .filter((el) => el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden');
    const out = [];
    for (const el of controls) {
      const ancestors = [];
      for (let a = el.parentElement; a; a = a.parentElement) ancestors.push(a);
      ancestors.push(document.scrollingElement);
      const before = ancestors.map((a) => [a.scrollLeft, a.scrollTop]);
      el.scrollIntoView({ block: 'nearest', inline: 'nearest' });
      const unreachable = [];
      ancestors.forEach((a, i) => {
        const [x, y] = before[i];
        const st = getComputedStyle(a);
        const movedX = a.scrollLeft !== x;
        const movedY = a.scrollTop !== y;
        // The page itself must not scroll sideways on a phone; a box
        // scrolls for a finger only with overflow auto or scroll.
        const page = a === document.scrollingElement;
        if (movedX && (page || !/auto|scroll/.test(st.overflowX))) unreachable.push(`${a.className || a.tagName} scrolled ${x}->${a.scrollLeft}`);
        if (movedY && !page && !/auto|scroll/.test(st.overflowY)) unreachable.push(`${a.className || a.tagName} scrolled down ${y}->${a.scrollTop}`);
        a.scrollLeft = x;
        a.scrollTop = y;
      });
      // Scrolled to as a finger would (the reachable containers only), then measured.
      ancestors.forEach((a) => {
        const st = getComputedStyle(a);
        if (a !== document.scrollingElement && /auto|scroll/.test(st.overflowX + st.overflowY)) {
          const r = el.getBoundingClientRect();
          const b = a.getBoundingClientRect();
          if (r.left < b.left) a.scrollLeft -= b.left - r.left;
          else if (r.right > b.right) a.scrollLeft += r.right - b.right;
        }
      });
      const r = el.getBoundingClientRect();
      const inside = r.width > 0 && r.left >= -0.5 && r.right <= innerWidth + 0.5 && r.top >= -0.5 && r.bottom <= innerHeight + 0.5;
      const at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
      out.push({
        id: el.dataset.testid || el.id || el.textContent.trim(),
        box: [Math.round(r.left), Math.round(r.top), Math.round(r.width), Math.round(r.height)],
        inside,
        hit: !!at && (at === el || el.contains(at)),
        unreachable,
      });
    }
    return { vw: innerWidth, pageWidth: document.documentElement.scrollWidth, controls: out };
  });
}

for (const [width, height] of [[320, 640], [390, 844]]) {
  uiTest(`phone ${width} px: every action of the Changes view is reachable and takes a tap`, {
    setupWorkspace: shipWorkspace,
    timeout: 120_000,
    ...phone(width, height),
  }, async ({ page, server, screenshot }) => {
    const s = await mergedSession(server);
    await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, s.id), { message: 'the session on screen' });
    await page.locator(sel('layout-changes')).tap();
    await waitFor(async () => (await page.locator(sel('changes')).getAttribute('data-state')) === 'ready', { message: 'the Changes view ready' });
    const bar = page.locator(sel('ship'));
    await waitFor(async () => (await bar.locator(sel('ship-branch')).getAttribute('data-state')) === 'merged', { message: 'the branch merged' });
    await bar.locator(sel('ship-archive')).waitFor({ state: 'visible' });
    await bar.locator(sel('ship-pr')).waitFor({ state: 'visible' });
    await screenshot(`layout-changes-${width}`);

    const m = await reachable(page);
    const say = JSON.stringify(m);
    assert.ok(m.pageWidth <= m.vw, `the page does not scroll sideways: ${say}`);
    const ids = m.controls.map((c) => c.id);
    for (const want of ['ship-checkpoints', 'ship-commit', 'ship-merge', 'ship-push', 'ship-archive', 'ship-pr', 'changes-view-unified', 'changes-view-split', 'changes-reload', 'changes-close']) {
      assert.ok(ids.includes(want), `${want} is shown: ${say}`);
    }
    for (const c of m.controls) {
      assert.deepEqual(c.unreachable, [], `${c.id} needs no scrolling a finger cannot do: ${say}`);
      assert.ok(c.inside && c.hit, `${c.id} lies on screen and takes a tap there: ${JSON.stringify(c)} in ${say}`);
    }

    // Each action answers a tap: its dialog, the checkpoints, the archive question.
    for (const [button, dialog, cancel] of [['ship-commit', 'commit-dialog', 'commit-cancel'], ['ship-merge', 'merge-dialog', 'merge-cancel'], ['ship-push', 'push-dialog', 'push-cancel']]) {
      await page.locator(sel(button)).tap();
      await page.locator(sel(dialog)).waitFor({ state: 'visible' });
      await page.locator(sel(cancel)).tap();
      await page.locator(sel(dialog)).waitFor({ state: 'hidden' });
    }
    await page.locator(sel('ship-checkpoints')).tap();
    await page.locator(sel('checkpoints')).waitFor({ state: 'visible' });
    await page.locator(sel('ship-checkpoints')).tap();
    await page.locator(sel('checkpoints')).waitFor({ state: 'hidden' });
    await page.locator(sel('ship-archive')).tap();
    const confirm = page.locator(sel('ship-confirm'));
    await confirm.waitFor({ state: 'visible' });
    await screenshot(`layout-changes-${width}-archive`);
    // The question's answers are reachable too.
    const asked = await reachable(page);
    for (const want of ['ship-confirm-no', 'ship-confirm-yes']) {
      const c = asked.controls.find((x) => x.id === want);
      assert.ok(c && c.inside && c.hit && c.unreachable.length === 0, `${want} on screen: ${JSON.stringify(asked)}`);
    }
    await page.locator(sel('ship-confirm-no')).tap();
    await confirm.waitFor({ state: 'hidden' });
    await page.locator(sel('ship-archive')).waitFor({ state: 'visible' });
  });
}

uiTest('phone: a view button closes the queue sheet; the switcher shows the whole branch', {
  setupWorkspace: initGitRepo,
  timeout: 90_000,
  ...phone(390, 844),
}, async ({ page, server, screenshot }) => {
  const s = await server.createSession({ name: 'feature-login-form', worktree: { branch: 'feature/login-form' } });
  await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, s.id), { message: 'the session on screen' });

  // The queue's sheet covers the screen under the top bar; a view button shows that view instead.
  for (const view of ['changes', 'terminal']) {
    // The queue opens from the terminal's header.
    if ((await layout(page)) !== 'terminal') await page.locator(sel('changes-close')).tap();
    await page.locator(sel('queue-toggle')).tap();
    const queue = page.locator(sel('queue'));
    await queue.waitFor({ state: 'visible' });
    await page.locator(sel(`layout-${view}`)).tap();
    await waitFor(async () => (await layout(page)) === view, { message: `layout ${view}` });
    await queue.waitFor({ state: 'hidden', timeout: 3_000 }).catch(() => {});
    if (view === 'changes') await screenshot('layout-queue-then-changes');
    assert.equal(await queue.isVisible(), false, `the queue's sheet closes for the ${view} view`);
    assert.equal(await page.locator(sel('queue-toggle')).getAttribute('aria-expanded'), 'false');
    // What shows is the view: a tap in the middle of the screen lands in it.
    const pane = view === 'changes' ? sel('changes') : sel('terminal');
    const onTop = await page.evaluate((p) => {
      const el = document.elementFromPoint(innerWidth / 2, innerHeight / 2);
      return !!el && !!el.closest(p);
    }, pane);
    assert.ok(onTop, `the ${view} view is on top`);
  }

  // The switcher's sheet is the whole width: the branch shows whole.
  await page.getByRole('button', { name: 'Sessions', exact: true }).tap();
  const sheet = page.locator(sel('switcher-sheet'));
  await sheet.waitFor({ state: 'visible' });
  await screenshot('layout-switcher-branch');
  const shown = await sheet.locator(`${sel('switcher-item')}[data-session-id="${s.id}"]`).evaluate((item) => {
    const b = item.querySelector('.switcher-branch');
    const n = item.querySelector('[data-testid=switcher-name]');
    return { branch: b.textContent, branchWhole: b.scrollWidth <= b.clientWidth, branchWidth: b.clientWidth, nameWhole: n.scrollWidth <= n.clientWidth };
  });
  assert.equal(shown.branch, 'feature/login-form');
  assert.ok(shown.branchWhole && shown.nameWhole, `the name and the branch whole: ${JSON.stringify(shown)}`);
});

const NAMES = ['feature-login-form', 'fix-payment-webhook', 'refactor-user-service', 'docs-api-reference'];


uiTest('1280 px: four worktree sessions keep their names readable; a tab selects, its counts open the changes', {
  setupWorkspace: initGitRepo,
  timeout: 120_000,
}, async ({ page, server, screenshot }) => {
  const ids = [];
  for (const [i, name] of NAMES.entries()) {
    const s = await server.createSession({ name, worktree: { branch: `${name.split('-')[0]}/${name}` } });
    // Lines of work in each: every tab shows its "+N −M".
    await fs.writeFile(path.join(s.worktree.path, 'work.txt'), 'line\n'.repeat(10 + i * 37));
    ids.push(s.id);
  }
  await waitFor(async () => (await page.locator(`${sel('tab-diff')}:visible`).count()) === 4, { message: 'the counts on four tabs' });
  await tabById(page, ids[0]).click();
  const names = await waitFor(async () => {
    const n = await readableTabNames(page);
    return n.length === 4 && n.every((t) => t.shown >= 8) && n;
  }, { timeout: 5_000, message: `eight characters of each name readable: ${JSON.stringify(await readableTabNames(page))}` }).finally(() => screenshot('layout-tabs-1280'));
  assert.equal(names.length, 4);

  // A click in the middle of a tab selects its session, whatever lies there.
  for (const id of [ids[2], ids[1], ids[3]]) {
    const box = await tabById(page, id).boundingBox();
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, id), { message: `session ${id} selected by a click in its tab's middle` });
    assert.equal(await layout(page), 'terminal', 'a click in a tab\'s middle does not open the Changes view');
  }

  // The status shows as a word or a dot; either way a person can read it.
  const status = tabById(page, ids[3]).locator(sel('tab-status'));
  const said = `${await status.getAttribute('title')} ${await status.getAttribute('aria-label')} ${await status.textContent()}`;
  assert.match(said, /Status: (active|idle|waiting)/, `the status in words: ${said}`);

  // The counts are a control of their own, with a label: a click opens that session's changes.
  const counts = tabById(page, ids[0]).locator(sel('tab-diff'));
  assert.equal(await counts.evaluate((el) => el.tagName), 'BUTTON', 'the counts are a button');
  assert.match(await counts.getAttribute('aria-label'), /changes/i, 'named for what it does');
  await counts.click();
  await waitFor(async () => (await layout(page)) === 'changes', { message: 'the Changes view from the counts' });
  assert.equal(await page.evaluate(() => window.__agentmux.activeSessionId()), ids[0], 'of that session');
  await screenshot('layout-tabs-counts');

  // From the keyboard: the selected tab's counts are in the tab order; Enter opens the changes.
  await page.keyboard.press('Alt+1');
  await waitFor(async () => (await layout(page)) === 'terminal', { message: 'back to the terminal' });
  const tab = tabById(page, ids[0]);
  await tab.focus();
  await page.keyboard.press('Tab');
  assert.equal(await page.evaluate(() => document.activeElement?.closest('[data-testid=tab]')?.dataset.sessionId + ' ' + document.activeElement?.dataset.testid), `${ids[0]} tab-diff`, 'Tab from the selected tab reaches its counts');
  await page.keyboard.press('Enter');
  await waitFor(async () => (await layout(page)) === 'changes', { message: 'the Changes view from the keyboard' });
});
