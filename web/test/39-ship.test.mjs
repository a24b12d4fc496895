// Issue 30: from the agent's first diff to merged, without leaving the
// Changes view. A worktree session's agent writes a file; the person
// commits it with the suggested message, edited, and the bar says the
// branch is 1 ahead; a refusing pre-commit hook and a clean tree are said
// plainly. The merge is refused while the workspace has uncommitted
// changes, then goes in (the file is in the workspace, the branch shows
// merged); a push to a remote whose url is GitHub's gives the pull
// request's page; the archive asks, then removes the worktree and keeps
// the branch. In a second session main and the branch change the same
// line: the merge lists the file, and "Ask the agent to resolve" queues a
// prompt, under the person's name, that the waiting agent reads; once it
// has resolved the file, the commit suggested concludes the merge.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  uiTest, sel, tabById, tempDir, waitFor, waitForLine, terminalLines, showLines, git, initGitRepo,
} from './harness.mjs';

// Waits for input (a bell), and after each line it reads echoes it and
// waits again: a queued prompt goes in as soon as it is queued.
const AGENT = ['sh', '-c', 'printf "ready\\a"; while IFS= read -r l; do echo "got:$l"; printf "\\a"; done'];

// Each refusal is provoked on purpose: a clean tree, a refusing hook, a
// dirty workspace, a conflict, an unknown remote.
const REFUSALS = [
  /Failed to load resource: the server responded with a status of 409 \(Conflict\)/,
  /Failed to load resource: the server responded with a status of 500 \(Internal Server Error\)/,
  /Failed to load resource: the server responded with a status of 404 \(Not Found\)/,
];

const SHARED = 'one\ntwo\nthree\n';

/** A repository on main whose git identity is its own (the server's HOME has none), with a file both sides will change. */
async function setupWorkspace(dir) {
  await initGitRepo(dir);
  await git(dir, 'config', 'user.name', 'Ship Tester');
  await git(dir, 'config', 'user.email', 'ship@example.test');
  await fs.writeFile(path.join(dir, 'shared.txt'), SHARED);
  await git(dir, 'add', 'shared.txt');
  await git(dir, 'commit', '-q', '-m', 'shared');
}

const layout = (page) => page.locator('#app').getAttribute('data-layout');
const text = async (loc) => ((await loc.textContent()) ?? '').replace(/\s+/g, ' ').trim();

async function showChanges(page, want = 'ready') {
  await page.locator(sel('layout-changes')).click();
  await waitFor(async () => (await layout(page)) === 'changes', { message: '#app[data-layout=changes]' });
  const changes = page.locator(sel('changes'));
  await waitFor(async () => (await changes.getAttribute('data-state')) === want, {
    message: `the Changes view ${want} (now ${await changes.getAttribute('data-state')})`,
  });
}

/** Waits for the bar's "branch → base · N ahead · M behind". */
async function waitBranch(page, want, message) {
  const el = page.locator(sel('ship-branch'));
  await waitFor(async () => (await text(el)) === want, { timeout: 15_000, message: `${message}: "${want}" (now "${await text(el)}")` });
}

/** Opens the commit dialog and waits for the suggested message; returns it. */
async function openCommit(page) {
  await page.locator(sel('ship-commit')).click();
  const dialog = page.locator(sel('commit-dialog'));
  await dialog.waitFor({ state: 'visible' });
  const box = dialog.locator(sel('commit-message'));
  await waitFor(async () => !(await box.isDisabled()), { message: 'the suggested message in the box' });
  return box.inputValue();
}

/** Opens the Merge dialog, chooses a mode and merges. */
async function merge(page, mode = 'merge') {
  const dialog = page.locator(sel('merge-dialog'));
  if (!(await dialog.isVisible())) {
    await page.locator(sel('ship-merge')).click();
    await dialog.waitFor({ state: 'visible' });
  }
  await dialog.locator(sel(`merge-mode-${mode}`)).check();
  await dialog.locator(sel('merge-submit')).click();
  // Whichever way it went: refused, conflicting, or done.
  await dialog.locator(`:is(${sel('merge-error')}, ${sel('merge-conflict')}, ${sel('merge-done')}) >> visible=true`).first().waitFor({ timeout: 15_000 });
  return dialog;
}

uiTest('ship: commit with the suggested message, merge, push with its pull request, archive', { setupWorkspace, allowConsole: REFUSALS, timeout: 150_000 }, async ({ page, server, screenshot }) => {
  const ws = server.workspace;
  // Pushes go to a bare repository; the pull request page comes from the url, GitHub's.
  const bare = path.join(await tempDir('remote'), 'widgets.git');
  await git(path.dirname(bare), 'init', '-q', '--bare', bare);
  await git(ws, 'remote', 'add', 'origin', 'git@github.com:acme/widgets.git');
  await git(ws, 'config', 'remote.origin.pushurl', bare);

  const s = await server.createSession({ name: 'feature', worktree: { branch: 'feat-ship' }, command: AGENT });
  const wt = s.worktree.path;
  await tabById(page, s.id).click();
  await waitForLine(page, s.id, 'ready');
  // The agent's work.
  await fs.writeFile(path.join(wt, 'feature.txt'), 'the feature\nin two lines\n');
  await showChanges(page);
  const bar = page.locator(sel('ship'));
  await bar.waitFor({ state: 'visible' });
  await waitBranch(page, '\u2387 feat-ship \u2192 main \u00b7 0 ahead \u00b7 0 behind', 'where the branch stands, from GET /branch');
  await screenshot('ship-bar');

  // Commit: the suggestion is the server's, edited before it goes.
  const suggested = await openCommit(page);
  const { body: proposal } = await server.api(`api/sessions/${s.id}/commit`);
  assert.equal(suggested, proposal.message, 'the box holds the server\'s suggestion');
  assert.match(suggested, /feature\.txt/, 'which names the file');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'commit-message', 'the box has the focus');
  await screenshot('ship-commit-dialog');
  const lines = suggested.split('\n');
  const edited = ['Add the feature file, as reviewed', ...lines.slice(1)].join('\n');
  const box = page.locator(sel('commit-message'));
  await box.fill(edited);
  await box.press('Control+Enter');
  await page.locator(sel('commit-dialog')).waitFor({ state: 'hidden' });
  await page.locator(`${sel('toast')}[data-kind="info"]`, { hasText: /^Committed [0-9a-f]{7} on feat-ship\./ }).waitFor({ state: 'visible' });
  assert.equal((await git(wt, 'log', '-1', '--format=%B')).trim(), edited.trim(), 'the commit has the edited message');
  await waitBranch(page, '\u2387 feat-ship \u2192 main \u00b7 1 ahead \u00b7 0 behind', 'one commit ahead, live');
  assert.equal(await page.locator(sel('ship-branch')).getAttribute('data-ahead'), '1');
  await waitFor(async () => (await page.locator(sel('changes')).getAttribute('data-state')) === 'clean' || (await page.locator(sel('changes-file')).count()) > 0, { message: 'the diff fetched again' });

  // A clean tree: nothing suggested, and the commit says why it is refused.
  const none = await openCommit(page);
  assert.equal(none, '', 'nothing to suggest for a clean tree');
  const commitError = page.locator(sel('commit-error'));
  assert.match(await text(commitError), /Nothing to commit/);
  await box.fill('An empty commit');
  await page.locator(sel('commit-submit')).click();
  await waitFor(async () => /^Nothing to commit: the tree has no changes since its last commit\./.test(await text(commitError)), { message: 'NOTHING_TO_COMMIT said' });
  await page.locator(sel('commit-cancel')).click();

  // A pre-commit hook that refuses: its words are shown, nothing is committed.
  const hook = path.join(ws, '.git', 'hooks', 'pre-commit');
  await fs.writeFile(hook, '#!/bin/sh\necho "pre-commit: TODO markers are not allowed (feature.txt)" >&2\nexit 1\n', { mode: 0o755 });
  await fs.writeFile(path.join(wt, 'feature.txt'), 'the feature\nin two lines\nTODO: a third\n');
  const head = (await git(wt, 'rev-parse', 'HEAD')).trim();
  await openCommit(page);
  await page.locator(sel('commit-submit')).click();
  await waitFor(async () => /TODO markers are not allowed/.test(await text(commitError)), { timeout: 15_000, message: 'the hook\'s words in the dialog' });
  assert.match(await text(commitError), /^Git refused the commit; nothing was committed\./);
  assert.equal((await git(wt, 'rev-parse', 'HEAD')).trim(), head, 'no commit was made');
  await screenshot('ship-commit-hook');
  await fs.rm(hook);
  await page.locator(sel('commit-submit')).click();
  await page.locator(sel('commit-dialog')).waitFor({ state: 'hidden' });
  await waitBranch(page, '\u2387 feat-ship \u2192 main \u00b7 2 ahead \u00b7 0 behind', 'two commits ahead');

  // Merge, refused while the workspace has uncommitted changes.
  await fs.appendFile(path.join(ws, 'README.md'), 'a change of my own\n');
  const mainBefore = (await git(ws, 'rev-parse', 'main')).trim();
  const dialog = await merge(page);
  const mergeError = dialog.locator(sel('merge-error'));
  await mergeError.waitFor({ state: 'visible' });
  assert.match(await text(mergeError), /^The workspace has uncommitted changes/);
  assert.match(await text(mergeError), /README\.md/, 'naming them, in the server\'s words');
  assert.equal((await git(ws, 'rev-parse', 'main')).trim(), mainBefore, 'main did not move');
  await git(ws, 'checkout', '--', 'README.md');
  await merge(page, 'squash');
  const done = dialog.locator(sel('merge-done'));
  await done.waitFor({ state: 'visible' });
  assert.match(await text(dialog.locator(sel('merge-done-text'))), /^Merged feat-ship into main \(squashed into one commit\): main is at [0-9a-f]{7} now\./);
  assert.equal(await fs.readFile(path.join(ws, 'feature.txt'), 'utf8'), 'the feature\nin two lines\nTODO: a third\n', 'the agent\'s file is in the workspace');
  assert.notEqual((await git(ws, 'rev-parse', 'main')).trim(), mainBefore, 'main moved');
  await waitFor(async () => (await page.locator(sel('ship-branch')).getAttribute('data-state')) === 'merged', { message: 'the branch shown merged' });
  assert.match(await text(page.locator(sel('ship-branch'))), /feat-ship \u2192 main \u00b7 merged$/);
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'merge-archive', 'the offer to archive has the focus');
  await screenshot('ship-merged');
  await dialog.locator(sel('merge-cancel')).click();
  await dialog.waitFor({ state: 'hidden' });
  await page.locator(sel('ship-archive')).waitFor({ state: 'visible' });

  // Push: an unknown remote is said so; origin gives the pull request's page.
  await page.locator(sel('ship-push')).click();
  const push = page.locator(sel('push-dialog'));
  await push.waitFor({ state: 'visible' });
  const remote = push.locator(sel('push-remote'));
  assert.equal(await remote.inputValue(), 'origin', 'origin by default');
  await remote.fill('upstream');
  await push.locator(sel('push-submit')).click();
  const pushError = push.locator(sel('push-error'));
  await pushError.waitFor({ state: 'visible' });
  assert.match(await text(pushError), /^This repository has no remote named "upstream"\./);
  await remote.fill('origin');
  await remote.press('Enter');
  const link = push.locator(sel('push-pr-link'));
  await link.waitFor({ state: 'visible', timeout: 20_000 });
  assert.equal(await link.getAttribute('href'), 'https://github.com/acme/widgets/compare/main...feat-ship?expand=1');
  assert.equal(await link.getAttribute('target'), '_blank');
  assert.match(await link.getAttribute('rel'), /\bnoopener\b/);
  assert.equal(await pushError.isVisible(), false, 'the old error is gone');
  assert.match(await text(push.locator(sel('push-result-text'))), /^Pushed feat-ship to origin\./);
  assert.equal((await git(bare, 'rev-parse', 'feat-ship')).trim(), (await git(wt, 'rev-parse', 'HEAD')).trim(), 'the bare remote has the branch');
  await screenshot('ship-pushed');
  await push.locator(sel('push-cancel')).click();
  await push.waitFor({ state: 'hidden' });
  const prLink = page.locator(sel('ship-pr'));
  await prLink.waitFor({ state: 'visible' });
  assert.equal(await prLink.getAttribute('href'), 'https://github.com/acme/widgets/compare/main...feat-ship?expand=1', 'the bar keeps the link');

  // Archive asks first (Cancel has the focus), then removes the worktree and keeps the branch.
  await page.locator(sel('ship-archive')).click();
  const confirm = page.locator(sel('ship-confirm'));
  await confirm.waitFor({ state: 'visible' });
  assert.equal(await confirm.getAttribute('data-kind'), 'archive');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'ship-confirm-no', 'Cancel has the focus');
  assert.match(await text(confirm), /worktree is removed; the branch and its commits stay/);
  await screenshot('ship-archive-confirm');
  await page.locator(sel('ship-confirm-yes')).click();
  await waitFor(async () => (await page.locator(sel('ship-branch')).getAttribute('data-state')) === 'archived', { timeout: 15_000, message: 'the branch shown archived' });
  assert.match(await text(page.locator(sel('ship-branch'))), /feat-ship \u2192 main \u00b7 archived$/);
  assert.equal(existsSync(wt), false, 'the worktree is gone');
  assert.match(await git(ws, 'branch', '--list', 'feat-ship'), /feat-ship/, 'the branch stays');
  for (const b of ['ship-commit', 'ship-merge', 'ship-push', 'ship-archive']) {
    assert.equal(await page.locator(sel(b)).isVisible(), false, `no ${b} for an archived session`);
  }
  await waitFor(async () => ['stopped', 'error'].includes(await tabById(page, s.id).getAttribute('data-status')), { message: 'the agent stopped' });
  await screenshot('ship-archived');
  // Its terminal says why it ended, and offers no Resume the server would refuse.
  await page.keyboard.press('Alt+1');
  const ended = page.locator(sel('resume-bar'));
  await ended.waitFor({ state: 'visible' });
  assert.match(await text(ended), /Archived: its branch feat-ship was merged/);
  assert.equal(await page.locator(sel('resume')).isVisible(), false, 'no Resume for an archived session');
});

uiTest('ship: a merge that conflicts lists the file and goes back to the agent, under the person\'s name', { setupWorkspace, allowConsole: REFUSALS, timeout: 90_000 }, async ({ page, server, frames, screenshot }) => {
  const ws = server.workspace;
  // Who asks: this page's name.
  await page.locator(sel('you')).click();
  await page.locator(sel('identity-name')).fill('alice');
  await page.locator(sel('identity-save')).click();
  await waitFor(async () => (await page.locator(sel('you')).getAttribute('data-name')) === 'alice', { message: 'the page is alice' });

  const s = await server.createSession({ name: 'clash', worktree: { branch: 'feat-clash' }, command: AGENT });
  const wt = s.worktree.path;
  await tabById(page, s.id).click();
  await waitForLine(page, s.id, 'ready');
  // The same line, changed on both sides.
  await fs.writeFile(path.join(wt, 'shared.txt'), 'one\nTWO on the branch\nthree\n');
  await git(wt, 'commit', '-q', '-am', 'the branch says TWO');
  await fs.writeFile(path.join(ws, 'shared.txt'), 'one\ntwo, said main\nthree\n');
  await git(ws, 'commit', '-q', '-am', 'main says two');
  const mainBefore = (await git(ws, 'rev-parse', 'main')).trim();

  await showChanges(page);
  await waitBranch(page, '\u2387 feat-clash \u2192 main \u00b7 1 ahead \u00b7 1 behind', 'both sides moved');
  const dialog = await merge(page);
  const conflict = dialog.locator(sel('merge-conflict'));
  await conflict.waitFor({ state: 'visible' });
  assert.deepEqual(await dialog.locator(sel('merge-conflict-file')).allTextContents(), ['shared.txt'], 'the conflicted file is listed');
  assert.equal((await git(ws, 'rev-parse', 'main')).trim(), mainBefore, 'main did not move');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'merge-ask-agent', '"Ask the agent to resolve" has the focus');
  await screenshot('ship-conflict');

  await dialog.locator(sel('merge-ask-agent')).click();
  await dialog.waitFor({ state: 'hidden' });
  await page.locator(`${sel('toast')}[data-kind="info"]`, { hasText: /^Asked the agent to resolve 1 conflicted file/ }).waitFor({ state: 'visible' });
  await waitForLine(page, s.id, 'got:- shared.txt', { timeout: 15_000 });
  const got = (await terminalLines(page, s.id)).filter((l) => l.startsWith('got:'));
  assert.ok(got.some((l) => /^got:I merged main into your branch feat-clash/.test(l)), `the agent read the prompt:\n${showLines(got)}`);
  const queued = frames.find((f) => f.type === 'prompt.queued' && f.sessionId === s.id);
  assert.equal(queued?.prompt?.author, 'alice', `queued under the person's name: ${JSON.stringify(queued)}`);
  assert.match(await fs.readFile(path.join(wt, 'shared.txt'), 'utf8'), /^<<<<<<< /m, 'the conflict is marked in the worktree, for the agent');

  // The agent resolves it. The message suggested for the resolution
  // concludes the merge and names the file (it was "Update shared.txt").
  await fs.writeFile(path.join(wt, 'shared.txt'), 'one\nTWO, said both\nthree\n');
  const message = await openCommit(page);
  assert.equal(message, 'Merge branch \'main\' into feat-clash\n\nResolved conflicts in:\n- shared.txt', 'the suggestion names the merge and the file resolved');
  await screenshot('ship-conflict-resolved-commit');
  const commitDialog = page.locator(sel('commit-dialog'));
  await commitDialog.locator(sel('commit-submit')).click();
  await commitDialog.waitFor({ state: 'hidden' });
  assert.deepEqual((await git(wt, 'log', '-1', '--format=%P')).trim().split(' ').length, 2, 'the resolution is the merge\'s commit');
  assert.equal((await git(wt, 'log', '-1', '--format=%s')).trim(), 'Merge branch \'main\' into feat-clash');
});

// Issue 40, point 6: the bar and Changes say what is true now, after a
// squash and after a merge commit alike. After a squash, main has a copy
// of the branch's commit, not the commit: the branch is merged, with
// nothing left to show and nothing it lacks; two commits later it is two
// ahead, not merged, and Changes shows those two alone; a commit on main
// makes it one behind, not two.
for (const mode of ['squash', 'merge']) {
uiTest(`ship: after a ${mode}, the bar and Changes show what the branch still adds`, { setupWorkspace, timeout: 90_000 }, async ({ page, server, screenshot }) => {
  const ws = server.workspace;
  const s = await server.createSession({ name: `after-${mode}`, worktree: { branch: 'feat-more' }, command: AGENT });
  const wt = s.worktree.path;
  await tabById(page, s.id).click();
  await waitForLine(page, s.id, 'ready');
  const commit = async (dir, file, msg) => {
    await fs.writeFile(path.join(dir, file), `${msg}\n`);
    await git(dir, 'add', file);
    await git(dir, 'commit', '-q', '-m', msg);
  };
  await commit(wt, 'first.txt', 'first');
  await showChanges(page);
  await waitBranch(page, '\u2387 feat-more \u2192 main \u00b7 1 ahead \u00b7 0 behind', 'one commit ahead');

  const dialog = await merge(page, mode);
  await dialog.locator(sel('merge-done')).waitFor({ state: 'visible' });
  await dialog.locator(sel('merge-cancel')).click();
  await dialog.waitFor({ state: 'hidden' });
  const branch = page.locator(sel('ship-branch'));
  await waitFor(async () => (await branch.getAttribute('data-state')) === 'merged', { message: 'the branch shown merged' });
  const changes = page.locator(sel('changes'));
  // Everything the branch did is on main: nothing to show.
  await page.keyboard.press('Alt+1');
  await showChanges(page, 'clean');

  // The agent goes on: two commits the base lacks.
  await commit(wt, 'second.txt', 'second');
  await commit(wt, 'third.txt', 'third');
  await page.keyboard.press('Alt+1');
  await showChanges(page);
  await waitBranch(page, '\u2387 feat-more \u2192 main \u00b7 2 ahead \u00b7 0 behind', 'two new commits, counted from the merged tip');
  assert.equal(await branch.getAttribute('data-state'), 'open', 'no longer merged');
  await waitFor(async () => JSON.stringify(await page.locator(sel('changes-file')).evaluateAll((els) => els.map((e) => e.dataset.path).sort()))
    === JSON.stringify(['second.txt', 'third.txt']), { message: 'Changes lists the two new files alone' });
  assert.equal(await page.locator(sel('ship-merge')).isVisible(), true, 'Merge is offered again');
  assert.equal(await page.locator(sel('ship-archive')).isVisible(), false, 'Archive waits for the new commits to be merged');

  // Main moves on by one commit: one behind, the merge's own commit not counted.
  await commit(ws, 'main.txt', 'on main');
  await page.keyboard.press('Alt+1');
  await showChanges(page);
  await waitBranch(page, '\u2387 feat-more \u2192 main \u00b7 2 ahead \u00b7 1 behind', 'main\'s own commit only');
  await page.locator(sel('ship-merge')).click();
  await dialog.waitFor({ state: 'visible' });
  await screenshot(`ship-after-${mode}-merge-dialog`);
  await waitFor(async () => (await text(dialog)).includes('feat-more has 2 commits main lacks; main has 1 commit it lacks.'),
    { message: `the dialog counts main's one commit, not the squash (now "${await text(dialog)}")` });
  assert.equal(await changes.getAttribute('data-state'), 'ready');
});
}
