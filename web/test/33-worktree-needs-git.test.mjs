// Issue 27, part 11: in a workspace that is not a git repository the
// new-session dialog offers no worktree branch, and says why, instead of
// letting git's error come back; once it is one, the field is offered.
import assert from 'node:assert/strict';
import { uiTest, sel, waitFor, initGitRepo, createSession } from './harness.mjs';

uiTest('the worktree field is offered only in a git repository', async ({ page, server, screenshot }) => {
  const dialog = page.locator(sel('new-session-dialog'));
  const field = dialog.locator(sel('worktree-field'));
  const why = dialog.locator(sel('worktree-unavailable'));

  await page.locator(sel('new-session')).click();
  await dialog.waitFor({ state: 'visible' });
  await waitFor(async () => !(await field.isVisible()) && (await why.isVisible()), {
    message: 'the worktree field hidden and the reason shown, in a plain directory',
  });
  assert.match(await why.textContent(), /Worktrees need a git repository; this workspace is not one/);
  await screenshot('worktree-needs-git');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });
  // Sessions are still made, without a worktree.
  await createSession(page, 'plain');

  // Made a repository: after a reload the field is there.
  await initGitRepo(server.workspace);
  await page.reload();
  await page.waitForFunction(() => window.__agentmux && window.__agentmux.terminals);
  await page.locator(sel('new-session')).click();
  await dialog.waitFor({ state: 'visible' });
  await waitFor(async () => (await field.isVisible()) && !(await why.isVisible()), {
    message: 'the worktree field offered once the workspace is a git repository',
  });
  assert.ok(await dialog.locator('input[name=branch]').isVisible(), 'the branch input is visible');
});
