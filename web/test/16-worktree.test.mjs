// Worktrees: a session created with a branch runs in its own git worktree
// under .worktrees/, its tab shows the branch; a bad branch name is
// refused in the dialog; closing with "remove worktree" refuses a dirty
// tree (the session stays) until forced, and keeps the branch.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import {
  uiTest, sel, createSession, tabById, waitFor, waitForLine, waitForPrompt, typeCommand, git, initGitRepo,
} from './harness.mjs';

// The refused create (400) and the refused removal (409) are provoked on purpose.
const REFUSALS = [
  /Failed to load resource: the server responded with a status of 400 \(Bad Request\)/,
  /Failed to load resource: the server responded with a status of 409 \(Conflict\)/,
];

uiTest('worktree sessions: branch on the tab, refused names, dirty removal, forced removal', { setupWorkspace: initGitRepo, allowConsole: REFUSALS }, async ({ page, server, screenshot }) => {
  const id = await createSession(page, 'wt', { branch: 'feat-x' });
  const tab = tabById(page, id);
  const session = (await server.sessions()).find((s) => s.id === id);
  assert.equal(session?.worktree?.branch, 'feat-x', `the session's worktree: ${JSON.stringify(session)}`);
  const wtPath = session.worktree.path;
  assert.equal(path.dirname(wtPath), path.join(server.workspace, '.worktrees'), `worktree path ${wtPath} under <workspace>/.worktrees`);

  await waitFor(async () => (await tab.locator(sel('tab-branch')).textContent())?.trim() === 'feat-x', { message: 'tab-branch "feat-x"' });
  assert.ok(await tab.locator(sel('tab-branch')).isVisible(), 'tab-branch visible');
  assert.ok(((await tab.getAttribute('title')) ?? '').includes(wtPath), 'the tab\'s tooltip names the worktree path');

  await waitForPrompt(page, id);
  await typeCommand(page, 'pwd');
  await waitForLine(page, id, wtPath);
  await screenshot('worktree');

  // A branch name git refuses: the dialog stays, with the server's message.
  await page.locator(sel('new-session')).click();
  const dialog = page.locator(sel('new-session-dialog'));
  await dialog.waitFor({ state: 'visible' });
  await dialog.locator('input[name=name]').fill('bad');
  await dialog.locator('input[name=branch]').fill('bad..name');
  const [refused] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/api/sessions') && r.request().method() === 'POST'),
    dialog.locator(sel('create-session')).click(),
  ]);
  const refusal = await refused.json();
  assert.equal(refused.status(), 400, `POST with branch "bad..name": ${JSON.stringify(refusal)}`);
  assert.equal(refusal.error?.code, 'WORKTREE_ERROR');
  const formError = dialog.locator(sel('new-session-error'));
  await formError.waitFor({ state: 'visible' });
  assert.equal((await formError.textContent()).trim(), refusal.error.message, 'the dialog shows the server\'s message');
  assert.equal(await page.locator(sel('tab')).count(), 1, 'no tab for the refused session');
  await page.keyboard.press('Escape');
  await dialog.waitFor({ state: 'hidden' });

  // Uncommitted work in the worktree.
  await typeCommand(page, 'echo x > dirty.txt');
  await waitFor(() => existsSync(path.join(wtPath, 'dirty.txt')), { message: 'dirty.txt in the worktree' });

  await tab.locator(sel('tab-close')).click();
  const confirm = page.locator(sel('confirm-close'));
  await confirm.waitFor({ state: 'visible' });
  const box = confirm.locator(sel('remove-worktree'));
  assert.ok(await box.isVisible(), 'remove-worktree offered for a worktree session');
  assert.equal(await box.isChecked(), false, 'remove-worktree unchecked at first');
  assert.match(await confirm.innerText(), /\.worktrees\//, 'the checkbox names the worktree directory');
  await box.check();
  const [dirty] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'DELETE'),
    confirm.locator(sel('confirm-yes')).click(),
  ]);
  assert.match(dirty.url(), /\?removeWorktree=true$/, 'DELETE asks to remove the worktree');
  const dirtyBody = await dirty.json();
  assert.equal(dirty.status(), 409, `DELETE a dirty worktree: ${JSON.stringify(dirtyBody)}`);
  assert.equal(dirtyBody.error?.code, 'WORKTREE_DIRTY');
  const confirmError = confirm.locator(sel('confirm-close-error'));
  await confirmError.waitFor({ state: 'visible' });
  assert.match(await confirmError.innerText(), /dirty\.txt/, 'the dialog lists the uncommitted file');
  const force = confirm.locator(sel('remove-worktree-force'));
  await force.waitFor({ state: 'visible' });
  assert.ok(await confirm.isVisible(), 'the dialog stays open');
  assert.equal(await tab.count(), 1, 'the tab stays');
  assert.ok((await server.sessions()).some((s) => s.id === id), 'the session stays');
  assert.ok(existsSync(wtPath), 'the worktree stays');
  await screenshot('worktree-dirty');
  // Forcing takes the place of closing while the box is checked.
  const yes = confirm.locator(sel('confirm-yes'));
  assert.equal(await yes.isVisible(), false, 'confirm-yes hidden while forcing is offered');
  await box.uncheck();
  await yes.waitFor({ state: 'visible' });
  assert.equal(await force.isVisible(), false, 'no forcing with the box unchecked');
  await box.check();
  await force.waitFor({ state: 'visible' });

  const [forced] = await Promise.all([
    page.waitForResponse((r) => r.request().method() === 'DELETE'),
    force.click(),
  ]);
  assert.match(forced.url(), /\?removeWorktree=true&force=true$/, 'the forced DELETE');
  assert.equal(forced.status(), 204, 'the forced DELETE succeeds');
  await tab.waitFor({ state: 'detached' });
  await confirm.waitFor({ state: 'hidden' });
  await waitFor(async () => !(await server.sessions()).some((s) => s.id === id), { message: 'the session gone from GET /api/sessions' });
  await waitFor(() => !existsSync(wtPath), { message: `the worktree ${wtPath} removed` });
  const branches = await git(server.workspace, 'branch', '--list', 'feat-x');
  assert.match(branches, /\bfeat-x\b/, 'the branch is kept');
});
