// Issue 42, end to end with the real Claude Code CLI against the stand-in
// API (fake-anthropic.mjs): the stand-in plays a planner whose turn is a
// chain of tool_use blocks naming agentmux's MCP tools, each chosen from
// the tool_result Claude Code sent back for the one before. The planner
// starts a shell session in a new worktree with commands to type, waits
// for it, reads its screen until the commands have run, reads its diff
// and reports what the helper added. Claude Code reaches the tools
// through the --mcp-config file agentmux gives its run; the workspace's
// .claude/settings.json allows them ("mcp__agentmux", the whole server),
// so no permission dialog stops the turn (without it, Claude Code 2.1.197
// asks "Claude wants to use mcp__agentmux__start_session"). Claude Code
// hands the model each call's structuredContent, as JSON, not its text.
// The people watching see the helper's tab, marked as the planner's, and
// a line per call in the feed.
//
// Waiting: a shell never waits for input as an agent does (its status
// stays active or idle), so wait_for can only time out on it. The planner
// waits a few seconds (timeoutSeconds 3), reads the screen, and waits and
// reads again until the line "helper-done" is there, as a planner that
// cannot know when a shell is done would; each wait is a call the feed
// shows, and the test checks that the shell's wait timed out.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { sel, tabById, waitFor, waitForLine, waitForScreen, terminalPane, git, initGitRepo } from './harness.mjs';
import { lastUserText } from './fake-anthropic.mjs';
import { claudeUiTest } from './claude-cli.mjs';

const PROMPT = 'Split the work: have a helper add a CHANGELOG line on a branch';
const BRANCH = 'helper/changelog';
const LINE = '- a line from the helper';
const COMMANDS = `echo '${LINE}' >> CHANGELOG.md && echo helper-done`;
const TOOL = (name) => `mcp__agentmux__${name}`;
const REPORT = (added) => `Report: the helper on ${BRANCH} is done; it added the line "${added}" to CHANGELOG.md.`;

async function setupWorkspace(ws) {
  await initGitRepo(ws);
  await fs.writeFile(path.join(ws, 'CHANGELOG.md'), '# Changelog\n');
  // agentmux's tools need no permission dialog: the whole server is allowed.
  await fs.mkdir(path.join(ws, '.claude'));
  await fs.writeFile(path.join(ws, '.claude', 'settings.json'), JSON.stringify({ permissions: { allow: ['mcp__agentmux'] } }));
  await git(ws, 'add', '.');
  await git(ws, 'commit', '-q', '-m', 'a changelog');
}

/** The text of a tool_result's content: a string, or its text parts joined. */
function resultText(block) {
  if (typeof block.content === 'string') return block.content;
  return (block.content ?? []).filter((c) => c?.type === 'text').map((c) => c.text).join('\n');
}

/** A tool result as Claude Code 2.1.197 sends it: the call's structuredContent as JSON (null if it is not). */
function structured(text) {
  try {
    const v = JSON.parse(text);
    return v && typeof v === 'object' ? v : null;
  } catch {
    return null;
  }
}

/**
 * The tool calls of a Messages request's conversation, in order, each
 * with its result once Claude Code sent one: { id, name, input, result
 * (the text), out (that text parsed, when it is JSON), isError }.
 */
function callsIn(body) {
  const calls = [];
  const byId = new Map();
  for (const m of body.messages ?? []) {
    if (!Array.isArray(m.content)) continue;
    for (const c of m.content) {
      if (m.role === 'assistant' && c?.type === 'tool_use') {
        const call = { id: c.id, name: c.name, input: c.input };
        calls.push(call);
        byId.set(c.id, call);
      } else if (m.role === 'user' && c?.type === 'tool_result' && byId.has(c.tool_use_id)) {
        const result = resultText(c);
        Object.assign(byId.get(c.tool_use_id), { result, out: structured(result), isError: !!c.is_error });
      }
    }
  }
  return calls;
}

/** Every tool result the stand-in received, once each, in order: { name, input, result, out, isError }. */
const received = new Map();

/** Whether a read_screen result shows the shell's output line "helper-done" (the command line says it too). */
const done = (out) => (out?.screen ?? []).some((l) => l.trim() === 'helper-done');

/**
 * The planner's turn, one step per request of the main conversation (the
 * one offered agentmux's tools; Claude Code's side requests, for a title
 * say, get plain text). Claude Code hands the model a tool's
 * structuredContent, as JSON, rather than its text content, so the
 * planner reads that.
 */
function planner(body) {
  const main = Array.isArray(body.tools) && body.tools.some((t) => t?.name === TOOL('start_session'));
  if (!main) return 'A title';
  const calls = callsIn(body);
  for (const c of calls) if (c.result !== undefined) received.set(c.id, c);
  const last = calls.at(-1);
  if (!last) return lastUserText(body).includes(PROMPT)
    ? { toolUse: { name: TOOL('start_session'), input: { agent: 'shell', name: 'helper', branch: BRANCH, prompt: COMMANDS } } }
    : 'Nothing to plan.';
  if (last.result === undefined) return 'No result came back.';
  if (last.isError) return `The call ${last.name} failed: ${last.result}`;
  const helper = calls.find((c) => c.name === TOOL('start_session'))?.out?.sessionId;
  if (!helper) return `start_session gave no sessionId: ${calls[0].result}`;
  const wait = { toolUse: { name: TOOL('wait_for'), input: { sessionId: helper, timeoutSeconds: 3 } } };
  switch (last.name) {
    case TOOL('start_session'):
      return wait;
    case TOOL('wait_for'):
      return { toolUse: { name: TOOL('read_screen'), input: { sessionId: helper } } };
    case TOOL('read_screen'):
      return done(last.out) ? { toolUse: { name: TOOL('get_diff'), input: { sessionId: helper } } } : wait;
    case TOOL('get_diff'): {
      const added = (last.out?.patch ?? '').split('\n').find((l) => l.startsWith('+') && !l.startsWith('+++'));
      return REPORT(added ? added.slice(1) : '(nothing)');
    }
    default:
      return `Unexpected ${last.name}.`;
  }
}

await claudeUiTest(
  'the real Claude Code CLI as a planner: it starts a shell in a worktree through agentmux\'s MCP tools, waits, reads its screen and diff, and reports',
  { setupWorkspace, timeout: 300_000, reply: planner },
  async ({ t, page, server, api, frames, screenshot, onCleanup }) => {
    const messages = () => api.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages');
    onCleanup(() => t.diagnostic(`the stand-in saw ${messages().length} Messages requests; tool results: ${JSON.stringify([...received.values()].map((c) => `${c.name}${c.isError ? ' (error)' : ''}: ${c.result.slice(0, 80)}`))}`));

    const planner = await server.createSession({ name: 'planner', agent: 'claude' });
    const c = planner.command.indexOf('--mcp-config');
    assert.ok(c > 0 && planner.command[c + 1] === path.join(server.dataDir, 'mcp', `${planner.id}.json`), `the run is given its MCP configuration: ${JSON.stringify(planner.command)}`);
    await tabById(page, planner.id).click();
    await waitForLine(page, planner.id, (l) => /^\s*❯/.test(l), { timeout: 60_000, message: "Claude's input box" });
    await terminalPane(page).click();
    await page.keyboard.type(PROMPT);
    await waitForLine(page, planner.id, (l) => /^\s*❯/.test(l) && l.includes(PROMPT.slice(0, 40)), { message: 'the prompt in Claude\'s input box' });
    await page.keyboard.press('Enter');

    // The helper: a tab of its own, marked as the planner's.
    const helper = await waitFor(async () => (await server.sessions()).find((s) => s.name === 'helper'), {
      timeout: 60_000, message: 'the helper session, started by the planner',
    });
    assert.equal(helper.startedBy, planner.id, `the helper's startedBy: ${JSON.stringify(helper)}`);
    assert.equal(helper.worktree?.branch, BRANCH, `the helper runs in a worktree on ${BRANCH}: ${JSON.stringify(helper.worktree)}`);
    const helperTab = tabById(page, helper.id);
    await helperTab.waitFor({ state: 'attached' });
    assert.equal(await helperTab.locator(sel('tab-started-by')).getAttribute('data-started-by'), planner.id, "the helper's tab names the planner as its starter");

    // The report, on the planner's screen, once its turn has gone through every tool.
    const report = REPORT(LINE);
    await waitForScreen(page, planner.id, (lines) => lines.join(' ').replace(/\s+/g, ' ').includes(report), "the report on the planner's screen", 120_000);
    const results = [...received.values()];
    const named = results.map((r) => r.name);
    assert.deepEqual([named[0], named.at(-2), named.at(-1)], [TOOL('start_session'), TOOL('read_screen'), TOOL('get_diff')], `the calls in order: ${JSON.stringify(named)}`);
    assert.ok(results.every((r) => !r.isError), `no call refused: ${JSON.stringify(results)}`);
    const waits = results.filter((r) => r.name === TOOL('wait_for'));
    assert.ok(waits.length >= 1 && waits.every((w) => w.out?.outcome === 'timeout'), `a shell never waits for input: each wait timed out: ${JSON.stringify(waits)}`);
    // What Claude Code passed on is the calls' structuredContent, as JSON.
    const screen = results.at(-2).out;
    assert.ok(screen && Array.isArray(screen.screen), `read_screen's result as Claude Code sent it: ${results.at(-2).result}`);
    assert.ok(done(screen), `the screen the planner read has the shell's output line helper-done: ${JSON.stringify(screen.screen)}`);
    // The first line of the shell's output, its prompt with the commands
    // typed after it (wrapped over two rows at 80 columns), is on screen too.
    const flat = (text) => text.replace(/\s+/g, '');
    assert.ok(flat(screen.screen.join('')).includes(flat(COMMANDS)), `and the commands typed in: ${JSON.stringify(screen.screen)}`);
    const diff = results.at(-1).out;
    assert.ok(diff && typeof diff.patch === 'string', `get_diff's result as Claude Code sent it: ${results.at(-1).result}`);
    assert.deepEqual(diff.files, [{ path: 'CHANGELOG.md', status: 'modified', additions: 1, deletions: 0 }], `get_diff's files: ${JSON.stringify(diff)}`);
    assert.deepEqual([diff.additions, diff.deletions, diff.truncated], [1, 0, false], `get_diff's counts: ${JSON.stringify(diff)}`);
    assert.ok(diff.patch.split('\n').includes(`+${LINE}`), `the patch the planner read adds the line: ${diff.patch}`);

    // The helper's own terminal, and its worktree: the branch, with CHANGELOG.md changed.
    await helperTab.click();
    await waitForLine(page, helper.id, 'helper-done', { message: "helper-done in the helper's terminal" });
    const wt = helper.worktree.path;
    assert.equal((await git(wt, 'rev-parse', '--abbrev-ref', 'HEAD')).trim(), BRANCH);
    assert.equal((await git(wt, 'status', '--porcelain')).trim(), 'M CHANGELOG.md');
    assert.equal(await fs.readFile(path.join(wt, 'CHANGELOG.md'), 'utf8'), `# Changelog\n${LINE}\n`);
    await screenshot('claude-planner-helper');

    // The feed: a line per call, in the server's words.
    const feed = page.locator(`${sel('activity-item')}[data-event="agent"]`);
    const texts = async () => feed.evaluateAll((els) => els.map((el) => el.querySelector('[data-testid=activity-agent-text]')?.textContent ?? el.textContent));
    await waitFor(async () => (await texts()).length === results.length, { message: `a line per call (${results.length}) in the feed` });
    const shown = (await texts()).reverse(); // newest first on screen
    assert.equal(shown[0], `planner started 'helper' on ${BRANCH}`, `the feed: ${JSON.stringify(shown)}`);
    assert.equal(shown.at(-2), "planner read the screen of 'helper'");
    assert.equal(shown.at(-1), "planner read the diff of 'helper'");
    assert.ok(shown.slice(1, -2).every((s) => s === "planner waited for 'helper': timeout" || s === "planner read the screen of 'helper'"), `the waits and reads between: ${JSON.stringify(shown)}`);
    const calls = frames.filter((f) => f.type === 'agent.call');
    assert.ok(calls.every((f) => f.sessionId === planner.id && f.targetId === helper.id && !f.error), `every agent.call by the planner about the helper: ${JSON.stringify(calls)}`);

    await tabById(page, planner.id).click();
    await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, planner.id), { message: 'the planner on screen' });
    await waitForLine(page, planner.id, (l) => l.includes('Report: the helper'), { message: 'the report drawn in the planner\'s tab' });
    await screenshot('claude-planner-report');
    // Claude's transcript (Ctrl+O) shows each call with its input.
    await terminalPane(page).click();
    await page.keyboard.press('Control+O');
    await waitForLine(page, planner.id, (l) => l.includes('start_session'), { message: 'the calls in Claude\'s transcript' });
    await screenshot('claude-planner-transcript');
  },
);
