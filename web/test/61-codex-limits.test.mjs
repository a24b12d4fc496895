// Issue 43 with the real Codex CLI against the stand-in Responses API
// (fake-openai.mjs), which reports each answer's usage and the account's
// windows in Codex's headers, then refuses a turn at the usage limit.
// Each turn's tokens, from Codex's rollout, add up to the session's; the
// refused turn (which Codex does not notify) makes the session limited,
// with the reset its record gives; at the reset (plus a 2 s margin)
// agentmux closes the model-switch dialog Codex opens near a limit and
// types "continue", once, which reaches the API.
import assert from 'node:assert/strict';
import { sel, tabById, waitFor, waitForLine, terminalLines, terminalPane } from './harness.mjs';
import { codexUiTest } from './codex-cli.mjs';
import { lastUserText } from './fake-openai.mjs';

const NAME = 'the real Codex CLI: usage per turn, a usage limit it does not notify, and continuing at its reset';

const now = Math.floor(Date.now() / 1000);

await codexUiTest(
  NAME,
  {
    reply: (body) => `Answered: ${/(first|second) question|continue/.exec(lastUserText(body))?.[0] ?? 'a title'}`,
    usage: (n) => ({ input_tokens: 1000 * n, cached_tokens: 0, output_tokens: 10 * n, reasoning_tokens: 0 }),
    limits: { primary: { usedPercent: 42.5, windowMinutes: 300, resetAt: now + 4 * 3600 }, secondary: { usedPercent: 17, windowMinutes: 10080, resetAt: now + 100 * 3600 } },
    flags: ['--continue-margin', '2s'],
    // Codex, refused, opens a port of its own; agentmux follows the
    // agent's new port into the preview, where Codex's server answers
    // 401: Codex's answer to a page it did not expect, not agentmux's.
    allowConsole: [/Failed to load resource: the server responded with a status of 401 \(Unauthorized\)/],
    timeout: 240_000,
  },
  async ({ t, page, server, frames, screenshot, onCleanup, api }) => {
    const getSession = async (id) => {
      const { status, body } = await server.api(`api/sessions/${id}`);
      assert.equal(status, 200, `GET /api/sessions/${id}: ${status} ${JSON.stringify(body)}`);
      return body.session;
    };
    const responses = () => api.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/responses'));
    let id;
    onCleanup(async () => {
      t.diagnostic(`the stand-in saw: ${JSON.stringify(responses().map((r) => [r.status, r.prompt.slice(0, 40)]))}`);
      if (id) t.diagnostic(`Codex's screen: ${JSON.stringify(await terminalLines(page, id).catch(() => null))}`);
    });
    const type = async (text) => {
      await terminalPane(page).click();
      await page.keyboard.type(text);
      await waitForLine(page, id, (l) => l.includes(text), { message: `"${text}" in Codex's composer` });
      await page.keyboard.press('Enter');
    };

    const s = await server.createSession({ name: 'overnight', agent: 'codex' });
    id = s.id;
    await tabById(page, id).click();
    await waitFor(() => page.evaluate((i) => !!window.__agentmux.terminals.get(i), id), { message: `a terminal for ${id}` });
    await waitFor(async () => ((await terminalLines(page, id)) ?? []).some((l) => /^\s*›/.test(l)), { timeout: 60_000, message: "Codex's composer" });

    // 1. A turn: its tokens are the session's so far; the windows come with it.
    await type('first question');
    await waitForLine(page, id, (l) => l.includes('Answered: first question'), { timeout: 30_000, message: 'the answer' });
    const entry = await waitFor(async () => {
      const { body } = await server.api('api/usage');
      const e = body.sessions.find((x) => x.id === id);
      return e?.turns.length === 1 ? e : null;
    }, { timeout: 30_000, message: 'turn 1 in GET /api/usage' });
    assert.equal(entry.turns[0].inputTokens, entry.usage.inputTokens, `the turn ${JSON.stringify(entry.turns)} and the session ${JSON.stringify(entry.usage)}`);
    assert.equal(entry.turns[0].outputTokens, entry.usage.outputTokens);
    assert.ok(entry.usage.inputTokens >= 1000, `the stand-in's tokens: ${JSON.stringify(entry.usage)}`);
    assert.deepEqual(entry.usage.windows.map((w) => [w.name, w.usedPercent]), [['five_hour', 42.5], ['seven_day', 17]]);

    // 2. The limit: Codex does not notify the refused turn; its record
    // says it, and the reset.
    const reset = Math.floor(Date.now() / 1000) + 20;
    api.limitReached(reset);
    await type('second question');
    await waitForLine(page, id, (l) => /You.ve hit your usage limit/.test(l), { timeout: 30_000, message: "Codex's limit message" });
    const limited = await waitFor(async () => {
      const got = await getSession(id);
      return got.status === 'limited' ? got : null;
    }, { timeout: 30_000, message: 'the session limited' });
    assert.equal(Date.parse(limited.limit.resetsAt), reset * 1000, `the limit ${JSON.stringify(limited.limit)}`);
    assert.match(limited.limit.message, /usage limit/);
    await waitFor(async () => /^limit/.test(((await tabById(page, id).locator(sel('tab-limit')).textContent()) ?? '').trim()), { message: 'the tab counts down' });
    await screenshot('codex-limits-1-limited');

    // 3. The reset: agentmux sends it on, once.
    await waitFor(() => Date.now() >= reset * 1000, { timeout: 60_000, message: 'the reset time' });
    api.limitLifted();
    await waitFor(() => responses().find((r) => r.status === 200 && /continue/.test(r.prompt)), { timeout: 60_000, message: '"continue" reaching the API after the reset' });
    await waitFor(() => frames.find((f) => f.type === 'session.continued' && f.sessionId === id), { message: 'session.continued' });
    await waitForLine(page, id, (l) => l.includes('Answered: continue'), { timeout: 30_000, message: 'the answer to continue' });
    await waitFor(async () => (await getSession(id)).status === 'waiting', { timeout: 30_000, message: 'the continued turn ended' });
    assert.equal(responses().filter((r) => r.status === 200 && r.prompt.trim() === 'continue').length, 1, 'continued once');
    await screenshot('codex-limits-2-continued');
  },
);
