// Issue 41, point 7, with the real Claude Code CLI against the stand-in
// API (fake-anthropic.mjs): a Node project whose check is `npm test`
// (node's test runner) that lacks sum.js, so the first turn's check
// fails. Claude, asked to write sum.js, writes a version that breaks the
// test: that turn's check fails too and says so on the tab and in the
// timeline. With "Send failed checks to the agent" on, the failure
// reaches Claude as a prompt with the test's output; the stand-in's
// answer to it fixes the file, and that turn's check passes.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { sel, tabById, waitFor, waitForLine, git, initGitRepo } from './harness.mjs';
import { lastUserText } from './fake-anthropic.mjs';
import { claudeUiTest } from './claude-cli.mjs';

const PROMPT = 'Write sum.js';
const BROKEN = 'module.exports = (a, b) => a - b;\n';
const FIXED = 'module.exports = (a, b) => a + b;\n';

async function setupWorkspace(ws) {
  await initGitRepo(ws);
  await git(ws, 'config', 'user.name', 'Check Tester');
  await git(ws, 'config', 'user.email', 'checks@example.test');
  await fs.writeFile(path.join(ws, 'package.json'), JSON.stringify({ name: 'summer', version: '1.0.0', private: true, scripts: { test: 'node --test' } }, null, 2));
  // No sum.js yet: Claude's Write makes it (its Write refuses to replace
  // a file it has not read).
  await fs.writeFile(path.join(ws, 'sum.test.js'), "const test = require('node:test');\nconst assert = require('node:assert');\nconst sum = require('./sum');\ntest('adds', () => assert.strictEqual(sum(2, 2), 4));\n");
  // Edits need no permission dialog here: the test is about the check.
  await fs.mkdir(path.join(ws, '.claude'));
  await fs.writeFile(path.join(ws, '.claude', 'settings.json'), JSON.stringify({ permissions: { allow: ['Write', 'Edit'], defaultMode: 'acceptEdits' } }));
  await git(ws, 'add', '.');
  await git(ws, 'commit', '-q', '-m', 'a project with a test');
}

let cwd = '';
await claudeUiTest(
  'the real Claude Code CLI: a turn that breaks the test fails its check, the failure goes back to Claude, and the fix passes',
  {
    flags: ['--check-script', 'npm test'],
    setupWorkspace,
    timeout: 240_000,
    reply: (body) => {
      const main = Array.isArray(body.tools) && body.tools.some((t) => t?.name === 'Write');
      const said = lastUserText(body);
      if (main && cwd && said.includes(PROMPT)) return { toolUse: { name: 'Write', input: { file_path: path.join(cwd, 'sum.js'), content: BROKEN } } };
      if (main && cwd && said.includes("The workspace's check failed")) return { toolUse: { name: 'Write', input: { file_path: path.join(cwd, 'sum.js'), content: FIXED } } };
      return 'Done: sum.js is written.';
    },
  },
  async ({ page, server, api, screenshot }) => {
    const s = await server.createSession({ name: 'summer', agent: 'claude' });
    cwd = s.cwd;
    await tabById(page, s.id).click();
    await waitForLine(page, s.id, (l) => /^\s*❯/.test(l), { timeout: 60_000, message: "Claude's input box" });
    const mark = tabById(page, s.id).locator(sel('tab-check'));
    // Claude at its prompt ended the first turn: without sum.js the test fails.
    await waitFor(async () => (await mark.getAttribute('data-status')) === 'failed', { timeout: 60_000, message: 'the first turn\'s check failing' });

    const { status } = await server.api(`api/sessions/${s.id}`, { method: 'PATCH', body: JSON.stringify({ sendFailures: true }) });
    assert.equal(status, 200);
    const { status: queued } = await server.api(`api/sessions/${s.id}/input`, { method: 'POST', body: JSON.stringify({ data: PROMPT }) });
    assert.equal(queued, 204);
    await server.api(`api/sessions/${s.id}/input`, { method: 'POST', body: JSON.stringify({ data: '\r' }) });

    // The broken turn fails, and its output goes to Claude as a prompt.
    await waitFor(() => api.requests.some((r) => r.userText?.includes("The workspace's check failed with exit code 1")), {
      timeout: 90_000, message: 'the failure reaching the stand-in as a prompt',
    });
    const sent = api.requests.find((r) => r.userText?.includes("The workspace's check failed"));
    assert.match(sent.userText, /not ok 1 - adds/, 'the prompt holds the test\'s output');
    assert.match(sent.userText, /Expected values to be strictly equal:\s+0 !== 4/, 'with the assertion that failed');
    // The fix passes.
    await waitFor(async () => (await fs.readFile(path.join(cwd, 'sum.js'), 'utf8')) === FIXED, { timeout: 60_000, message: 'the fix written' });
    await waitFor(async () => {
      const { body } = await server.api(`api/sessions/${s.id}/checkpoints`);
      const checks = body.checkpoints.map((cp) => cp.check?.status ?? 'none');
      return checks.length >= 3 && checks.at(-1) === 'passed' && checks;
    }, { timeout: 90_000, message: 'the failed turns, then a passing one' });
    const { body } = await server.api(`api/sessions/${s.id}/checkpoints`);
    assert.deepEqual(body.checkpoints.map((cp) => cp.check?.status), ['failed', 'failed', 'passed']);
    await waitFor(async () => (await mark.getAttribute('data-status')) === 'passed', { message: 'the tab passing again' });

    await page.locator(sel('layout-changes')).click();
    await page.locator(sel('ship-checkpoints')).click();
    const failed = page.locator(`${sel('checkpoint-check')}[data-status=failed]`).first();
    await failed.waitFor();
    assert.match(await failed.textContent(), /check failed \(exit 1\)/);
    await screenshot('53-claude-check-timeline');
  },
);
