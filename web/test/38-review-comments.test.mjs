// Issue 30: review comments to the agent. In the Changes view alice
// comments on a line of a changed file and, with Shift+click, on a range;
// a deleted line says it cannot take one. The comments collect in the
// session's draft, which bob, on a page of his own, sees with their
// author, marked on the lines, and which neither can empty of the other's
// comments; a reload finds it as it was. "Send to agent" queues it as one
// prompt that an agent waiting for input gets at once, naming each
// path:line with the comment; the draft is then empty. Discard asks first.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  uiTest, sel, browser, openApp, reloadApp, tabById, waitFor, waitForLine, waitForPrompt, typeCommand, terminalLines, showLines, screenshot, git, initGitRepo,
} from './harness.mjs';

// Waits for input (a bell), and after each line it reads echoes it and
// waits again: a queued prompt goes in as soon as it is queued.
const AGENT = ['sh', '-c', 'printf "ready\\a"; while IFS= read -r l; do echo "got:$l"; printf "\\a"; done'];

const BEFORE = 'alpha\nbeta\ngamma\ndelta\nepsilon\n';
// New lines: 1 alpha, 2 BETA (+), 3 gamma, 4 delta two (+), 5 delta three (+), 6 epsilon.
const AFTER = 'alpha\nBETA\ngamma\ndelta two\ndelta three\nepsilon\n';

const ONE = 'Say why beta is shouted.';
const RANGE = 'Fold these two lines into one.';
const BOBS = 'bob was here';

async function setupWorkspace(dir) {
  await initGitRepo(dir);
  await fs.writeFile(path.join(dir, 'notes.txt'), BEFORE);
  await git(dir, 'add', 'notes.txt');
  await git(dir, 'commit', '-q', '-m', 'notes');
}

const layout = (page) => page.locator('#app').getAttribute('data-layout');

/** Shows the Changes view and waits for notes.txt's diff, drawn with its line numbers. */
async function showChanges(page) {
  await page.locator(sel('layout-changes')).click();
  await waitFor(async () => (await layout(page)) === 'changes', { message: '#app[data-layout=changes]' });
  await waitFor(async () => (await page.locator(sel('changes')).getAttribute('data-state')) === 'ready', { message: 'the Changes view ready' });
  await lineCell(page, 6).waitFor({ state: 'visible' });
}

const notes = (page) => page.locator(`${sel('changes-diff')}[data-path="notes.txt"]`);
/** A new-side line number of notes.txt's diff (unified: one cell per line). */
const lineCell = (page, n) => notes(page).locator(`td[data-line="${n}"]`).last();
const comments = (page) => page.locator(sel('review-comment'));
const commentByText = (page, text) => comments(page).filter({ has: page.locator(sel('review-text'), { hasText: text }) });

async function waitComments(page, n, who) {
  await waitFor(async () => (await comments(page).count()) === n, { message: `${n} comments in ${who}'s draft (now ${await comments(page).count()})` });
}

/** Opens the "you" editor, types a name and saves it. */
async function chooseName(page, name) {
  await page.locator(sel('you')).click();
  const editor = page.locator(sel('identity'));
  await editor.waitFor({ state: 'visible' });
  await editor.locator(sel('identity-name')).fill(name);
  await editor.locator(sel('identity-save')).click();
  await editor.waitFor({ state: 'hidden' });
  await waitFor(async () => (await page.locator(sel('you')).getAttribute('data-name')) === name, { message: `the page is ${name}` });
}

/** What each comment in a page's draft says: [author, where, text, has a remove button]. */
function drafted(page) {
  return comments(page).evaluateAll((els) => els.map((el) => [
    el.querySelector('[data-testid=review-author]').textContent,
    el.querySelector('[data-testid=review-where]').textContent,
    el.querySelector('[data-testid=review-text]').textContent,
    !!el.querySelector('[data-testid=review-remove]'),
  ]));
}

uiTest('review comments: a line and a range, seen by another person, kept across a reload, sent to the agent', { setupWorkspace, timeout: 120_000 }, async ({ page, server, frames, errors, onCleanup }) => {
  await chooseName(page, 'alice');
  const s = await server.createSession({ name: 'reviewed', command: AGENT });
  await tabById(page, s.id).click();
  await waitForLine(page, s.id, 'ready');
  await waitFor(async () => (await tabById(page, s.id).getAttribute('data-status')) === 'waiting', { message: 'the agent waits for input' });
  await server.writeFile('notes.txt', AFTER);
  await showChanges(page);

  const review = page.locator(sel('review'));
  await review.waitFor({ state: 'visible' });
  assert.match(await page.locator(sel('review-hint')).textContent(), /Click a line number/, 'the empty draft says how to comment');
  assert.equal(await page.locator(sel('review-send')).isVisible(), false, 'nothing to send yet');

  // A deleted line cannot take a comment, and says why.
  const deleted = notes(page).locator('td[data-deleted]').first();
  assert.match(await deleted.getAttribute('title'), /deleted line/i);
  await deleted.click();
  const said = page.locator(`${sel('toast')}[data-kind="info"]`, { hasText: /deleted line/i });
  await said.waitFor({ state: 'visible' });
  assert.equal(await page.locator(sel('review-form')).count(), 0, 'no comment box for a deleted line');
  await said.getByRole('button', { name: 'Dismiss' }).click();

  // One line: a click opens the box under it, Enter adds the comment.
  await lineCell(page, 2).click();
  const form = page.locator(sel('review-form'));
  await form.waitFor({ state: 'visible' });
  assert.equal(await form.locator(sel('review-form-where')).textContent(), 'notes.txt:2');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'review-input', 'the box has the focus');
  await form.locator(sel('review-input')).fill(ONE);
  await form.locator(sel('review-input')).press('Enter');
  await waitComments(page, 1, 'alice');
  await form.waitFor({ state: 'detached' });

  // Escape cancels a box, and nothing is added.
  await lineCell(page, 6).click();
  await form.locator(sel('review-input')).fill('never mind');
  await form.locator(sel('review-input')).press('Escape');
  await form.waitFor({ state: 'detached' });
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.line), '6', 'the focus goes back to the line number');

  // A range: a click, then Shift+click another line number.
  await lineCell(page, 4).click();
  await lineCell(page, 5).click({ modifiers: ['Shift'] });
  assert.equal(await form.locator(sel('review-form-where')).textContent(), 'notes.txt:4-5');
  for (const n of [4, 5]) assert.match(await lineCell(page, n).getAttribute('class'), /review-selected/, `line ${n} is in the range`);
  await form.locator(sel('review-input')).fill(RANGE);
  // The agent writes the file meanwhile: the diff is drawn anew, and the
  // box stays under its lines, with its text and the focus.
  await server.writeFile('notes.txt', `${AFTER}zeta\n`);
  await waitFor(async () => /zeta/.test(await notes(page).locator(sel('changes-diff-body')).innerText()), { message: 'the diff redrawn with the new line' });
  assert.equal(await form.locator(sel('review-input')).inputValue(), RANGE, 'the text is kept');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'review-input', 'and the focus');
  assert.equal(await notes(page).locator(`tr:has(td[data-line="5"]) + ${sel('review-row')}`).count(), 1, 'the box is under line 5 again');
  await screenshot(page, 'review-comment-box');
  await form.locator(sel('review-add')).click();
  await waitComments(page, 2, 'alice');

  assert.deepEqual(await drafted(page), [
    ['alice', 'notes.txt:2', ONE, true],
    ['alice', 'notes.txt:4-5', RANGE, true],
  ]);
  for (const n of [2, 4, 5]) assert.match(await lineCell(page, n).getAttribute('class'), /review-marked/, `line ${n} is marked as commented`);
  for (const n of [1, 3, 6]) assert.doesNotMatch(await lineCell(page, n).getAttribute('class') ?? '', /review-marked/, `line ${n} is not`);
  assert.equal(await page.locator(sel('review-count')).textContent(), '2 comments');
  await page.locator(sel('review-send')).waitFor({ state: 'visible' });
  await screenshot(page, 'review-draft');

  // Side by side, the box sits under its line and the two sides stay level.
  await page.locator(sel('changes-view-split')).click();
  await waitFor(async () => (await notes(page).locator(sel('changes-diff-body')).getAttribute('data-view')) === 'split', { message: 'drawn side by side' });
  await lineCell(page, 3).click();
  await form.waitFor({ state: 'visible' });
  // The spacer on the other side takes the box's height from a
  // ResizeObserver, which runs after the box is laid out: wait for it.
  const level = () =>
    notes(page).evaluate((el) => {
      const [left, right] = el.querySelectorAll('.d2h-file-side-diff');
      const after = (side) => side.querySelector('tr:last-child').getBoundingClientRect().bottom;
      return Math.abs(after(left) - after(right));
    });
  await waitFor(async () => (await level()) < 1, { message: 'both sides to end level with the box open' });
  assert.match(await lineCell(page, 4).getAttribute('class'), /review-marked/, 'the marks are drawn side by side too');
  await screenshot(page, 'review-split');
  await form.locator(sel('review-cancel')).click();
  await form.waitFor({ state: 'detached' });
  await page.locator(sel('changes-view-unified')).click();
  await waitFor(async () => (await notes(page).locator(sel('changes-diff-body')).getAttribute('data-view')) === 'unified', { message: 'unified again' });

  // bob, on a page of his own, sees the draft with its author, and the marks.
  const contextB = await (await browser()).newContext({ viewport: { width: 1280, height: 800 } });
  onCleanup(() => contextB.close());
  const pageB = await contextB.newPage();
  pageB.setDefaultTimeout(10_000);
  pageB.on('pageerror', (err) => errors.push({ kind: 'pageerror', text: `[bob] ${err}` }));
  pageB.on('console', (m) => m.type() === 'error' && errors.push({ kind: 'console', text: `[bob] ${m.text()}` }));
  await openApp(pageB, server.url);
  await chooseName(pageB, 'bob');
  await tabById(pageB, s.id).click();
  await showChanges(pageB);
  await waitComments(pageB, 2, 'bob');
  assert.deepEqual(await drafted(pageB), [
    ['alice', 'notes.txt:2', ONE, false],
    ['alice', 'notes.txt:4-5', RANGE, false],
  ], 'bob sees alice\'s comments, and cannot remove them');
  assert.match(await lineCell(pageB, 4).getAttribute('title'), /by alice/);

  // bob comments too: alice sees it, cannot remove it; bob removes it.
  await lineCell(pageB, 1).click();
  await pageB.locator(sel('review-input')).fill(BOBS);
  await pageB.locator(sel('review-input')).press('Enter');
  await waitComments(page, 3, 'alice');
  assert.deepEqual((await drafted(page))[2], ['bob', 'notes.txt:1', BOBS, false], 'alice sees bob\'s comment, without a remove button');
  await screenshot(pageB, 'review-draft-other');
  await commentByText(pageB, BOBS).locator(sel('review-remove')).click();
  await waitComments(pageB, 2, 'bob');
  await waitComments(page, 2, 'alice');

  // A reload finds the draft as it was.
  const ids = await comments(page).evaluateAll((els) => els.map((e) => e.dataset.commentId));
  await reloadApp(page);
  await showChanges(page);
  await waitComments(page, 2, 'alice after a reload');
  assert.deepEqual(await comments(page).evaluateAll((els) => els.map((e) => e.dataset.commentId)), ids, 'the same comments');
  assert.deepEqual(await drafted(page), [
    ['alice', 'notes.txt:2', ONE, true],
    ['alice', 'notes.txt:4-5', RANGE, true],
  ], 'still alice\'s to remove');
  assert.match(await lineCell(page, 2).getAttribute('class'), /review-marked/, 'the lines marked again');

  // Send: one prompt, at once to the waiting agent, with each path:line and comment.
  await page.locator(sel('review-send')).click();
  await page.locator(`${sel('toast')}[data-kind="info"]`, { hasText: /Review sent/ }).waitFor({ state: 'visible' });
  await waitForLine(page, s.id, 'got:1. notes.txt:2', { timeout: 15_000 });
  await waitForLine(page, s.id, 'got:2. notes.txt:4-5', { timeout: 15_000 });
  await waitForLine(page, s.id, (l) => l === `got:   ${RANGE}`, { timeout: 15_000, message: 'the range\'s comment in the agent' });
  const got = (await terminalLines(page, s.id)).filter((l) => l.startsWith('got:'));
  for (const want of ['got:   > BETA', `got:   ${ONE}`, 'got:   > delta two', 'got:   > delta three', `got:   ${RANGE}`]) {
    assert.ok(got.includes(want), `the agent got "${want}":\n${showLines(got)}`);
  }
  const ack = frames.find((f) => f.type === 'prompt.queued.ack' && f.sessionId === s.id);
  assert.equal(ack?.position, 1, `the review's prompt was next in the queue: ${JSON.stringify(ack)}`);
  assert.ok(frames.some((f) => f.type === 'prompt.delivered' && f.promptId === ack.promptId), 'and was delivered');
  for (const [p, who] of [[page, 'alice'], [pageB, 'bob']]) await waitComments(p, 0, who);
  await page.locator(sel('review-hint')).waitFor({ state: 'visible' });
  assert.equal(await lineCell(page, 2).getAttribute('class').then((c) => /review-marked/.test(c ?? '')), false, 'no line marked once sent');
  await screenshot(page, 'review-sent');

  // By keyboard alone: the arrows move along the line numbers, Shift
  // extends the range, Enter opens the box, Enter adds.
  await lineCell(page, 1).focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('Shift+ArrowDown');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.line), '4', 'the focus moved down the line numbers');
  await page.keyboard.press('Enter');
  assert.equal(await form.locator(sel('review-form-where')).textContent(), 'notes.txt:3-4');
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'review-input', 'Enter put the focus in the box');
  await page.keyboard.type('one more');
  await page.keyboard.press('Enter');
  await waitComments(pageB, 1, 'bob');
  assert.deepEqual((await drafted(pageB))[0], ['alice', 'notes.txt:3-4', 'one more', false]);

  // Discard asks first; Cancel keeps the draft, Discard empties it for everyone.
  await page.locator(sel('review-discard')).click();
  const confirm = page.locator(sel('review-discard-confirm'));
  await confirm.waitFor({ state: 'visible' });
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'review-discard-no', 'Cancel has the focus');
  await page.keyboard.press('Enter');
  await confirm.waitFor({ state: 'hidden' });
  assert.equal(await comments(page).count(), 1, 'Cancel kept the draft');
  await page.locator(sel('review-discard')).click();
  await page.locator(sel('review-discard-yes')).click();
  for (const [p, who] of [[page, 'alice'], [pageB, 'bob']]) await waitComments(p, 0, who);
  assert.deepEqual(frames.filter((f) => f.type === 'error'), [], 'no error from the server');
});

// Issue 40, point 7: a session whose program is a plain shell never waits
// for a prompt as an agent does, and a review typed into it would run
// each line as a command. Send asks first; "Paste as comments" puts the
// review at the shell's prompt behind "# ", as one marked paste: it shows,
// and nothing in it runs, not even once the user presses Enter.
uiTest('review comments to a shell: asked first, pasted at its prompt as comments, and nothing runs', { setupWorkspace, timeout: 90_000 }, async ({ page, server, frames, screenshot: shot }) => {
  // A command of a shell's name is a shell as the shell profile is
  // (web/unit/models.test.ts covers the profile).
  const s = await server.createSession({ name: 'plain-shell', command: ['bash', '--norc', '--noprofile', '-i'] });
  await tabById(page, s.id).click();
  await waitForPrompt(page, s.id);
  await server.writeFile('notes.txt', AFTER);
  await showChanges(page);
  await lineCell(page, 2).click();
  const form = page.locator(sel('review-form'));
  await form.locator(sel('review-input')).fill('touch pwned-by-review');
  await form.locator(sel('review-input')).press('Enter');
  await waitComments(page, 1, 'the guest');

  await page.locator(sel('review-send')).click();
  const ask = page.locator(sel('review-shell-confirm'));
  await ask.waitFor({ state: 'visible' });
  assert.match(await ask.locator(sel('review-shell-text')).textContent(), /each line of the review would run as a command/);
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'review-shell-paste', 'Paste has the focus');
  await shot('review-shell-ask');
  await page.locator(sel('review-shell-paste')).click();
  await waitComments(page, 0, 'the guest');
  assert.ok(!frames.some((f) => f.type === 'prompt.queued' && f.sessionId === s.id), 'nothing was queued');

  await page.keyboard.press('Alt+1');
  await waitForLine(page, s.id, (l) => /# .*touch pwned-by-review/.test(l), { message: 'the review at the prompt, as a comment' });
  // Enter runs the pasted lines: comments, each of them.
  await typeCommand(page, '');
  await typeCommand(page, 'echo "after $((40 + 2))"');
  await waitForLine(page, s.id, 'after 42');
  await shot('review-shell-pasted');
  await assert.rejects(fs.access(path.join(server.workspace, 'pwned-by-review')), 'the comment ran nothing');
  const lines = await terminalLines(page, s.id);
  assert.ok(!lines.some((l) => /command not found|syntax error/.test(l)), `no line of the review ran as a command:\n${lines.join('\n')}`);
});
