// Issue 43, point 2: what the agents spend, shown where people look. A
// session's tab shows its context used and its cost ("ctx 12%", "$0.42"),
// every figure in its tooltip; the status bar shows the account's windows
// from the newest report ("5h 81% · resets in 1h29m", "7d 4%"), amber from
// 75 % used and red from 90 %, and counts down to the reset without a new
// report. The figures come the way Claude Code's come: a stand-in for
// `claude` runs the status line command agentmux's settings name, which
// hands them to the server; the page hears of each change live.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { uiTest, sel, tabById, tempDir, waitFor, waitForLine, typeCommand, initGitRepo, reloadApp , readableTabNames } from './harness.mjs';
import { FAKE_CLAUDE_PRELUDE } from './claude-cli.mjs';

/**
 * A stand-in for Claude Code: it finds the status line command in the
 * settings agentmux gave it (--settings), as Claude Code does, and runs it
 * with what Claude Code reports after a message, printing the line it
 * makes. Each line typed into it then brings the next report: the cost
 * and the context grow and the 5-hour window fills (93 %); the third
 * report's window resets within seconds.
 */
const FAKE_CLAUDE = `${FAKE_CLAUDE_PRELUDE}transcript=\${TMPDIR:-/tmp}/fake-claude-$$.jsonl
# The tokens are the transcript's, which the status line's input names.
printf '%s\\n' '{"type":"assistant","message":{"id":"msg_1","usage":{"input_tokens":230,"cache_read_input_tokens":18000,"cache_creation_input_tokens":0,"output_tokens":2101}}}' > "$transcript"
report() { printf '%s' "$1" | sh -c "$statusline"; }
model="\\"transcript_path\\":\\"$transcript\\",\\"model\\":{\\"id\\":\\"claude-sonnet-4-5\\",\\"display_name\\":\\"Sonnet 4.5\\"}"
in90=$(( $(date +%s) + 90 * 60 ))
report "{$model,\\"cost\\":{\\"total_cost_usd\\":0.42},\\"context_window\\":{\\"total_input_tokens\\":18230,\\"total_output_tokens\\":2101,\\"context_window_size\\":200000,\\"used_percentage\\":12},\\"rate_limits\\":{\\"five_hour\\":{\\"used_percentage\\":81,\\"resets_at\\":$in90},\\"seven_day\\":{\\"used_percentage\\":4}}}"
echo 'first report made'
read answer
report "{$model,\\"cost\\":{\\"total_cost_usd\\":0.9},\\"context_window\\":{\\"total_input_tokens\\":70100,\\"total_output_tokens\\":9800,\\"context_window_size\\":200000,\\"used_percentage\\":40},\\"rate_limits\\":{\\"five_hour\\":{\\"used_percentage\\":93,\\"resets_at\\":$in90},\\"seven_day\\":{\\"used_percentage\\":4}}}"
echo 'second report made'
read answer
in3=$(( $(date +%s) + 3 ))
report "{$model,\\"cost\\":{\\"total_cost_usd\\":0.9},\\"context_window\\":{\\"total_input_tokens\\":70100,\\"total_output_tokens\\":9800,\\"context_window_size\\":200000,\\"used_percentage\\":40},\\"rate_limits\\":{\\"five_hour\\":{\\"used_percentage\\":93,\\"resets_at\\":$in3},\\"seven_day\\":{\\"used_percentage\\":4}}}"
echo 'third report made'
exec cat >/dev/null
`;

// The sessions' PATH finds the stand-in first (the server's environment is theirs).
const binDir = await tempDir('fake-claude');
await fs.writeFile(path.join(binDir, 'claude'), FAKE_CLAUDE, { mode: 0o755 });
const env = { PATH: `${binDir}:${process.env.PATH}` };

const AMBER = 'rgb(226, 182, 79)'; // --yellow
const RED = 'rgb(242, 112, 106)'; // --red

const text = async (loc) => ((await loc.textContent()) ?? '').replace(/\s+/g, ' ').trim();

/** A window in the status bar: its text, level and colour, or null while it is not shown. */
const windowState = (page, name) => page.locator(`${sel('usage-window')}[data-name="${name}"]`).evaluate((el) => ({
  text: el.textContent.replace(/\s+/g, ' ').trim(),
  level: el.dataset.level,
  reset: el.hasAttribute('data-reset'),
  color: getComputedStyle(el.querySelector('.usage-window-figure')).color,
  visible: el.getClientRects().length > 0,
})).catch(() => null);

/**
 * A tab's figure as a person sees it: each part's text when it shows
 * whole beside the name (a part with no room wraps out of sight), else
 * null; and whether the close button lies whole in the tab. The row is
 * the element that holds the name and the figure and clips what wraps.
 */
const tabFigure = (page, id) => tabById(page, id).evaluate((tab) => {
  const fig = tab.querySelector('[data-testid=tab-usage]');
  const name = tab.querySelector('[data-testid=tab-name]');
  let row = fig.parentElement;
  while (row !== tab && getComputedStyle(row).overflow !== 'hidden') row = row.parentElement;
  const box = row.getBoundingClientRect();
  const tabBox = tab.getBoundingClientRect();
  const seen = (el) => {
    const r = el.getBoundingClientRect();
    const whole = el.checkVisibility() && r.width > 0 && r.top >= box.top - 0.5 && r.bottom <= box.bottom + 0.5 &&
      r.left >= name.getBoundingClientRect().right && r.right <= box.right + 0.5;
    return whole ? el.textContent : null;
  };
  const close = tab.querySelector('[data-testid=tab-close]').getBoundingClientRect();
  return {
    context: seen(fig.querySelector('[data-testid=tab-usage-context]')),
    spend: seen(fig.querySelector('[data-testid=tab-usage-spend]')),
    level: fig.querySelector('[data-testid=tab-usage-context]').dataset.level ?? null,
    title: fig.title,
    tabTitle: tab.title,
    closeInside: close.left >= tabBox.left && close.right <= tabBox.right + 0.5,
  };
});

uiTest("a Claude session's spending: on its tab and, for the account, in the status bar, live", { env, timeout: 90_000 }, async ({ page, server, frames, screenshot }) => {
  const s = await server.createSession({ name: 'claude-usage', agent: 'claude' });
  assert.ok(s.command.includes('--settings'), `claude runs with agentmux's settings: ${JSON.stringify(s.command)}`);
  // The status line command printed its line: the report went through it.
  await waitForLine(page, s.id, /Sonnet 4\.5 · context 12% · \$0\.42 · 5h 81% · 7d 4%/, { message: "the status line command's own line in the terminal" });
  await waitForLine(page, s.id, 'first report made');

  // The tab: the context used and the cost, every figure in its tooltip.
  const first = await waitFor(async () => {
    const f = await tabFigure(page, s.id);
    return f.context === 'ctx 12%' && f.spend === '$0.42' && f;
  }, { message: `"ctx 12%" and "$0.42" on the tab (now ${JSON.stringify(await tabFigure(page, s.id).catch(() => null))})` });
  assert.equal(first.level, 'ok', 'a context 12% full reads as the other figures');
  for (const line of ['Model: Sonnet 4.5', "Cost: $0.42 so far (the agent's estimate)", 'Tokens: 18,230 in, 2,101 out', 'Context: 12% of 200k tokens used']) {
    assert.ok(first.title.split('\n').includes(line), `the figure's tooltip says "${line}": ${JSON.stringify(first.title)}`);
  }
  assert.match(first.title, /\nUpdated \d/, 'and when the agent reported');
  assert.match(first.tabTitle, /\nSonnet 4\.5 · \$0\.42 · context 12%$/, "the tab's own tooltip sums it up, for when the figure has no room");
  assert.ok(first.closeInside, 'the close button stays in the tab');

  // The status bar: the 5-hour window amber at 81 %, counting down; the weekly one.
  const bar = page.locator(sel('usage-windows'));
  await bar.waitFor({ state: 'visible' });
  const five = await waitFor(() => windowState(page, 'five_hour'), { message: 'the 5-hour window in the status bar' });
  // Reported as 90 minutes from the stand-in's start: less by the seconds since.
  assert.match(five.text, /^5h 81% · resets in 1h2\dm$/, `the 5-hour window: ${five.text}`);
  assert.equal(five.level, 'warning');
  assert.equal(five.color, AMBER, 'amber from 75 % used');
  const seven = await windowState(page, 'seven_day');
  assert.deepEqual({ text: seven?.text, level: seven?.level, visible: seven?.visible }, { text: '7d 4%', level: 'ok', visible: true }, 'the weekly window, with no reset time reported');
  assert.notEqual(seven.color, AMBER);
  const barTitle = await bar.getAttribute('title');
  assert.match(barTitle, /^5-hour window: 81% used, resets at .+ \(in 1h2\dm\)\n7-day window: 4% used\n/, `the reset time in the tooltip: ${barTitle}`);
  assert.match(barTitle, /reported by claude-usage's agent at /, 'and whose agent said so');
  await screenshot('usage-first');

  // GET /api/usage says the same.
  let r = await server.api('api/usage');
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.body.sessions.map((x) => [x.id, x.usage.costUsd, x.usage.contextPercent, x.usage.model]), [[s.id, 0.42, 12, 'Sonnet 4.5']]);
  assert.deepEqual(r.body.windows.map((w) => [w.name, w.usedPercent, w.sessionId]), [['five_hour', 81, s.id], ['seven_day', 4, s.id]]);
  const resetsAt = r.body.windows[0].resetsAt;
  assert.ok(resetsAt && Math.abs(Date.parse(resetsAt) - Date.now() - 90 * 60_000) < 60_000, `the 5-hour window resets in about 90 minutes: ${resetsAt}`);
  assert.deepEqual(r.body.totals, { costUsd: 0.42, inputTokens: 18230, outputTokens: 2101 });

  // The agent reports again: the tab and the status bar follow, live.
  const before = frames.length;
  await typeCommand(page, 'go on');
  await waitForLine(page, s.id, 'second report made');
  await waitFor(async () => {
    const f = await tabFigure(page, s.id);
    return f.context === 'ctx 40%' && f.spend === '$0.90';
  }, { message: '"ctx 40%" and "$0.90" on the tab' });
  const live = frames.slice(before).filter((f) => f.type === 'usage.updated' && f.sessionId === s.id);
  assert.deepEqual(live.map((f) => f.usage.costUsd), [0.9], 'one usage.updated brought it');
  const red = await waitFor(async () => {
    const w = await windowState(page, 'five_hour');
    return w?.level === 'critical' && w;
  }, { message: 'the 5-hour window red' });
  assert.match(red.text, /^5h 93% · resets in 1h2\dm$/);
  assert.equal(red.color, RED, 'red from 90 % used');
  assert.equal((await windowState(page, 'seven_day'))?.text, '7d 4%');
  await screenshot('usage-updated');
  r = await server.api('api/usage');
  assert.deepEqual(r.body.sessions.map((x) => [x.usage.costUsd, x.usage.contextPercent]), [[0.9, 40]]);
  assert.deepEqual(r.body.windows.map((w) => [w.name, w.usedPercent]), [['five_hour', 93], ['seven_day', 4]]);

  // A reloaded page has the figures from the session list, before any new report.
  const reports = frames.filter((f) => f.type === 'usage.updated').length;
  await reloadApp(page);
  await waitFor(async () => {
    const f = await tabFigure(page, s.id);
    return f.context === 'ctx 40%' && f.spend === '$0.90';
  }, { message: 'the figures on the tab after a reload' });
  assert.equal((await windowState(page, 'five_hour'))?.text.startsWith('5h 93%'), true, 'and the window');
  assert.equal(frames.filter((f) => f.type === 'usage.updated').length, reports, 'with no new report');

  // The window resets within seconds: the countdown reaches it with no message from the server.
  await typeCommand(page, 'go on');
  await waitForLine(page, s.id, 'third report made');
  const afterThird = await waitFor(() => frames.findLast((f) => f.type === 'usage.updated' && f.usage.windows?.[0]?.resetsAt !== resetsAt), { message: 'the third report' });
  const reset = await waitFor(async () => {
    const w = await windowState(page, 'five_hour');
    return w?.reset && w;
  }, { timeout: 8_000, message: `the 5-hour window reset (now ${JSON.stringify(await windowState(page, 'five_hour'))})` });
  assert.deepEqual({ text: reset.text, level: reset.level }, { text: '5h · reset', level: 'ok' }, 'its share from before the reset is not shown as if it held');
  assert.equal(frames.filter((f) => f.type === 'usage.updated').at(-1), afterThird, 'the page redrew it by itself');
  assert.match(await bar.getAttribute('title'), /^5-hour window: started afresh at .+ \(93% was used before\)/);
  await screenshot('usage-reset');

  // The session gone, no one reports a window: the status bar shows none.
  const del = await server.api(`api/sessions/${s.id}`, { method: 'DELETE' });
  assert.equal(del.status, 204, `DELETE: ${del.status} ${JSON.stringify(del.body)}`);
  await bar.waitFor({ state: 'hidden' });
  assert.equal(await page.locator(sel('usage-window')).count(), 0);
});

const NAMES = ['feature-login-form', 'fix-payment-webhook', 'refactor-user-service', 'docs-api-reference'];


uiTest('1280 px: four worktree sessions with counts and figures keep their names readable; a figure gives way whole', {
  env,
  setupWorkspace: initGitRepo,
  timeout: 120_000,
}, async ({ page, server, screenshot }) => {
  const ids = [];
  for (const [i, name] of NAMES.entries()) {
    const s = await server.createSession({ name, agent: 'claude', worktree: { branch: `${name.split('-')[0]}/${name}` } });
    await fs.writeFile(path.join(s.worktree.path, 'work.txt'), 'line\n'.repeat(10 + i * 37));
    ids.push(s.id);
  }
  await waitFor(async () => (await page.locator(`${sel('tab-diff')}:visible`).count()) === 4, { message: 'the counts on four tabs' });
  await waitFor(async () => (await page.locator(`${sel('tab-usage')}:not([hidden])`).count()) === 4, { message: 'a figure on four tabs' });
  await tabById(page, ids[0]).click();
  const names = await waitFor(async () => {
    const n = await readableTabNames(page);
    return n.length === 4 && n.every((t) => t.shown >= 8) && n;
  }, { timeout: 5_000, message: `eight characters of each name readable: ${JSON.stringify(await readableTabNames(page))}` }).finally(() => screenshot('usage-tabs-1280'));
  assert.equal(names.length, 4);
  for (const id of ids) {
    const f = await tabFigure(page, id);
    assert.ok(f.closeInside, `the close button stays in the tab: ${JSON.stringify(f)}`);
    // Each part whole or out of sight, never cut: the cost gives way before the context.
    assert.ok(f.context === null || f.context === 'ctx 12%', `the context whole or not shown: ${JSON.stringify(f)}`);
    assert.ok(f.spend === null || (f.spend === '$0.42' && f.context !== null), `the cost whole or not shown, and before the context: ${JSON.stringify(f)}`);
    assert.match(f.tabTitle, /\nSonnet 4\.5 · \$0\.42 · context 12%$/, "the tab's tooltip has what the figure may not show");
  }
  // Wider, each tab has room for the context beside ten characters of its name.
  await page.setViewportSize({ width: 1920, height: 900 });
  const wide = await waitFor(async () => {
    const all = await Promise.all(ids.map((id) => tabFigure(page, id)));
    return all.every((f) => f.context === 'ctx 12%') && all;
  }, { message: 'the context on every tab at 1920 px' }).finally(() => screenshot('usage-tabs-1920'));
  for (const f of wide) assert.ok(f.spend === null || f.spend === '$0.42', `the cost whole or not shown: ${JSON.stringify(f)}`);
  assert.ok((await readableTabNames(page)).every((t) => t.shown >= 10), `ten characters of each name beside it: ${JSON.stringify(await readableTabNames(page))}`);
});
