// Issue 15: several people on one agent. Two pages (two browser contexts,
// so two people with their own localStorage) pick names and colours, see
// each other on the session's tab and in its header, queue prompts that
// both see with their author, remove only their own, and watch the agent
// take them one per waiting period. A hostile name stays text. Typing
// into a stopped session says "resuming…", wakes it, and the keys arrive;
// a wake that cannot start says so once.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  uiTest, sel, browser, openApp, tabById, waitFor, waitForLine, terminalLines, terminalPane, screenshot,
} from './harness.mjs';

const HOSTILE = '<img src=x onerror=alert(1)>';
const ALICE_COLOR = '#98c379';

// Busy until the test creates ./go, then waits (a bell), and after each
// line it reads, echoes it and waits again.
const AGENT = ['sh', '-c', 'while [ ! -e go ]; do sleep 0.1; done; printf "ready\\a"; while IFS= read -r l; do echo "got:$l"; printf "\\a"; done'];

/** A second person: a page in a context of its own, its errors and dialogs recorded like the first's. */
async function secondPage({ server, errors, onCleanup }, dialogs) {
  const b = await browser();
  const context = await b.newContext({ viewport: { width: 1280, height: 800 } });
  onCleanup(() => context.close());
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  watch(page, errors, dialogs, 'B');
  await openApp(page, server.url);
  return page;
}

function watch(page, errors, dialogs, who) {
  page.on('console', (msg) => {
    if (msg.type() === 'error') errors.push({ kind: 'console', text: `[${who}] ${msg.text()}` });
  });
  page.on('pageerror', (err) => errors.push({ kind: 'pageerror', text: `[${who}] ${err}` }));
  page.on('dialog', (d) => {
    dialogs.push(`${who}: ${d.message()}`);
    void d.dismiss();
  });
}

/** Opens the "you" editor, types a name, picks a colour, saves; returns the editor's error text, or null once it closed. */
async function chooseName(page, name, color) {
  const you = page.locator(sel('you'));
  const editor = page.locator(sel('identity'));
  if (!(await editor.isVisible())) await you.click();
  await editor.waitFor({ state: 'visible' });
  await editor.locator(sel('identity-name')).fill(name);
  if (color) await editor.locator(`${sel('identity-color')}[data-color="${color}"]`).click();
  await editor.locator(sel('identity-save')).click();
  const error = editor.locator(sel('identity-error'));
  await waitFor(async () => (await editor.isHidden()) || (await error.isVisible()), { message: `the editor to close or refuse "${name}"` });
  return (await error.isVisible()) ? error.textContent() : null;
}

const avatarOn = (scope, name) => scope.locator(`${sel('avatar')}[data-name="${name.replace(/["\\]/g, '\\$&')}"]`);

/** Queues a prompt from the session's queue panel (opening it), with Ctrl+Enter. */
async function queuePrompt(page, text) {
  const panel = page.locator(sel('queue'));
  if (!(await panel.isVisible())) await page.locator(sel('queue-toggle')).click();
  await panel.waitFor({ state: 'visible' });
  const input = panel.locator(sel('queue-input'));
  await input.fill(text);
  await input.press('Control+Enter');
  await waitFor(async () => (await input.inputValue()) === '', { message: `the queue box emptied once "${text}" was taken` });
}

const items = (page) => page.locator(sel('queue-item'));
const itemByText = (page, text) => items(page).filter({ has: page.locator(sel('queue-text'), { hasText: text }) });

uiTest('two people on one agent: names, avatars on the tab, a shared prompt queue delivered when the agent waits', { timeout: 120_000 }, async (fx) => {
  const { page, server, frames } = fx;
  const dialogs = [];
  page.on('dialog', (d) => {
    dialogs.push(`A: ${d.message()}`);
    void d.dismiss();
  });
  const pageB = await secondPage(fx, dialogs);

  // Each page is a guest until it picks a name; the server's refusal of a
  // bad one shows in the editor, which stays open.
  await waitFor(async () => /^guest-/.test((await page.locator(sel('you')).getAttribute('data-name')) ?? ''), { message: 'page A is a guest at first' });
  const refused = await chooseName(page, 'ali\u200bce');
  assert.match(refused ?? '', /refused/i, `a name with a zero-width space is refused, and the editor says so: ${refused}`);
  await screenshot(page, 'participants-name-refused');
  assert.equal(await chooseName(page, 'alice', ALICE_COLOR), null, 'alice is taken');
  assert.equal(await chooseName(pageB, HOSTILE), null, 'any printable name is taken, markup included');
  await waitFor(async () => (await page.locator(sel('you')).getAttribute('data-name')) === 'alice', { message: 'page A is alice' });

  // Both open the session: each sees the other on its tab, and both in the header.
  const s = await server.createSession({ name: 'shared', command: AGENT });
  for (const p of [page, pageB]) {
    await tabById(p, s.id).click();
    await waitFor(() => p.evaluate((id) => window.__agentmux.activeSessionId() === id, s.id), { message: 'the shared session on screen' });
  }
  const tabA = tabById(page, s.id);
  const tabB = tabById(pageB, s.id);
  await avatarOn(tabA.locator(sel('tab-people')), HOSTILE).waitFor({ state: 'visible' });
  await avatarOn(tabB.locator(sel('tab-people')), 'alice').waitFor({ state: 'visible' });
  assert.equal(await tabA.locator(sel('avatar')).count(), 1, 'a tab shows the others, not oneself');
  assert.equal(await avatarOn(tabB, 'alice').getAttribute('data-viewing'), 'true', 'alice views the session');
  const aliceStyle = await avatarOn(tabB, 'alice').evaluate((el) => el.style.getPropertyValue('--avatar'));
  assert.equal(aliceStyle, ALICE_COLOR, 'alice shows in her colour');
  const header = page.locator(sel('session-people'));
  await waitFor(async () => (await header.locator(sel('avatar')).count()) === 2, { message: 'both in page A\'s header' });
  assert.equal(await header.locator(`${sel('avatar')}[data-me="true"]`).getAttribute('data-name'), 'alice');

  // The hostile name is text wherever it shows.
  const hostileAvatar = avatarOn(tabA, HOSTILE);
  assert.match(await hostileAvatar.getAttribute('title'), new RegExp(`^${HOSTILE.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  assert.equal(await page.evaluate(() => document.querySelectorAll('img').length), 0, 'no <img> made from a name');

  // Prompts: two from alice, one from the other; each sees them all with their authors.
  const first = 'Now add tests for the parser';
  const second = 'then run them';
  const third = 'a prompt to take back';
  await queuePrompt(page, first);
  const ack = page.locator(sel('queue-ack'));
  await waitFor(async () => /next|#1/.test((await ack.textContent()) ?? ''), { message: 'the ack says the prompt goes in next' });
  await queuePrompt(pageB, second);
  await waitFor(async () => /#2/.test((await pageB.locator(sel('queue-ack')).textContent()) ?? ''), { message: 'B\'s ack gives position 2' });
  await queuePrompt(page, third);
  for (const p of [page, pageB]) {
    await waitFor(async () => (await items(p).count()) === 3, { message: 'three prompts in the queue on both pages' });
    assert.deepEqual(await items(p).locator(sel('queue-text')).allTextContents(), [first, second, third], 'in the order queued');
    assert.deepEqual(
      (await items(p).locator(sel('queue-author')).allTextContents()).map((t) => t.replace(/ \(you\)$/, '')),
      ['alice', HOSTILE, 'alice'],
      'each with its author',
    );
  }
  // One's own prompt goes at once; someone else's only after a question naming whose it is.
  const label = (p, text) => itemByText(p, text).locator(sel('queue-remove')).getAttribute('aria-label');
  assert.equal(await label(page, first), 'Remove your prompt from the queue', 'alice removes hers at once');
  assert.equal(await label(pageB, second), 'Remove your prompt from the queue', 'B removes its own at once');
  assert.equal(await label(pageB, first), 'Remove alice’s prompt from the queue…', 'B can remove alice\'s, after a question');
  await itemByText(pageB, third).locator(sel('queue-remove')).click();
  const ask = itemByText(pageB, third).locator(sel('queue-confirm'));
  await ask.waitFor({ state: 'visible' });
  assert.match(await ask.locator(sel('queue-confirm-text')).textContent(), /^Remove alice’s prompt\?/, 'the question names the author');
  assert.equal(await pageB.evaluate(() => document.activeElement?.dataset.testid), 'queue-confirm-keep', 'Keep has the focus: Enter does not remove');
  await pageB.keyboard.press('Enter');
  await ask.waitFor({ state: 'detached' });
  assert.equal(await itemByText(page, third).count(), 1, 'kept: alice\'s prompt is still queued');
  assert.equal(await page.evaluate(() => document.querySelectorAll('img').length), 0, 'no <img> made from the queue');
  await screenshot(page, 'participants-queue');
  await screenshot(pageB, 'participants-queue-other');

  // alice takes one back: it leaves both queues.
  await itemByText(page, third).locator(sel('queue-remove')).click();
  for (const p of [page, pageB]) {
    await waitFor(async () => (await itemByText(p, third).count()) === 0, { message: 'the removed prompt gone on both pages' });
  }
  assert.ok(frames.some((f) => f.type === 'prompt.dequeued' && f.sessionId === s.id), 'prompt.dequeued came');

  // A reload keeps alice: her name, her colour, and her key, so her prompt is still hers to remove.
  await openApp(page, server.url);
  await waitFor(async () => (await page.locator(sel('you')).getAttribute('data-name')) === 'alice', { message: 'still alice after a reload' });
  await itemByText(page, first).waitFor({ state: 'visible' }); // the queue panel stays open
  assert.equal(await itemByText(page, first).locator(sel('queue-remove')).count(), 1, 'alice can still remove hers');
  await avatarOn(tabB, 'alice').waitFor({ state: 'visible' });

  // The agent waits: it gets the first prompt, waits again, gets the second.
  await server.writeFile('go', '');
  await waitForLine(page, s.id, `got:${first}`, { timeout: 15_000 });
  await waitForLine(pageB, s.id, `got:${second}`, { timeout: 15_000 });
  for (const p of [page, pageB]) {
    await waitFor(async () => (await items(p).count()) === 0, { message: 'both prompts left the queue on both pages' });
  }
  const lines = (await terminalLines(page, s.id)).filter((l) => l.startsWith('got:'));
  assert.deepEqual(lines, [`got:${first}`, `got:${second}`], 'each prompt delivered once, in order');
  const delivered = frames.filter((f) => f.type === 'prompt.delivered' && f.sessionId === s.id);
  assert.equal(delivered.length, 2, `two prompt.delivered: ${JSON.stringify(delivered)}`);

  // B types into the agent: alice sees who typed last.
  await terminalPane(pageB).click();
  await pageB.keyboard.type('hi');
  await pageB.keyboard.press('Enter');
  await waitForLine(page, s.id, 'got:hi');
  await waitFor(async () => (await avatarOn(tabA, HOSTILE).getAttribute('data-last-typed')) === 'true', { message: 'B marked as the last to type, on alice\'s tab' });
  const hint = page.locator(sel('typing-hint'));
  await waitFor(async () => (await hint.textContent())?.includes(HOSTILE), { message: 'the header says who typed' });
  await screenshot(page, 'participants-typed');

  // B leaves: alice's tab no longer shows it.
  await pageB.close();
  await waitFor(async () => (await tabA.locator(sel('avatar')).count()) === 0, { message: 'B gone from alice\'s tab once its page closed' });
  assert.deepEqual(dialogs, [], 'no dialog opened (no name or prompt ran as script)');
});

// Issue 40, point 4: a guest who never chose a name is the same person
// after every reload (the key in its storage names it), so its queued
// prompt stays its own. A browser whose storage was cleared is someone
// new, and the prompt the old identity left can still go: anyone may
// remove it after a question that names whose it is.
uiTest('a guest keeps its name over reloads, and a prompt left by an identity that is gone can be removed after a question', { timeout: 90_000 }, async (fx) => {
  const { page, server, frames } = fx;
  const s = await server.createSession({ name: 'busy', command: AGENT }); // never waits: the prompt stays queued
  await tabById(page, s.id).click();
  const you = page.locator(sel('you'));
  await waitFor(async () => /^guest-/.test((await you.getAttribute('data-name')) ?? ''), { message: 'a guest at first' });
  const guest = await you.getAttribute('data-name');
  const text = 'left by a guest who reloads';
  await queuePrompt(page, text);
  await waitFor(async () => (await itemByText(page, text).getAttribute('data-mine')) === 'true', { message: 'the prompt is the guest\'s' });

  for (let i = 1; i <= 3; i++) {
    await openApp(page, server.url);
    await waitFor(async () => (await you.getAttribute('data-name')) === guest, { message: `still ${guest} after reload ${i}` });
    await waitFor(async () => (await itemByText(page, text).getAttribute('data-mine')) === 'true', { message: `the prompt still the guest's after reload ${i}` });
    assert.equal(await itemByText(page, text).locator('.queue-you').isVisible(), true, `"you" on the prompt after reload ${i}`);
  }

  // Storage cleared: a new person, and the old prompt is someone else's.
  await page.evaluate(() => localStorage.clear());
  await openApp(page, server.url);
  await waitFor(async () => {
    const name = (await you.getAttribute('data-name')) ?? '';
    return /^guest-/.test(name) && name !== guest;
  }, { message: 'a new guest once storage is cleared' });
  if (!(await page.locator(sel('queue')).isVisible())) await page.locator(sel('queue-toggle')).click();
  const item = itemByText(page, text);
  await waitFor(async () => (await item.getAttribute('data-mine')) === 'false', { message: 'the old prompt is no longer this browser\'s' });
  await item.locator(sel('queue-remove')).click();
  const ask = item.locator(sel('queue-confirm'));
  await ask.waitFor({ state: 'visible' });
  assert.equal(await ask.locator(sel('queue-confirm-text')).textContent(),
    `Remove ${guest}’s prompt? It is theirs, not yours: it will not be typed into the agent.`);
  await screenshot(page, 'participants-remove-others-prompt');
  await ask.locator(sel('queue-confirm-remove')).click();
  await item.waitFor({ state: 'detached' });
  assert.ok(frames.some((f) => f.type === 'prompt.dequeued' && f.sessionId === s.id), 'prompt.dequeued came');
  // Gone from the server's queue too: a new page's list has no such prompt.
  await openApp(page, server.url);
  await waitFor(() => page.evaluate(() => !!window.__agentmux.activeSessionId()), { message: 'the session on screen after a reload' });
  await page.locator('#queue-empty').waitFor({ state: 'visible' });
  assert.equal(await itemByText(page, text).count(), 0, 'the prompt is gone for everyone');
});

uiTest('typing into a stopped session says "resuming…", wakes it, and the keys arrive once', { timeout: 60_000 }, async ({ page, server, frames, screenshot: shot }) => {
  // The first run ends at once; the resumed run reads lines.
  const marker = path.join(server.workspace, '.woke');
  const script = `if [ -e '${marker}' ]; then echo second-run; while IFS= read -r l; do echo "got:$l"; done; else : > '${marker}'; echo first-run; fi`;
  const s = await server.createSession({ name: 'sleeper', command: ['sh', '-c', script] });
  const tab = tabById(page, s.id);
  await tab.click();
  await waitForLine(page, s.id, 'first-run');
  await waitFor(async () => (await tab.getAttribute('data-status')) === 'stopped', { message: 'the first run ended: stopped' });
  await page.locator(`${sel('resume')} >> visible=true`).first().waitFor({ state: 'visible' });

  // Record every state of the indicator, from before the first key.
  await page.evaluate((s) => {
    const seen = (window.__resuming = []);
    const record = () => {
      const el = document.querySelector(s);
      const state = el && el.getClientRects().length > 0 ? el.textContent.trim() : '-';
      if (seen[seen.length - 1] !== state) seen.push(state);
    };
    record();
    new MutationObserver(record).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  }, sel('resuming'));
  // And every message the page sends.
  await page.evaluate(() => {
    window.__sent = [];
    const send = WebSocket.prototype.send;
    WebSocket.prototype.send = function (data) {
      window.__sent.push(String(data));
      return send.call(this, data);
    };
  });
  const from = frames.length;
  await terminalPane(page).click();
  // Ctrl+C alone does not wake it (nor is it sent); typing does.
  await page.keyboard.press('Control+c');
  await page.keyboard.type('wake up');
  await page.keyboard.press('Enter');
  await page.locator(sel('resuming')).waitFor({ state: 'visible' });
  await shot('resuming');
  await waitForLine(page, s.id, 'got:wake up', { timeout: 15_000 });
  await page.locator(sel('resuming')).waitFor({ state: 'hidden' });
  await waitFor(async () => (await tab.getAttribute('data-status')) !== 'stopped', { message: 'the session runs again' });
  assert.equal(await page.locator(`${sel('resume')} >> visible=true`).count(), 0, 'no Resume button once it runs');
  const seen = await page.evaluate(() => window.__resuming);
  assert.deepEqual(seen.filter((x) => x !== '-'), ['resuming…'], `the indicator showed "resuming…", once: ${JSON.stringify(seen)}`);
  const lines = await terminalLines(page, s.id);
  assert.equal(lines.filter((l) => l === 'got:wake up').length, 1, `the keys arrived exactly once:\n${lines.filter(Boolean).join('\n')}`);
  assert.equal(lines.filter((l) => l === 'second-run').length, 1, 'one resumed run');
  const typed = (await page.evaluate(() => window.__sent))
    .map((d) => JSON.parse(d))
    .filter((m) => m.type === 'terminal.input' && m.sessionId === s.id)
    .map((m) => m.data);
  assert.equal(typed.join(''), 'wake up\r', `the keys sent, and no Ctrl+C: ${JSON.stringify(typed)}`);
  const mine = frames.slice(from).filter((f) => f.sessionId === s.id);
  assert.ok(mine.some((f) => f.type === 'session.status' && f.running === true), `a session.status running: ${JSON.stringify(mine)}`);
  assert.deepEqual(mine.filter((f) => f.type === 'error'), [], 'no error');
});

uiTest('a stopped session that cannot start again: typing says so once', { timeout: 60_000 }, async ({ t, page, server, frames }) => {
  // The agent is a script that deletes itself: its resume cannot start.
  const agent = await server.writeFile('agent.sh', '#!/bin/sh\nrm -- "$0"\necho gone-for-good\n');
  await fs.chmod(agent, 0o755);
  const s = await server.createSession({ name: 'gone', command: [agent] });
  const tab = tabById(page, s.id);
  await tab.click();
  await waitForLine(page, s.id, 'gone-for-good');
  await waitFor(async () => (await tab.getAttribute('data-status')) === 'stopped', { message: 'stopped' });

  await terminalPane(page).click();
  await page.keyboard.type('abc');
  const toasts = page.locator(`${sel('toast')}[data-kind="error"]`);
  await toasts.first().waitFor({ state: 'visible' });
  // Each key on its way got the error back from the server; the page shows one.
  await waitFor(async () => (await tab.getAttribute('data-status')) === 'error', { message: 'the failed resume leaves the session in error' });
  await page.locator(sel('resuming')).waitFor({ state: 'hidden' });
  const errs = frames.filter((f) => f.type === 'error' && f.sessionId === s.id);
  t.diagnostic(`errors from the server: ${errs.length}`);
  assert.ok(errs.length >= 1 && errs.every((e) => e.code === 'PTY_SPAWN_FAILED'), `PTY_SPAWN_FAILED for the keys: ${JSON.stringify(errs)}`);
  assert.equal(await toasts.count(), 1, `one error shown: ${JSON.stringify(await toasts.allTextContents())}`);
  assert.match(await toasts.first().textContent(), /dropped/, 'it says the keys were dropped');
  await screenshot(page, 'resume-failed');
});
