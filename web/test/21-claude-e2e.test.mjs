// End to end with the real Claude Code CLI (the npm package
// @anthropic-ai/claude-code, a devDependency of these tests) against a local
// stand-in of the Anthropic Messages API (fake-anthropic.mjs): a `claude`
// session starts, its hooks report it waiting at Claude's prompt, a prompt
// typed in the page gets the stand-in's reply and the Stop hook makes it wait
// again; after a restart of agentmux, Resume runs `claude --resume` and Claude
// shows the conversation again. A second session, ended before any prompt,
// resumes as a new conversation with the same id.
//
// Claude runs with a throwaway HOME and CLAUDE_CONFIG_DIR seeded to go
// straight to its prompt (onboarding done, the fake key approved, the
// workspace trusted), and with its telemetry, non-essential traffic and
// auto-updates off: it talks to nothing but the stand-in.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { asParticipant, sel, tabById, waitFor, waitForLine, terminalLines, terminalPane, SERVER_DOWN_CONSOLE } from './harness.mjs';
import { claudeUiTest } from './claude-cli.mjs';

const NAME = 'the real Claude Code CLI: start, hooks report waiting, a prompt, a restart, Resume, a prompt queue';

const READY = 'Claude is ready for your first prompt';
const RESUMED = 'Claude resumed the conversation and waits for your prompt';
const FINISHED = 'the agent finished and waits for your next prompt';
const PROMPT = 'What colour is the sky today';
const REPLY = 'The stand-in says the sky is green today.';

/** Claude's projects/ folder name for a working directory. */
const projectDirName = (cwd) => cwd.replace(/[^a-zA-Z0-9]/g, '-');

await claudeUiTest(
  NAME,
  {
    reply: REPLY,
    timeout: 300_000,
    allowConsole: SERVER_DOWN_CONSOLE,
  },
  async ({ t, page, server, frames, screenshot, onCleanup, api, configDir }) => {
    const statusFrames = (id, from = 0) => frames.slice(from).filter((f) => f.type === 'session.status' && f.sessionId === id);
    const waitStatus = async (id, status, reason, from = 0, timeout = 30_000) =>
      waitFor(() => statusFrames(id, from).find((f) => f.status === status && (reason === undefined || f.reason === reason)), {
        timeout,
        message: `session.status ${status}${reason ? ` "${reason}"` : ''} for ${id}`,
      });
    const tabStatus = async (id, status, timeout = 30_000) => {
      const tab = tabById(page, id);
      await waitFor(async () => (await tab.getAttribute('data-status')) === status, { timeout, message: `tab ${id} data-status ${status}` });
      return tab;
    };
    const getSession = async (id) => {
      const { status, body } = await server.api(`api/sessions/${id}`);
      assert.equal(status, 200, `GET /api/sessions/${id}: ${status} ${JSON.stringify(body)}`);
      return body.session;
    };
    const show = async (id) => {
      await tabById(page, id).click();
      await waitFor(async () => (await page.evaluate(() => window.__agentmux.activeSessionId())) === id, { message: `${id} on screen` });
      await waitFor(() => page.evaluate((i) => !!window.__agentmux.terminals.get(i), id), { message: `a terminal for ${id}` });
    };
    /**
     * Claude's input box: its "❯" line and, under it, the status line
     * agentmux's settings give each run (the model and the cost, from
     * `agentmux hook statusline`), which takes the place of the shortcuts
     * hint.
     */
    const waitForClaudePrompt = async (id, timeout = 60_000) =>
      waitFor(
        async () => {
          const lines = (await terminalLines(page, id)) ?? [];
          return lines.some((l) => /^\s*❯/.test(l)) && lines.some((l) => /\S · \$\d+\.\d\d/.test(l));
        },
        { timeout, message: `Claude's prompt ("❯" and agentmux's status line, "<model> · $<cost>") in ${id}` },
      );
    /** Types text at Claude's prompt through the page, waits for it to show, then Enter. */
    const typeAtPrompt = async (id, text) => {
      await terminalPane(page).click();
      await page.keyboard.type(text);
      // (Claude puts a no-break space after its "❯".)
      await waitForLine(page, id, (l) => /^\s*❯/.test(l) && l.includes(text), { message: `"${text}" in Claude's input box` });
      await page.keyboard.press('Enter');
    };
    /** Index of the last non-empty line of a session's buffer. */
    const lastLine = async (id) => {
      const lines = (await terminalLines(page, id)) ?? [];
      return lines.findLastIndex((l) => l.trim() !== '');
    };
    const diagnostic = () =>
      `the stand-in saw: ${JSON.stringify(api.requests.map((r) => `${r.method} ${r.path}${r.model ? ` ${r.model}` : ''}${r.stream ? ' (stream)' : ''}`))}`;
    onCleanup(() => t.diagnostic(diagnostic()));

    // 1. A claude session starts; its SessionStart hook reports it waiting.
    const started = Date.now();
    const s = await server.createSession({ name: 'claude', agent: 'claude' });
    const id = s.id;
    assert.equal(s.agent, 'claude');
    assert.deepEqual(s.command.slice(0, 3), ['claude', '--session-id', id], `the start command: ${JSON.stringify(s.command)}`);
    assert.ok(s.command.includes('--settings'), `the start command carries the hook settings: ${JSON.stringify(s.command)}`);
    await show(id);
    await waitForClaudePrompt(id);
    const ready = await waitStatus(id, 'waiting', READY);
    assert.equal(ready.running, true);
    const tab = await tabStatus(id, 'waiting');
    assert.match(await tab.getAttribute('title'), new RegExp(READY), "the tab's title gives the reason");
    t.diagnostic(`Claude at its prompt and reported waiting ${Date.now() - started} ms after the create`);
    await screenshot('claude-1-ready');

    // 2. A prompt typed in the page: the stand-in's reply on screen,
    // active while Claude works, then waiting again from the Stop hook.
    const beforePrompt = frames.length;
    await typeAtPrompt(id, PROMPT);
    await waitForLine(page, id, (l) => l.includes(REPLY), { timeout: 30_000, message: `the stand-in's reply in ${id}` });
    await waitStatus(id, 'waiting', FINISHED, beforePrompt);
    const turn = statusFrames(id, beforePrompt).map((f) => f.status);
    assert.deepEqual(turn.slice(-2), ['active', 'waiting'], `a turn: active, then waiting (${JSON.stringify(statusFrames(id, beforePrompt))})`);
    await tabStatus(id, 'waiting');
    assert.ok(api.requests.some((r) => r.method === 'POST' && r.path === '/v1/messages' && r.prompt.includes(PROMPT)), diagnostic());
    const conversation = path.join(configDir, 'projects', projectDirName(s.cwd), `${id}.jsonl`);
    await waitFor(() => existsSync(conversation), { message: `Claude's conversation file ${conversation}` });
    await screenshot('claude-2-replied');
    // What the turn spent, in Claude's own figures (its status line's
    // input, which agentmux's status line command hands over): the
    // stand-in's tokens, and a cost from them.
    const spent = await waitFor(async () => {
      const u = (await getSession(id)).usage;
      return u?.outputTokens > 0 && u?.costUsd > 0 ? u : null;
    }, { timeout: 30_000, message: "the turn's usage, from Claude's status line" });
    assert.equal(spent.source, 'claude-statusline');
    assert.ok(spent.inputTokens > 0 && spent.contextSize > 0 && spent.model, `the usage ${JSON.stringify(spent)}`);

    // 3. agentmux restarts: the session is idle without a process, with
    // its last screen; Resume runs claude --resume, which shows the
    // conversation again and waits.
    await server.restart();
    await waitFor(async () => !(await page.locator(sel('banner-connection')).isVisible()), { timeout: 20_000, message: 'reconnected after the restart' });
    await tabStatus(id, 'idle');
    const idle = await getSession(id);
    assert.equal(idle.running, false, `idle without a process after the restart: ${JSON.stringify(idle)}`);
    await show(id);
    await waitForLine(page, id, (l) => l.includes(REPLY), { message: 'the last screen, with the reply, after the restart' });
    await screenshot('claude-3-restarted');

    const resumeFrom = frames.length;
    const oldEnd = await lastLine(id);
    await page.locator(`${sel('resume')} >> visible=true`).first().click();
    const resumed = await waitFor(async () => {
      const r = await getSession(id);
      return r.running && r.command.includes('--resume') && r;
    }, { message: `the session running claude --resume` });
    assert.deepEqual(resumed.command.slice(0, 3), ['claude', '--resume', id], `the resume command: ${JSON.stringify(resumed.command)}`);
    await waitStatus(id, 'waiting', RESUMED, resumeFrom);
    await tabStatus(id, 'waiting');
    await waitForClaudePrompt(id);
    // Claude draws the resumed conversation below the old run's screen.
    await waitFor(
      async () => {
        const lines = (await terminalLines(page, id)) ?? [];
        return lines.slice(oldEnd + 1).some((l) => l.includes(REPLY)) && lines.slice(oldEnd + 1).some((l) => l.includes(PROMPT));
      },
      { message: 'the resumed Claude shows the earlier prompt and reply again' },
    );
    await screenshot('claude-4-resumed');

    // 4. A session that ends before its first prompt has no conversation:
    // Resume starts a new one with the same id, and says so.
    const s2 = await server.createSession({ name: 'fresh', agent: 'claude' });
    await show(s2.id);
    await waitForClaudePrompt(s2.id);
    await waitStatus(s2.id, 'waiting', READY);
    // Ctrl+C twice ends Claude without saving anything. (Not /exit: Claude
    // 2.1.197 then writes <id>.jsonl with only its mode lines, which its
    // --resume does not take for a conversation.)
    await terminalPane(page).click();
    await page.keyboard.press('Control+C');
    await waitForLine(page, s2.id, /Ctrl-C again to exit/i, { message: 'Claude asking for a second Ctrl+C' });
    await page.keyboard.press('Control+C');
    // Claude takes the second Ctrl+C only within a moment of the first,
    // which a loaded machine can miss: then a quick pair again. (Ctrl+C
    // typed into an ended session does not wake it.)
    await waitFor(
      async () => {
        if ((await tabById(page, s2.id).getAttribute('data-status')) === 'stopped') return true;
        await page.keyboard.press('Control+C');
        await page.keyboard.press('Control+C');
        return false;
      },
      { timeout: 30_000, interval: 3_000, message: `tab ${s2.id} stopped after Ctrl+C twice` },
    );
    const ended = await getSession(s2.id);
    assert.equal(ended.running, false);
    const none = path.join(configDir, 'projects', projectDirName(s2.cwd), `${s2.id}.jsonl`);
    assert.ok(!existsSync(none), `no conversation saved without a prompt: ${none}`);
    await screenshot('claude-5-exited');

    const freshFrom = frames.length;
    await page.locator(`${sel('resume')} >> visible=true`).first().click();
    await waitForLine(page, s2.id, (l) => l.startsWith('[agentmux] Claude has no saved conversation'), {
      message: 'the [agentmux] line saying Claude has no saved conversation',
    });
    const restarted = await getSession(s2.id);
    assert.deepEqual(restarted.command.slice(0, 3), ['claude', '--session-id', s2.id], `a fresh start with the same id: ${JSON.stringify(restarted.command)}`);
    await waitStatus(s2.id, 'waiting', READY, freshFrom);
    await tabStatus(s2.id, 'waiting');
    await waitForClaudePrompt(s2.id);
    await screenshot('claude-6-fresh');

    // 5. Two prompts queued at once by another participant: the first is
    // typed at once (Claude waits at its prompt), the second when the
    // Stop hook says the first turn ended; each as a bracketed paste, so
    // a multi-line prompt reaches the model as one message.
    const QUEUED = ['First queued prompt', 'Second queued prompt,\nover two lines'];
    const queueFrom = frames.length;
    const acks = await asParticipant(page, { id: s2.id, texts: QUEUED });
    // Each went in first: the first was typed at once, before the second came.
    assert.deepEqual(acks.map((a) => a.position), [1, 1], `acks ${JSON.stringify(acks)}`);
    // (frames holds what every socket of the page received: the
    // participant's above, too, so each delivery shows up twice.)
    const delivered = await waitFor(() => {
      const ids = [...new Set(frames.slice(queueFrom).filter((f) => f.type === 'prompt.delivered' && f.sessionId === s2.id).map((f) => f.promptId))];
      return ids.length === 2 && ids;
    }, { timeout: 60_000, message: 'both queued prompts delivered' }).catch(async (err) => {
      t.diagnostic(`Claude's screen: ${JSON.stringify(await terminalLines(page, s2.id))}`);
      throw err;
    });
    assert.deepEqual(delivered, acks.map((a) => a.promptId), 'delivered in the order queued');
    const asked = await waitFor(() => {
      const texts = api.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages').map((r) => r.prompt);
      const i = texts.findIndex((p) => p.includes(QUEUED[0]));
      const j = texts.findIndex((p) => p.includes(QUEUED[1]));
      return i >= 0 && j > i && { i, j, texts };
    }, { timeout: 60_000, message: `the model asked with both queued prompts, in order; ${diagnostic()}` });
    // One per turn: the second prompt reached the model as a message of
    // its own, not pasted into the first one's.
    assert.ok(
      !asked.texts[asked.j].includes(QUEUED[0]) && !asked.texts[asked.i].includes('over two lines'),
      `the two queued prompts went as separate turns: ${JSON.stringify(asked.texts.slice(asked.i, asked.j + 1))}`,
    );
    const second = frames.slice(queueFrom).findIndex((f) => f.type === 'prompt.delivered' && f.promptId === acks[1].promptId);
    t.diagnostic(`queued prompts reached the model as ${JSON.stringify(asked.texts.slice(asked.i, asked.j + 1))}`);
    await waitStatus(s2.id, 'waiting', FINISHED, queueFrom + second);
    await screenshot('claude-7-queue');
  },
);
