// The answer card with the real Claude Code CLI (2.1.197), against the
// stand-in API (fake-anthropic.mjs), which answers a prompt with a Write of
// docs/plan.md: the card's reply field submits a prompt at Claude's input
// box (its Enter apart from the text, or Claude would take it for a line
// break), the permission card's Allow makes Claude write the file, and
// its Deny makes Claude reject the tool, each with the keys the real
// dialog takes.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { sel, tabById, waitFor, waitForLine } from './harness.mjs';
import { lastUserText } from './fake-anthropic.mjs';
import { claudeUiTest } from './claude-cli.mjs';

const PROMPT = 'Write the plan to docs/plan.md';
const PLAN = '# Plan\n\n1. Ask first.\n2. Then write.\n';
const TITLE = 'Claude wants to use Write on docs/plan.md';

let cwd = '';
await claudeUiTest(
  "the answer card drives the real Claude Code CLI: a reply is a prompt, Allow writes, Deny rejects",
  {
    reply: (body) => {
      const main = Array.isArray(body.tools) && body.tools.some((t) => t?.name === 'Write');
      if (main && cwd && lastUserText(body).includes(PROMPT)) {
        return { toolUse: { name: 'Write', input: { file_path: path.join(cwd, 'docs', 'plan.md'), content: PLAN } } };
      }
      return 'The plan is written.';
    },
    timeout: 180_000,
  },
  async ({ page, server, frames, screenshot }) => {
    const s = await server.createSession({ name: 'planner', agent: 'claude' });
    const id = s.id;
    cwd = s.cwd;
    await tabById(page, id).click();
    await waitForLine(page, id, (l) => /^\s*❯/.test(l), { timeout: 60_000, message: "Claude's input box" });
    const card = page.locator(sel('answer-card'));
    const plan = path.join(cwd, 'docs', 'plan.md');

    /** Sends the prompt from the card Claude shows at its prompt, and waits for the permission card. */
    const promptFromCard = async () => {
      await waitFor(async () => (await card.getAttribute('data-kind')) === 'question' && card.isVisible(), {
        timeout: 60_000, message: 'the card of Claude at its prompt',
      });
      await card.locator(sel('answer-reply')).fill(PROMPT);
      await card.locator(sel('answer-send')).click();
      await waitFor(async () => (await card.getAttribute('data-kind')) === 'permission' && card.isVisible(), {
        timeout: 60_000, message: 'the permission card',
      });
      assert.equal(await card.locator(sel('answer-title')).textContent(), TITLE);
      await waitForLine(page, id, /Do you want to create plan\.md\?/, { timeout: 30_000 });
    };

    await promptFromCard();
    await screenshot('claude-permission-card');
    await card.locator(sel('answer-allow')).click();
    await waitFor(() => existsSync(plan), { timeout: 30_000, message: `${plan} written` });
    assert.equal(await fs.readFile(plan, 'utf8'), PLAN);
    await waitForLine(page, id, /The plan is written\./, { timeout: 30_000 });

    // Again, on a fresh file, and denied: Claude rejects the tool.
    await fs.rm(plan);
    const from = frames.length;
    await promptFromCard();
    await card.locator(sel('answer-deny')).click();
    await waitForLine(page, id, /User rejected write to docs\/plan\.md/, { timeout: 30_000 });
    assert.ok(!existsSync(plan), 'nothing written after Deny');
    const mine = frames.slice(from).filter((f) => f.sessionId === id && f.type === 'session.status');
    assert.ok(mine.some((f) => f.status === 'active'), `the answer ended the wait: ${JSON.stringify(mine)}`);
  },
);
