// Issue 45, part 3: overlap warnings. Two worktree sessions of one
// repository run shells, and real shell commands make their edits: first
// to the same file, far apart (both tabs get a warning mark naming the
// other session and the file; both Changes views a banner), then to
// touching lines (the marks turn to conflicts and the overlapping lines
// are marked in each diff). Once both have committed, the merge dialog of
// one names the other as the session that will conflict; the merge goes
// in, and the other's merge then conflicts in that very file.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  uiTest, sel, tabById, waitFor, waitForPrompt, typeCommand, selectSession, git, initGitRepo,
} from './harness.mjs';

const LINES = Array.from({ length: 12 }, (_, i) => `line ${i + 1}`).join('\n') + '\n';

async function setupWorkspace(dir) {
  await initGitRepo(dir);
  await git(dir, 'config', 'user.name', 'Overlap Tester');
  await git(dir, 'config', 'user.email', 'overlap@example.test');
  await fs.writeFile(path.join(dir, 'shared.txt'), LINES);
  await git(dir, 'add', 'shared.txt');
  await git(dir, 'commit', '-q', '-m', 'shared');
}

const text = async (loc) => ((await loc.textContent()) ?? '').replace(/\s+/g, ' ').trim();

/** Types a shell command into a session's terminal and waits for the prompt after it. */
async function run(page, id, command) {
  await selectSession(page, id);
  if ((await page.locator('#app').getAttribute('data-layout')) !== 'terminal') await page.locator(sel('layout-terminal')).click();
  await typeCommand(page, command);
  await waitForPrompt(page, id, { timeout: 15_000 });
}

async function showChanges(page, id) {
  await selectSession(page, id);
  if ((await page.locator('#app').getAttribute('data-layout')) !== 'changes') await page.locator(sel('layout-changes')).click();
  const changes = page.locator(sel('changes'));
  await waitFor(async () => (await changes.getAttribute('data-session-id')) === id && (await changes.getAttribute('data-state')) === 'ready',
    { timeout: 15_000, message: `the Changes view of ${id} ready` });
}

// The merge that conflicts is refused on purpose.
const REFUSALS = [/Failed to load resource: the server responded with a status of 409 \(Conflict\)/];

uiTest('overlaps: warnings on both tabs and Changes views, marked lines, and the merge preview a real merge confirms', { setupWorkspace, allowConsole: REFUSALS, timeout: 150_000 }, async ({ page, server, screenshot }) => {
  const shell = ['sh', '-c', 'PS1="$ " exec sh'];
  const a = await server.createSession({ name: 'alpha', worktree: { branch: 'feat-alpha' }, command: shell });
  const b = await server.createSession({ name: 'beta', worktree: { branch: 'feat-beta' }, command: shell });
  for (const s of [a, b]) {
    await tabById(page, s.id).waitFor();
    await selectSession(page, s.id);
    await waitForPrompt(page, s.id, { timeout: 15_000 });
  }

  // The same file, lines far apart: an overlap of files, not lines.
  await run(page, a.id, "sed -i 's/^line 2$/alpha was here/' shared.txt");
  await run(page, b.id, "sed -i 's/^line 11$/beta was here/' shared.txt");
  const markA = tabById(page, a.id).locator(sel('tab-overlap'));
  const markB = tabById(page, b.id).locator(sel('tab-overlap'));
  for (const [mark, other] of [[markA, 'beta'], [markB, 'alpha']]) {
    await waitFor(async () => (await mark.isVisible()) && /shared\.txt/.test((await mark.getAttribute('title')) ?? ''),
      { timeout: 15_000, message: `the overlap mark naming ${other}` });
    const title = await mark.getAttribute('title');
    assert.equal(title, `Overlapping changes.\nAlso changed by '${other}': shared.txt`);
    assert.equal(await mark.getAttribute('data-lines'), null, 'not the same lines yet');
    // The tab's own tooltip says it too, for a tab with no room for the mark.
    const tabTitle = await mark.locator('xpath=ancestor::*[@data-testid="tab"]').getAttribute('title');
    assert.ok(tabTitle.includes(title), `the tab's tooltip holds the overlap: ${JSON.stringify(tabTitle)}`);
  }
  const { body: listed } = await server.api('api/overlaps');
  assert.deepEqual(listed.overlaps, [{ sessions: [a.id, b.id].sort(), path: 'shared.txt', lines: false }]);
  await markA.hover();
  await screenshot('overlaps-tabs-files');

  // Touching lines: the marks say conflict, and the lines are marked.
  await run(page, b.id, "sed -i 's/^line 3$/beta touches alpha/' shared.txt");
  for (const mark of [markA, markB]) {
    await waitFor(async () => (await mark.getAttribute('data-lines')) !== null, { timeout: 15_000, message: 'the overlap of lines on both tabs' });
  }
  assert.match(await markA.getAttribute('title'), /^Conflicting changes\.\nAlso changed by 'beta': shared\.txt \(same lines\)$/);

  for (const [s, other, own] of [[a, 'beta', 'alpha was here'], [b, 'alpha', 'beta touches alpha']]) {
    await showChanges(page, s.id);
    const banner = page.locator(sel('changes-overlaps'));
    await waitFor(async () => (await banner.isVisible()) && (await banner.getAttribute('data-lines')) !== null, { message: 'the conflict banner' });
    assert.match(await text(banner), new RegExp(`^Conflicting changes\\. .*Also changed by '${other}': shared\\.txt \\(same lines\\)$`));
    const marked = page.locator(`${sel('changes-diff')}[data-path="shared.txt"] tr[data-overlap]`);
    await waitFor(async () => (await marked.count()) > 0, { message: 'overlapping lines marked in the diff' });
    const markedText = await marked.allTextContents();
    assert.ok(markedText.some((t) => t.includes(own)), `the added line "${own}" is marked: ${markedText.join(' | ')}`);
    assert.ok(!markedText.some((t) => t.includes('beta was here')), 'line 11, far away, is not');
    assert.match(await marked.first().getAttribute('title'), new RegExp(`Also changed by '${other}'`));
    await screenshot(`overlaps-changes-${s.worktree.branch}`);
  }

  // Both commit; the merge dialog of alpha names beta and the file.
  await run(page, a.id, "git commit -qam 'alpha edits'");
  await run(page, b.id, "git commit -qam 'beta edits'");
  await selectSession(page, a.id);
  await page.locator(sel('layout-changes')).click();
  await page.locator(sel('ship-merge')).click();
  const dialog = page.locator(sel('merge-dialog'));
  await dialog.waitFor({ state: 'visible' });
  const preview = dialog.locator(sel('merge-preview'));
  await waitFor(async () => (await preview.getAttribute('data-state')) === 'conflicts', { timeout: 15_000, message: 'the merge preview\'s warning' });
  assert.equal(await text(preview.locator(sel('merge-preview-title'))), 'Once this is merged, merging these into main will conflict:');
  assert.deepEqual(await preview.locator(sel('merge-preview-item')).allTextContents(), ["'beta' will conflict in shared.txt"]);
  await screenshot('overlaps-merge-preview');
  await dialog.locator(sel('merge-submit')).click();
  await dialog.locator(sel('merge-done')).waitFor({ state: 'visible', timeout: 15_000 });
  await dialog.locator(sel('merge-cancel')).click();
  await dialog.waitFor({ state: 'hidden' });

  // The prediction holds: beta's merge conflicts in shared.txt.
  await selectSession(page, b.id);
  await page.locator(sel('ship-merge')).click();
  await dialog.waitFor({ state: 'visible' });
  await waitFor(async () => (await preview.getAttribute('data-state')) === 'conflicts', { timeout: 15_000, message: 'beta\'s own conflict foretold' });
  assert.equal(await text(preview.locator(sel('merge-preview-title'))), 'This merge conflicts with main in: shared.txt.');
  await dialog.locator(sel('merge-submit')).click();
  const conflict = dialog.locator(sel('merge-conflict'));
  await conflict.waitFor({ state: 'visible', timeout: 15_000 });
  assert.deepEqual((await conflict.locator(sel('merge-conflict-files')).locator('li').allTextContents()).map((t) => t.trim()), ['shared.txt']);
  await screenshot('overlaps-merge-confirmed');
});
