// A permission prompt of the real Claude Code CLI, from outside: the
// stand-in API (fake-anthropic.mjs) answers a prompt with a Write of
// docs/plan.md, which Claude, running without bypassed permissions, asks the
// user to allow. Its PermissionRequest hook makes the session waiting within
// a second of the dialog showing, with a reason naming Write and the file, a
// `permission` field in session.status and session.needsInput, the header's
// permission note, the tab's tooltip and a browser notification saying the
// same. Allowing it ends the wait: the file is written, the note goes.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { recordNotifications, sel, tabById, waitFor, waitForLine, terminalLines, terminalPane } from './harness.mjs';
import { lastUserText } from './fake-anthropic.mjs';
import { claudeUiTest } from './claude-cli.mjs';

const NAME = "the real Claude Code CLI's permission prompt: waiting at once, naming the tool and the file";
const PROMPT = 'Write the plan to docs/plan.md';
const PLAN = '# Plan\n\n1. Ask first.\n2. Then write.\n';
const REASON = 'Claude wants to use Write on docs/plan.md';
const DONE = 'The plan is written.';
// Claude's dialog for a new file.
const DIALOG = /Do you want to create plan\.md\?/;
// The session must be waiting this soon after the dialog is on screen.
const WAITING_WITHIN_MS = 1000;

// The session's directory, known once it is created: the Write's path is absolute.
let cwd = '';
await claudeUiTest(
  NAME,
  {
    reply: (body) => {
      const main = Array.isArray(body.tools) && body.tools.some((t) => t?.name === 'Write');
      if (main && cwd && lastUserText(body).includes(PROMPT)) {
        return { toolUse: { name: 'Write', input: { file_path: path.join(cwd, 'docs', 'plan.md'), content: PLAN } } };
      }
      return DONE;
    },
    timeout: 180_000,
  },
  async ({ t, page, server, frames, screenshot, onCleanup, api, configDir }) => {
    onCleanup(() => t.diagnostic(`the stand-in saw: ${JSON.stringify(api.requests.map((r) => `${r.method} ${r.path} ${r.prompt.slice(0, 40)}`))}`));
    await recordNotifications(page, { hidden: true });

    const s = await server.createSession({ name: 'planner', agent: 'claude' });
    const id = s.id;
    cwd = s.cwd;
    await tabById(page, id).click();
    await waitFor(() => page.evaluate((i) => !!window.__agentmux.terminals.get(i), id), { message: `a terminal for ${id}` });
    await waitFor(() => frames.some((f) => f.type === 'session.status' && f.sessionId === id && f.status === 'waiting'), {
      timeout: 60_000,
      message: 'Claude at its prompt (SessionStart)',
    });
    await waitForLine(page, id, (l) => /^\s*❯/.test(l), { timeout: 60_000, message: "Claude's input box" });

    await terminalPane(page).click();
    await page.keyboard.type(PROMPT);
    await waitForLine(page, id, (l) => /^\s*❯/.test(l) && l.includes(PROMPT), { message: 'the prompt in the input box' });
    // (Claude at its prompt made one notification already.)
    await page.evaluate(() => (window.__notifications = []));
    const from = frames.length;
    await page.keyboard.press('Enter');

    // Watch the screen and the frames together, so the two times are
    // taken on one clock at the same granularity.
    const permissionFrame = () =>
      frames.slice(from).find((f) => f.type === 'session.status' && f.sessionId === id && f.status === 'waiting');
    let dialogAt;
    let waitingAt;
    await waitFor(
      async () => {
        if (dialogAt === undefined && ((await terminalLines(page, id)) ?? []).some((l) => DIALOG.test(l))) dialogAt = Date.now();
        if (waitingAt === undefined && permissionFrame()) waitingAt = Date.now();
        return dialogAt !== undefined && (waitingAt !== undefined || Date.now() - dialogAt > WAITING_WITHIN_MS + 2000);
      },
      { timeout: 60_000, interval: 25, message: `Claude's dialog ${DIALOG} on screen` },
    );
    t.diagnostic(`waiting came ${waitingAt === undefined ? 'not at all' : `${waitingAt - dialogAt} ms`} after the dialog showed`);
    assert.ok(waitingAt !== undefined && waitingAt - dialogAt <= WAITING_WITHIN_MS,
      `session.status waiting within ${WAITING_WITHIN_MS} ms of the dialog (${waitingAt === undefined ? 'none' : `${waitingAt - dialogAt} ms`}): ${JSON.stringify(frames.slice(from).filter((f) => f.sessionId === id))}`);
    const waiting = permissionFrame();
    assert.equal(waiting.reason, REASON);
    assert.deepEqual(waiting.permission, { tool: 'Write', summary: 'docs/plan.md' });
    const ni = await waitFor(() => frames.slice(from).find((f) => f.type === 'session.needsInput' && f.sessionId === id), { message: 'session.needsInput' });
    assert.deepEqual(ni.permission, { tool: 'Write', summary: 'docs/plan.md' });
    assert.ok(ni.message.includes(REASON), `needsInput message ${JSON.stringify(ni.message)}`);

    // The page says it: the header's note, the tab's tooltip, a notification.
    const note = page.locator(sel('permission'));
    await note.waitFor({ state: 'visible' });
    assert.equal(await note.locator(sel('permission-tool')).textContent(), 'Write');
    assert.equal(await note.locator(sel('permission-summary')).textContent(), 'docs/plan.md');
    assert.equal(await note.getAttribute('title'), REASON);
    const tab = tabById(page, id);
    assert.equal(await tab.getAttribute('data-status'), 'waiting');
    assert.match(await tab.getAttribute('title'), new RegExp(REASON));
    const notes = await waitFor(async () => {
      const n = await page.evaluate(() => window.__notifications);
      return n.length > 0 && n;
    }, { message: 'a browser notification' });
    assert.deepEqual(notes, [{ title: 'planner asks to use Write', body: 'docs/plan.md' }]);
    await screenshot('permission-prompt');

    // Allowing it (the dialog's first choice) ends the wait: active, the
    // note gone, the file written, and the turn ends waiting at the prompt.
    const answered = frames.length;
    await terminalPane(page).click();
    await page.keyboard.press('1');
    const active = await waitFor(() => frames.slice(answered).find((f) => f.type === 'session.status' && f.sessionId === id && f.status === 'active'), {
      message: 'session.status active after the answer',
    });
    assert.equal(active.permission, undefined);
    await note.waitFor({ state: 'hidden' });
    const plan = path.join(cwd, 'docs', 'plan.md');
    await waitFor(() => existsSync(plan), { timeout: 30_000, message: `${plan} written` });
    assert.equal(await fs.readFile(plan, 'utf8'), PLAN);
    const finished = await waitFor(
      () => frames.slice(answered).find((f) => f.type === 'session.status' && f.sessionId === id && f.status === 'waiting'),
      { timeout: 30_000, message: 'waiting at the prompt after the turn' },
    );
    assert.equal(finished.permission, undefined, `the turn's end is no permission request: ${JSON.stringify(finished)}`);
    assert.ok(await note.isHidden());
  },
);
