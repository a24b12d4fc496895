// Issue 30: the checkpoints of a session's turns. An agent that rings the
// bell after each line it reads ends a turn each time, and the server
// keeps the tree then: the Changes view's timeline lists them live,
// newest first, with their time and line counts. One shows what it
// changed; restoring the turn that had an untracked file, after the agent
// deleted it, brings the file back and names the checkpoint that undoes
// it; "Checkpoint now" takes one, or says nothing changed. This session
// shares the workspace, so its commit asks first.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  uiTest, sel, tabById, tempDir, waitFor, waitForLine, asParticipant, git, initGitRepo,
} from './harness.mjs';

// Waits for input (a bell), and after each line it reads echoes it and
// rings again: each line is a turn, and each turn's end a checkpoint.
const AGENT = ['sh', '-c', 'printf "ready\\a"; while IFS= read -r l; do echo "got:$l"; printf "\\a"; done'];

async function setupWorkspace(dir) {
  await initGitRepo(dir);
  await git(dir, 'config', 'user.name', 'Turn Tester');
  await git(dir, 'config', 'user.email', 'turns@example.test');
}

const text = async (loc) => ((await loc.textContent()) ?? '').replace(/\s+/g, ' ').trim();
const PLAN = 'step one\nstep two\n';

/** The timeline as [id, files, counts], top to bottom. */
function timeline(page) {
  return page.locator(sel('checkpoint')).evaluateAll((els) => els.map((el) => [
    Number(el.dataset.id),
    el.querySelector('[data-testid=checkpoint-files]').textContent,
    el.querySelector('[data-testid=changes-counts]').textContent.replace(/\s+/g, ''),
  ]));
}

async function waitTimeline(page, ids, message) {
  await waitFor(async () => JSON.stringify((await timeline(page)).map((r) => r[0])) === JSON.stringify(ids), {
    timeout: 15_000, message: `${message}: the timeline ${JSON.stringify(ids)} (now ${JSON.stringify((await timeline(page)).map((r) => r[0]))})`,
  });
}

/** One turn: the agent reads a line (a queued prompt), answers, and waits again. */
async function turn(page, id, line) {
  await asParticipant(page, { id, texts: [line] });
  await waitForLine(page, id, `got:${line}`, { timeout: 15_000 });
}

uiTest('checkpoints: a timeline of the turns, one\'s diff, a restore that brings a deleted file back, checkpoint now', { setupWorkspace, timeout: 120_000 }, async ({ page, server, screenshot }) => {
  const ws = server.workspace;
  const s = await server.createSession({ name: 'turns', command: AGENT });
  await tabById(page, s.id).click();
  await waitForLine(page, s.id, 'ready');
  await page.locator(sel('layout-changes')).click();
  await waitFor(async () => (await page.locator(sel('changes')).getAttribute('data-state')) === 'clean', { message: 'the Changes view, clean' });

  const toggle = page.locator(sel('ship-checkpoints'));
  await toggle.click();
  const panel = page.locator(sel('checkpoints'));
  await panel.waitFor({ state: 'visible' });
  assert.equal(await toggle.getAttribute('aria-expanded'), 'true');
  // The first turn ended with "ready".
  await waitTimeline(page, [1], 'the first turn');

  // Turn 2 leaves an untracked file; turn 3 deletes it and changes a tracked one.
  await fs.mkdir(path.join(ws, 'notes'));
  await fs.writeFile(path.join(ws, 'notes', 'plan.txt'), PLAN);
  await turn(page, s.id, 'one');
  await waitTimeline(page, [2, 1], 'the second turn, live');
  await fs.rm(path.join(ws, 'notes', 'plan.txt'));
  await fs.appendFile(path.join(ws, 'README.md'), 'a line from turn three\n');
  await turn(page, s.id, 'two');
  await waitTimeline(page, [3, 2, 1], 'the third turn, newest first');
  const rows = await timeline(page);
  assert.deepEqual(rows, [[3, '2 files', '+1\u22122'], [2, '1 file', '+2\u22120'], [1, '0 files', '+0\u22120']], 'each with what it changed');
  for (const t of await page.locator(sel('checkpoint-time')).allTextContents()) assert.match(t, /\d{1,2}:\d{2}:\d{2}/, 'and its time');
  await screenshot('checkpoints-timeline');

  // Checkpoint 1 changed no file: it opens and says so (it answered
  // "files": null and showed "Cannot read properties of null").
  const view = page.locator(sel('checkpoint-view'));
  await page.locator(`${sel('checkpoint')}[data-id="1"]`).click();
  await view.waitFor({ state: 'visible' });
  await waitFor(async () => ['ready', 'error'].includes(await view.getAttribute('data-state')), { message: 'checkpoint 1 shown' });
  assert.equal(await view.getAttribute('data-state'), 'ready', `checkpoint 1: ${await text(view)}`);
  assert.match(await text(view), /No file changed: the tree was as the checkpoint before had it\./);
  await screenshot('checkpoints-empty');

  // Checkpoint 2's diff: the untracked file it had.
  await page.locator(`${sel('checkpoint')}[data-id="2"]`).click();
  await view.waitFor({ state: 'visible' });
  await waitFor(async () => (await view.getAttribute('data-state')) === 'ready', { message: 'checkpoint 2\'s diff' });
  assert.match(await text(page.locator(sel('checkpoint-view-title'))), /^Checkpoint #2 · \d{1,2}:\d{2}:\d{2}/);
  const diffs = page.locator(sel('checkpoint-diff'));
  assert.deepEqual(await diffs.evaluateAll((els) => els.map((e) => [e.dataset.path, e.dataset.status])), [['notes/plan.txt', 'added']]);
  assert.match(await diffs.first().locator(sel('checkpoint-diff-body')).innerText(), /step one[\s\S]*step two/, 'its lines, drawn');
  assert.equal(await page.locator(`${sel('checkpoint')}[data-id="2"]`).getAttribute('aria-current'), 'true');
  await screenshot('checkpoints-diff');
  // Side by side, as the Changes view's toggle says.
  const drawnAs = () => diffs.first().locator(sel('checkpoint-diff-body')).getAttribute('data-view');
  await page.locator(sel('changes-view-split')).click();
  await waitFor(async () => (await drawnAs()) === 'split', { message: 'checkpoint 2 drawn side by side' });
  await page.locator(sel('changes-view-unified')).click();
  await waitFor(async () => (await drawnAs()) === 'unified', { message: 'and unified again' });

  // Escape goes back to the current changes, the focus to the checkpoint.
  await page.locator(sel('checkpoint-view-close')).focus();
  await page.keyboard.press('Escape');
  await view.waitFor({ state: 'hidden' });
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.id), '2', 'the focus is back on #2');
  await page.keyboard.press('Enter');
  await waitFor(async () => (await view.getAttribute('data-state')) === 'ready', { message: 'checkpoint 2 again, by keyboard' });

  // Work since the last turn, kept by no checkpoint yet.
  await fs.writeFile(path.join(ws, 'scratch.txt'), 'not in any turn\n');

  // Restore asks first, Cancel focused; then the file is back, and the note names the undo.
  await page.locator(sel('checkpoint-restore')).click();
  const confirm = page.locator(sel('checkpoint-restore-confirm'));
  await confirm.waitFor({ state: 'visible' });
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'checkpoint-restore-no', 'Cancel has the focus');
  assert.match(await text(confirm), /^Put the tree back as it was at #2/);
  await screenshot('checkpoints-restore-confirm');
  assert.equal(existsSync(path.join(ws, 'notes', 'plan.txt')), false, 'the file is gone before the restore');
  await page.locator(sel('checkpoint-restore-yes')).click();
  const note = page.locator(sel('checkpoints-note'));
  await note.waitFor({ state: 'visible', timeout: 15_000 });
  assert.equal(await text(note), 'Restored checkpoint 2; checkpoint 4 saved the state before \u2014 restore it to undo. Show #4');
  assert.equal(await fs.readFile(path.join(ws, 'notes', 'plan.txt'), 'utf8'), PLAN, 'the untracked file is back');
  assert.equal(await fs.readFile(path.join(ws, 'README.md'), 'utf8'), '# test workspace\n', 'the tracked one as it was');
  assert.equal(existsSync(path.join(ws, 'scratch.txt')), false, 'and the file made since is gone');
  await view.waitFor({ state: 'hidden' });
  await waitTimeline(page, [4, 3, 2, 1], 'the saved state on top, live');
  await waitFor(async () => (await page.locator(`${sel('changes-file')}[data-path="notes/plan.txt"]`).count()) === 1, { message: 'the Changes view shows the file again' });
  await screenshot('checkpoints-restored');

  // Undo: the note shows checkpoint 4, whose restore brings the work back.
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'checkpoints-undo', 'the way back has the focus');
  await page.keyboard.press('Enter');
  await waitFor(async () => (await view.getAttribute('data-state')) === 'ready' && (await view.getAttribute('data-checkpoint')) === '4', { message: 'checkpoint 4 shown' });
  await page.locator(sel('checkpoint-restore')).click();
  await page.locator(sel('checkpoint-restore-yes')).click();
  await waitFor(async () => (await text(note)) === 'Restored checkpoint 4; checkpoint 5 saved the state before \u2014 restore it to undo. Show #5', { timeout: 15_000, message: 'the undo said' });
  assert.equal(await fs.readFile(path.join(ws, 'scratch.txt'), 'utf8'), 'not in any turn\n', 'the work since the last turn is back');
  assert.equal(existsSync(path.join(ws, 'notes', 'plan.txt')), false, 'as the tree was');
  await waitTimeline(page, [5, 4, 3, 2, 1], 'the undo\'s own checkpoint');

  // Checkpoint now: a new one, then nothing new to keep.
  await page.locator(sel('checkpoint-now')).click();
  await waitFor(async () => (await text(note)) === 'Checkpoint #6 taken: the tree as it is now.', { message: 'checkpoint now taken' });
  await waitTimeline(page, [6, 5, 4, 3, 2, 1], 'checkpoint now in the timeline');
  await page.locator(sel('checkpoint-now')).click();
  await waitFor(async () => (await text(note)) === 'Nothing changed since checkpoint #6: no new one was needed.', { message: 'nothing new to keep' });

  // The workspace is shared: the commit asks first, Cancel focused.
  await page.locator(sel('ship-commit')).click();
  const ask = page.locator(sel('ship-confirm'));
  await ask.waitFor({ state: 'visible' });
  assert.equal(await ask.getAttribute('data-kind'), 'shared');
  assert.match(await text(ask), /^This session shares the workspace: a commit takes every change in it, not only this agent's\./);
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'ship-confirm-no', 'Cancel has the focus');
  await screenshot('ship-shared-confirm');
  await page.keyboard.press('Enter');
  await ask.waitFor({ state: 'hidden' });
  assert.equal(await page.locator(sel('commit-dialog')).isVisible(), false, 'Cancel opened nothing');
  await page.locator(sel('ship-commit')).click();
  await page.locator(sel('ship-confirm-yes')).click();
  const dialog = page.locator(sel('commit-dialog'));
  await dialog.waitFor({ state: 'visible' });
  await waitFor(async () => /scratch\.txt/.test(await dialog.locator(sel('commit-message')).inputValue()), { message: 'the suggestion names the new file' });
  await dialog.locator(sel('commit-submit')).click();
  await dialog.waitFor({ state: 'hidden' });
  assert.match(await git(ws, 'log', '-1', '--name-only', '--format=%s'), /scratch\.txt/, 'committed in the workspace');
  assert.equal(await text(page.locator(sel('ship-branch'))), 'shared workspace');

  // A narrow window: the bar keeps every action in reach, and the timeline takes the view's width.
  await page.setViewportSize({ width: 640, height: 800 });
  for (const b of ['ship-checkpoints', 'ship-commit', 'ship-push', 'checkpoint-now']) {
    const box = await page.locator(sel(b)).boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 640, `${b} within the window: ${JSON.stringify(box)}`);
  }
  await screenshot('checkpoints-narrow');
  // There, a checkpoint's diff takes the timeline's place, and gives it back.
  await page.locator(`${sel('checkpoint')}[data-id="2"]`).click();
  await waitFor(async () => (await view.getAttribute('data-state')) === 'ready', { message: 'checkpoint 2 on a narrow window' });
  assert.equal(await panel.isVisible(), false, 'the diff has the room');
  await screenshot('checkpoints-narrow-diff');
  await page.locator(sel('checkpoint-view-close')).click();
  await panel.waitFor({ state: 'visible' });
});

// Issue 40, point 12: a turn that ends on a bell while a prompt waits in
// the queue is answered at once, and was never shown waiting: it took no
// checkpoint, and the next turn's held the work of both. Each turn has
// its own. The agent goes on with a turn once the test opens its gate
// (outside the tree), and writes only once the turn before has its
// checkpoint, so none can hold two turns' work.
uiTest('checkpoints: a turn that ends on a bell, a queued prompt answering it at once, has its own', { setupWorkspace, timeout: 90_000 }, async ({ page, server, screenshot }) => {
  const gates = await tempDir('gates');
  const agent = ['sh', '-c', `n=1; printf "ready\\a"; while IFS= read -r l; do
    until [ -e "${gates}/$l" ]; do sleep 0.02; done
    until git show-ref -q --verify "refs/agentmux/checkpoints/$AGENTMUX_SESSION_ID/$n"; do sleep 0.02; done
    n=$((n+1)); echo "$l" > "turn-$l.txt"; printf "got:%s\\a" "$l"
  done`];
  const s = await server.createSession({ name: 'queued turns', command: agent });
  await tabById(page, s.id).click();
  await waitForLine(page, s.id, 'ready');
  await page.locator(sel('layout-changes')).click();
  await page.locator(sel('ship-checkpoints')).click();
  await waitTimeline(page, [1], 'the start');

  // "one" answers the ready bell; "two" waits in the queue for the bell
  // that ends turn one.
  await asParticipant(page, { id: s.id, texts: ['one', 'two'] });
  await fs.writeFile(path.join(gates, 'one'), '');
  await fs.writeFile(path.join(gates, 'two'), '');
  await waitTimeline(page, [3, 2, 1], 'a checkpoint for each turn, the one a queued prompt answered too');
  assert.deepEqual(await timeline(page), [[3, '1 file', '+1\u22120'], [2, '1 file', '+1\u22120'], [1, '0 files', '+0\u22120']], 'each with its own turn\'s file');
  await screenshot('checkpoints-queued-turns');
  const view = page.locator(sel('checkpoint-view'));
  for (const [id, file] of [[2, 'turn-one.txt'], [3, 'turn-two.txt']]) {
    await page.locator(`${sel('checkpoint')}[data-id="${id}"]`).click();
    await waitFor(async () => (await view.getAttribute('data-state')) === 'ready' && (await view.getAttribute('data-checkpoint')) === String(id), { message: `checkpoint ${id} shown` });
    assert.deepEqual(await page.locator(sel('checkpoint-diff')).evaluateAll((els) => els.map((e) => e.dataset.path)), [file], `checkpoint ${id} holds its turn's file alone`);
  }
});

// Issue 38: a checkpoint leaves untracked files too big to keep out of
// the object store, and the timeline says so under its entry, which opens
// to their names and sizes (staying open as the list is redrawn); its
// diff's note names them, and all of it reads on a phone's width.
uiTest('checkpoints: files skipped as too big are named under the checkpoint and in its diff, on a phone too', {
  setupWorkspace, timeout: 90_000, flags: ['--checkpoint-max-file', '1KiB', '--checkpoint-max-total', '2KiB'],
}, async ({ page, server, screenshot }) => {
  const ws = server.workspace;
  const s = await server.createSession({ name: 'big files', command: AGENT });
  await tabById(page, s.id).click();
  await waitForLine(page, s.id, 'ready');
  await page.locator(sel('layout-changes')).click();
  await page.locator(sel('ship-checkpoints')).click();
  await waitTimeline(page, [1], 'the first turn');
  assert.equal(await page.locator(sel('checkpoint-skipped')).count(), 0, 'nothing skipped, nothing said');

  // Over the file limit: a dump and a long path; past the total, smallest
  // first: two of four 900-byte files fit in 2 KiB, with notes.txt.
  const long = 'exports/a-rather-long-directory-name-for-reports/quarterly-report-2026-11-final.csv';
  await fs.mkdir(path.join(ws, path.dirname(long)), { recursive: true });
  await fs.writeFile(path.join(ws, long), 'x'.repeat(5000));
  await fs.writeFile(path.join(ws, 'dump.bin'), 'd'.repeat(300_000));
  for (const n of ['a', 'b', 'c', 'd']) await fs.writeFile(path.join(ws, `part-${n}.dat`), n.repeat(900));
  await fs.writeFile(path.join(ws, 'notes.txt'), 'kept\n');

  await page.locator(sel('checkpoint-now')).click();
  const note = page.locator(sel('checkpoints-note'));
  await waitFor(async () => (await text(note)) === 'Checkpoint #2 taken: the tree as it is now, but for 4 untracked files too big to keep.', { message: 'checkpoint now, saying what it left out' });
  await waitTimeline(page, [2, 1], 'checkpoint 2');
  const skipped = page.locator(`${sel('checkpoint-skipped')}[data-key$=":2"]`);
  assert.equal(await text(skipped.locator('summary')), '4 files skipped (too big)');
  assert.equal(await skipped.getAttribute('open'), null, 'closed at first');
  await skipped.locator('summary').click();
  const files = () => skipped.locator(sel('checkpoint-skipped-file')).evaluateAll((els) => els.map((el) => el.textContent));
  assert.deepEqual(await files(), [
    'dump.bin293 KiB', `${long}4.9 KiB`, 'part-d.dat900 B', 'part-c.dat900 B',
  ], 'biggest first, with their sizes');
  assert.deepEqual((await timeline(page))[0], [2, '3 files', '+3\u22120'], 'the files kept are counted');
  for (const f of ['dump.bin', long, 'part-c.dat', 'part-d.dat']) {
    const blob = (await git(ws, 'hash-object', '--no-filters', f)).trim();
    await assert.rejects(git(ws, 'cat-file', '-e', blob), `${f} is not in the object store`);
  }
  await screenshot('checkpoints-skipped');

  // A turn redraws the list: the open one stays open.
  await fs.writeFile(path.join(ws, 'notes.txt'), 'kept, and more\n');
  await turn(page, s.id, 'more');
  await waitTimeline(page, [3, 2, 1], 'the turn after');
  assert.equal(await skipped.getAttribute('open'), '', 'still open');
  assert.equal(await page.locator(`${sel('checkpoint')}[data-id="3"]`).count(), 1);

  // Its diff says it too.
  await page.locator(`${sel('checkpoint')}[data-id="2"]`).click();
  const view = page.locator(sel('checkpoint-view'));
  await waitFor(async () => (await view.getAttribute('data-state')) === 'ready', { message: 'checkpoint 2\'s diff' });
  assert.equal(await text(page.locator(sel('checkpoint-view-note'))),
    `4 untracked files too big to keep are not in this checkpoint: dump.bin (293 KiB), ${long} (4.9 KiB), part-d.dat (900 B), and 1 more. A restore leaves them as they are.`);
  await page.locator(sel('checkpoint-view-close')).click();

  // A phone's width: the names wrap within the panel.
  await page.setViewportSize({ width: 390, height: 844 });
  await skipped.scrollIntoViewIfNeeded();
  const box = await skipped.boundingBox();
  assert.ok(box && box.x >= 0 && box.x + box.width <= 390, `the skipped files within the window: ${JSON.stringify(box)}`);
  const list = skipped.locator('.checkpoint-skipped-files');
  assert.ok(await list.evaluate((el) => el.scrollWidth <= el.clientWidth), 'no name runs past the panel');
  await screenshot('checkpoints-skipped-phone');
});
