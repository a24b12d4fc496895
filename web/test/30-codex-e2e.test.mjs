// End to end with the real Codex CLI (the npm package @openai/codex, a
// devDependency of these tests) against a local stand-in of the OpenAI
// Responses API (fake-openai.mjs): a `codex` session gets a prompt typed in
// the page, the stand-in answers, and Codex's notify program (agentmux hook,
// set by the codex profile for the run) reports the end of the turn, so the
// session waits within moments of it; the next prompt makes it active, and
// its end makes it wait again.
//
// Codex runs with a throwaway CODEX_HOME whose config.toml has the stand-in
// as its only model provider, the workspace trusted and update checks and
// analytics off: it talks to nothing but the stand-in. The notify program is
// not in that file: agentmux passes it on the command line.
import assert from 'node:assert/strict';
import { tabById, waitFor, waitForLine, terminalLines, terminalPane } from './harness.mjs';
import { codexUiTest } from './codex-cli.mjs';

const NAME = "the real Codex CLI: a prompt, the stand-in's reply, and its notify program reports waiting";

const FINISHED = 'Codex finished its turn and waits for your next prompt';
const PROMPTS = ['What colour is the sky today', 'And the grass'];
const REPLIES = ['The stand-in says the sky is green today.', 'The stand-in says the grass is blue.'];
/** How soon after the stand-in's last answer of a turn the session must wait. */
const PROMPTLY_MS = 3_000;


await codexUiTest(
  NAME,
  { reply: (body) => REPLIES[PROMPTS.findLastIndex((p) => JSON.stringify(body?.input ?? '').includes(p))] ?? 'A title' },
  async ({ t, page, server, frames, screenshot, onCleanup, api }) => {
    const statusFrames = (id, from = 0) => frames.slice(from).filter((f) => f.type === 'session.status' && f.sessionId === id);
    const waitStatus = async (id, status, reason, from = 0, timeout = 30_000) =>
      waitFor(() => statusFrames(id, from).find((f) => f.status === status && (reason === undefined || f.reason === reason)), {
        timeout,
        interval: 20,
        message: `session.status ${status}${reason ? ` "${reason}"` : ''} for ${id}`,
      });
    const tabStatus = async (id, status, timeout = 30_000) =>
      waitFor(async () => (await tabById(page, id).getAttribute('data-status')) === status, { timeout, message: `tab ${id} data-status ${status}` });
    const diagnostic = () =>
      `the stand-in saw: ${JSON.stringify(api.requests.map((r) => `${r.method} ${r.path} ${JSON.stringify(r.prompt.slice(0, 60))}`))}`;
    let id;
    onCleanup(async () => {
      t.diagnostic(diagnostic());
      if (id) t.diagnostic(`Codex's screen: ${JSON.stringify(await terminalLines(page, id).catch(() => null))}`);
    });

    const s = await server.createSession({ name: 'codex', agent: 'codex' });
    id = s.id;
    assert.equal(s.agent, 'codex');
    const c = s.command.indexOf('-c');
    assert.ok(c > 0 && /^notify=\[".*","hook"\]$/.test(s.command[c + 1]), `the start command sets the notify program: ${JSON.stringify(s.command)}`);
    await tabById(page, id).click();
    await waitFor(() => page.evaluate((i) => !!window.__agentmux.terminals.get(i), id), { message: `a terminal for ${id}` });
    // Codex's composer: its placeholder or hint line, once past start-up.
    await waitFor(
      async () => ((await terminalLines(page, id)) ?? []).some((l) => /^\s*›/.test(l)),
      { timeout: 60_000, message: `Codex's composer ("›") in ${id}` },
    );
    await screenshot('codex-1-started');

    let spent = 0; // the conversation's input tokens so far, as Codex recorded them
    for (const [n, prompt] of PROMPTS.entries()) {
      const from = frames.length;
      await terminalPane(page).click();
      await page.keyboard.type(prompt);
      await waitForLine(page, id, (l) => l.includes(prompt), { message: `"${prompt}" in Codex's composer` });
      await page.keyboard.press('Enter');
      if (n > 0) {
        // The user's input ended the wait of the turn before.
        await waitStatus(id, 'active', undefined, from);
      }
      await waitForLine(page, id, (l) => l.includes(REPLIES[n]), { timeout: 30_000, message: `the stand-in's reply in ${id}` });
      const waiting = await waitStatus(id, 'waiting', FINISHED, from);
      const seen = Date.now();
      await tabStatus(id, 'waiting');
      const answered = await waitFor(() => {
        const turn = api.requests.filter((r) => r.prompt === prompt && r.endedAt);
        return turn.length && Math.max(...turn.map((r) => r.endedAt));
      }, { message: `the stand-in answered "${prompt}"; ${diagnostic()}` });
      const late = seen - answered;
      t.diagnostic(`turn ${n + 1}: waiting (${JSON.stringify(waiting.reason)}) ${late} ms after the stand-in's answer`);
      assert.ok(late < PROMPTLY_MS, `waiting ${late} ms after the turn's end, want under ${PROMPTLY_MS} ms`);
      assert.deepEqual(
        statusFrames(id, from).map((f) => f.status).slice(-1),
        ['waiting'],
        `the turn ends waiting: ${JSON.stringify(statusFrames(id, from))}`,
      );
      // What the turn spent, from Codex's own record (its rollout's
      // token_count), read at the turn's end: more input tokens than
      // before, in the stand-in's steps of 42, and no cost (Codex gives
      // none).
      const usage = await waitFor(async () => {
        const { body } = await server.api(`api/sessions/${id}`);
        const u = body.session.usage;
        return u?.inputTokens > spent ? u : null;
      }, { timeout: 10_000, message: `turn ${n + 1}'s usage from Codex's rollout` });
      assert.equal(usage.source, 'codex-rollout');
      assert.ok(usage.inputTokens % 42 === 0 && usage.outputTokens > 0 && usage.contextSize > 0 && usage.costUsd === undefined, JSON.stringify(usage));
      spent = usage.inputTokens;
      await screenshot(`codex-${n + 2}-replied`);
    }
  },
);
