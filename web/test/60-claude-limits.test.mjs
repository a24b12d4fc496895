// Issue 43 with the real Claude Code CLI, signed in as a claude.ai
// subscriber against the stand-in API (fake-anthropic.mjs), which reports
// each answer's usage and the account's windows, and then refuses a turn
// at the 5-hour limit. Each turn's tokens (from Claude's transcript) and
// cost (from its status line) add up to the session's; the refused turn
// makes the session limited with its reset, the tab counting down; at the
// reset (plus a 2 s margin) agentmux closes the menu Claude opened for the
// limit and types "continue", once, which reaches the API; the activity
// feed says so.
import assert from 'node:assert/strict';
import { sel, tabById, waitFor, waitForLine, terminalLines, terminalPane } from './harness.mjs';
import { claudeUiTest } from './claude-cli.mjs';
import { lastUserText } from './fake-anthropic.mjs';

const NAME = 'the real Claude Code CLI: usage per turn, a usage limit, and continuing at its reset';

/** What the stand-in says each answer used: distinct for each, so a turn's figures can be traced to its answers. */
const usage = (n) => ({ input_tokens: 100 * n, output_tokens: 7 * n, cache_read_input_tokens: 1000 + n, cache_creation_input_tokens: 50 });
const HOUR = 3600;
const now = Math.floor(Date.now() / 1000);

await claudeUiTest(
  NAME,
  {
    reply: (body) => `Answered: ${/(first|second|third) question|continue/.exec(lastUserText(body))?.[0] ?? 'that'}`,
    usage,
    limits: { fiveHour: { utilization: 0.42, reset: now + 4 * HOUR }, sevenDay: { utilization: 0.17, reset: now + 100 * HOUR } },
    subscriber: true,
    flags: ['--continue-margin', '2s'],
    env: { TZ: 'UTC' },
    timeout: 300_000,
  },
  async ({ t, page, server, frames, screenshot, onCleanup, api }) => {
    const getSession = async (id) => {
      const { status, body } = await server.api(`api/sessions/${id}`);
      assert.equal(status, 200, `GET /api/sessions/${id}: ${status} ${JSON.stringify(body)}`);
      return body.session;
    };
    // The conversation's requests: not those that title it, which its transcript does not record.
    const messages = () => api.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages' && !r.userText.startsWith('<session>'));
    onCleanup(() => t.diagnostic(`the stand-in saw: ${JSON.stringify(messages().map((r) => [r.status, r.prompt, r.usage]))}`));
    const typeAtPrompt = async (id, text) => {
      await terminalPane(page).click();
      await page.keyboard.type(text);
      await waitForLine(page, id, (l) => /^\s*❯/.test(l) && l.includes(text), { message: `"${text}" in Claude's input box` });
      await page.keyboard.press('Enter');
    };
    const turns = async (id) => {
      const { status, body } = await server.api('api/usage');
      assert.equal(status, 200);
      return body.sessions.find((s) => s.id === id);
    };

    const s = await server.createSession({ name: 'nightly', agent: 'claude' });
    const id = s.id;
    await tabById(page, id).click();
    await waitFor(() => page.evaluate((i) => !!window.__agentmux.terminals.get(i), id), { message: `a terminal for ${id}` });
    await waitFor(async () => ((await terminalLines(page, id)) ?? []).some((l) => /^\s*❯/.test(l)), { timeout: 60_000, message: "Claude's prompt" });

    // 1. Two turns: each one's tokens are its answers' (input with the
    // cache's), its cost its share of Claude's; they add up to the session's.
    for (const [n, prompt] of [[1, 'first question'], [2, 'second question']]) {
      await typeAtPrompt(id, prompt);
      await waitForLine(page, id, (l) => l.includes(`Answered: ${prompt}`), { timeout: 30_000, message: `the answer to "${prompt}"` });
      const entry = await waitFor(async () => {
        const e = await turns(id);
        return e?.turns.length === n && e.turns[n - 1].costUsd > 0 && e.turns[n - 1].outputTokens > 0 ? e : null;
      }, { timeout: 30_000, message: `turn ${n} with its cost and tokens in GET /api/usage` });
      const served = messages().filter((r) => r.status === 200 && r.userText.includes(prompt));
      const want = served.reduce((a, r) => ({
        in: a.in + r.usage.input_tokens + r.usage.cache_read_input_tokens + r.usage.cache_creation_input_tokens,
        out: a.out + r.usage.output_tokens,
      }), { in: 0, out: 0 });
      const turn = entry.turns[n - 1];
      assert.ok(served.length > 0, `the stand-in answered "${prompt}"`);
      assert.deepEqual([turn.inputTokens, turn.outputTokens], [want.in, want.out], `turn ${n}: ${JSON.stringify(turn)}, served ${JSON.stringify(served.map((r) => r.usage))}`);
    }
    const entry = await turns(id);
    const sum = entry.turns.reduce((a, x) => ({ in: a.in + x.inputTokens, out: a.out + x.outputTokens, cost: a.cost + x.costUsd }), { in: 0, out: 0, cost: 0 });
    assert.equal(sum.in, entry.usage.inputTokens, `turns ${JSON.stringify(entry.turns)} against ${JSON.stringify(entry.usage)}`);
    assert.equal(sum.out, entry.usage.outputTokens);
    assert.ok(Math.abs(sum.cost - entry.usage.costUsd) < 1e-9, `the turns' cost ${sum.cost}, the session's ${entry.usage.costUsd}`);
    // The tab shows the context and the cost; the status bar the windows.
    const tab = tabById(page, id);
    await waitFor(async () => /\$\d/.test((await tab.locator(sel('tab-usage-spend')).textContent()) ?? ''), { message: "the tab's cost" });
    await waitFor(async () => (await page.locator(`${sel('usage-window')}[data-name="five_hour"]`).count()) === 1, { message: 'the 5-hour window in the status bar' });

    // 2. The 5-hour limit, resetting at a whole minute (Claude says the
    // time without its seconds) at least 25 s away.
    const reset = Math.ceil((Date.now() / 1000 + 25) / 60) * 60;
    api.limitReached(reset);
    const before = frames.length;
    await typeAtPrompt(id, 'third question');
    await waitForLine(page, id, (l) => l.includes("You've hit your session limit"), { timeout: 30_000, message: "Claude's limit message" });
    const limited = await waitFor(async () => {
      const got = await getSession(id);
      return got.status === 'limited' ? got : null;
    }, { timeout: 30_000, message: 'the session limited' });
    assert.equal(limited.limit.resetsAt, new Date(reset * 1000).toISOString().replace('.000', ''), `the limit ${JSON.stringify(limited.limit)}`);
    assert.equal(limited.limit.continue, true);
    assert.ok(frames.slice(before).some((f) => f.type === 'session.needsInput' && f.sessionId === id && /usage limit/.test(f.message)), 'the notification says the limit');
    const countdown = tab.locator(sel('tab-limit'));
    await waitFor(async () => (await countdown.isVisible()) && /^limit (<1m|\d+m)$/.test(((await countdown.textContent()) ?? '').trim()), { message: 'the tab counts down to the reset' });
    // The card says when it goes on, and lets it wait for the user instead.
    const card = page.locator(sel('answer-card'));
    await waitFor(async () => /goes on once the limit resets|sends it on once the limit resets/.test((await card.locator(sel('answer-limit')).textContent()) ?? ''), { message: "the limit's card" });
    // The status bar shows the 5-hour window used up, until the reset.
    const fiveHour = page.locator(`${sel('usage-window')}[data-name="five_hour"]`);
    await waitFor(async () => /^5h 100%/.test(((await fiveHour.textContent()) ?? '').replace(/\s+/g, ' ').trim()), { message: 'the 5-hour window at 100 %' });
    await screenshot('limits-1-limited');
    await card.locator(sel('answer-continue-off')).click();
    await waitFor(async () => (await getSession(id)).limit?.continue === false, { message: 'continuing turned off' });
    await card.locator(sel('answer-continue-on')).click();
    await waitFor(async () => (await getSession(id)).limit?.continue === true, { message: 'continuing turned on again' });

    // 3. The reset: the stand-in answers again, and agentmux sends the
    // session on by itself, once.
    await waitFor(() => Date.now() >= reset * 1000, { timeout: 90_000, message: 'the reset time' });
    api.limitLifted();
    const cont = await waitFor(() => messages().find((r) => r.status === 200 && r.userText.trim().endsWith('continue')), { timeout: 60_000, message: '"continue" reaching the API after the reset' });
    assert.ok(cont, 'continue went');
    await waitFor(() => frames.find((f) => f.type === 'session.continued' && f.sessionId === id && f.text === 'continue'), { message: 'session.continued' });
    await waitFor(async () => (await getSession(id)).status === 'waiting', { timeout: 30_000, message: 'the continued turn ended' });
    assert.equal(messages().filter((r) => r.userText.trim().endsWith('continue')).length, 1, 'continued once');
    assert.equal((await getSession(id)).limit, undefined, 'the limit is over');
    const line = page.locator(`${sel('activity-item')}[data-tool="continue after limit"]`);
    await waitFor(async () => /agentmux typed "continue" into 'nightly'/.test((await line.textContent()) ?? ''), { message: 'the activity feed line' });
    await screenshot('limits-2-continued');
  },
);
