// Issue 27, part 9: each tab's "+N −M" is its own session's. Sessions that
// share the workspace all report the workspace's changes, so no tab of
// theirs shows them: the status bar does, once. A worktree session's tab
// shows its worktree's. On a narrow tab, too, the counts are a control of
// their own (issue 40): a click there opens the changes, a click on the
// name selects the session, nothing more.
import assert from 'node:assert/strict';
import path from 'node:path';
import { uiTest, sel, createSession, waitFor, waitForPrompt, tabById, initGitRepo } from './harness.mjs';

const text = async (loc) => (await loc.textContent()).replace(/\s+/g, ' ').trim();
const layoutOf = (page) => page.locator('#app').getAttribute('data-layout');

uiTest('a tab shows only its own session\'s changes; the workspace\'s show once', { setupWorkspace: initGitRepo, timeout: 90_000 }, async ({ page, server, frames, screenshot }) => {
  const one = await createSession(page, 'one');
  const two = await createSession(page, 'two');
  await waitForPrompt(page, two);
  const wt = await createSession(page, 'wt', { branch: 'own-changes' });
  await waitForPrompt(page, wt);
  const wtSession = (await server.sessions()).find((s) => s.id === wt);
  const wtRel = path.relative(server.workspace, wtSession.worktree.path);

  // A file changed in the workspace: both shared sessions hear of it...
  await server.writeFile('shared.txt', 'a\nb\nc\n');
  await waitFor(
    () => [one, two].every((id) => frames.some((f) => f.type === 'session.diff' && f.sessionId === id && f.additions === 3)),
    { message: 'a session.diff of +3 for each workspace session' },
  );
  // ...and neither tab claims it; the status bar shows it, once.
  const workspace = page.locator(sel('workspace-diff'));
  await waitFor(async () => (await workspace.isVisible()) && (await text(workspace)) === 'workspace +3 \u22120', {
    message: `the status bar's "workspace +3 \u22120" (now "${await workspace.textContent().catch(() => '')}")`,
  });
  assert.equal(await workspace.getAttribute('data-additions'), '3');
  for (const [name, id] of [['one', one], ['two', two]]) {
    assert.equal(await tabById(page, id).locator(sel('tab-diff')).isVisible(), false, `no workspace counts on the tab of "${name}", which changed nothing of its own`);
  }
  assert.equal(await tabById(page, wt).locator(sel('tab-diff')).isVisible(), false, 'a clean worktree shows no counts');

  // The worktree's own change shows on its tab, and only there.
  await server.writeFile(path.join(wtRel, 'mine.txt'), 'x\ny\n');
  const wtDiff = tabById(page, wt).locator(sel('tab-diff'));
  await waitFor(async () => (await wtDiff.isVisible()) && (await text(wtDiff)) === '+2 \u22120', { message: 'the worktree tab\'s "+2 \u22120"' });
  assert.equal(await text(workspace), 'workspace +3 \u22120', 'the workspace\'s count is unchanged');
  await screenshot('tab-stats');

  // The status bar's count opens the workspace's changes.
  await workspace.click();
  await waitFor(async () => (await layoutOf(page)) === 'changes', { message: 'the Changes view' });
  const changes = page.locator(sel('changes'));
  await waitFor(async () => [one, two].includes(await changes.getAttribute('data-session-id')), { message: 'the Changes view on a workspace session' });
  await waitFor(async () => (await text(page.locator(sel('changes-summary')))) === '1 file +3 \u22120', { message: 'the workspace\'s one file' });

  // Narrow tabs: a click on the name selects the tab, nothing more; the counts open its changes.
  await page.keyboard.press('Alt+1');
  await waitFor(async () => (await layoutOf(page)) === 'terminal', { message: 'the terminal layout' });
  await tabById(page, one).click();
  // Narrow, but above the 800 px where the session switcher replaces the tabs.
  await page.setViewportSize({ width: 880, height: 800 });
  const wtTab = tabById(page, wt);
  await wtTab.scrollIntoViewIfNeeded();
  const tabBox = await wtTab.boundingBox();
  assert.ok(tabBox.width <= 200, `the tab is narrow: ${tabBox.width}px`);
  await waitFor(async () => (await wtDiff.isVisible()), { message: 'the counts on the narrow tab' });
  const name = await wtTab.locator(sel('tab-name')).boundingBox();
  await page.mouse.click(name.x + name.width / 2, name.y + name.height / 2);
  await waitFor(async () => (await wtTab.getAttribute('aria-selected')) === 'true', { message: 'the tab selected by a click on its name' });
  assert.equal(await layoutOf(page), 'terminal', 'a click on a narrow tab\'s name does not open the Changes view');
  await screenshot('tab-stats-narrow');
  const box = await wtDiff.boundingBox();
  await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
  await waitFor(async () => (await layoutOf(page)) === 'changes', { message: 'the Changes view from the narrow tab\'s counts' });
});
