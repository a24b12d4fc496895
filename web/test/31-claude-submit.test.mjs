// Text typed into the real Claude Code CLI is submitted, also on a busy
// machine: two busy loops run for the whole test (2 cores here, as on the
// machine where this failed). Ten prompts queued at once are each typed
// into Claude and each reaches the stand-in of the Anthropic API as a
// message of its own; keys typed into the session after Claude ended (key by key
// through the page, and as one burst) resume it and are submitted once.
//
// An agent's line editor takes text and an Enter that arrive together for
// a paste, where Enter is a line break: the server types the text, then
// the Enter on its own once Claude has taken the text.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { asParticipant, showLines, tabById, waitFor, terminalLines, terminalPane, SERVER_DOWN_CONSOLE } from './harness.mjs';
import { claudeUiTest } from './claude-cli.mjs';

const NAME = 'the real Claude Code CLI on a busy machine: ten queued prompts and keys typed after Claude ended are each submitted';
const READY = 'Claude is ready for your first prompt';
const REPLY = 'The stand-in heard you.';
const QUEUED = Array.from({ length: 10 }, (_, i) => (i === 4 ? `Queued prompt 5 of 10,\nover two lines` : `Queued prompt ${i + 1} of 10`));

/** Two shell busy loops, as a loaded machine; stopped by the returned function. */
function busyLoops(n = 2) {
  const procs = Array.from({ length: n }, () => spawn('sh', ['-c', 'while :; do :; done'], { stdio: 'ignore' }));
  return () => {
    for (const p of procs) p.kill('SIGKILL');
  };
}

await claudeUiTest(
  NAME,
  {
    reply: REPLY,
    timeout: 600_000,
    allowConsole: SERVER_DOWN_CONSOLE,
  },
  async ({ t, page, server, frames, screenshot, onCleanup, api, configDir }) => {
    const stopBusy = busyLoops();
    onCleanup(stopBusy);
    // The user messages of the conversation: not Claude's own requests
    // that quote a prompt (the session title's, in <session> tags).
    const asked = () =>
      api.requests.filter((r) => r.method === 'POST' && r.path === '/v1/messages' && !r.userText.includes('<session>')).map((r) => r.userText);
    const diagnostic = () => `the stand-in was asked: ${JSON.stringify(asked().map((p) => p.slice(-120)))}`;
    const screen = async (id) => `Claude's screen: ${JSON.stringify(((await terminalLines(page, id)) ?? []).filter((l) => l.trim()))}`;
    const waitStatus = (id, status, reason, from = 0, timeout = 60_000) =>
      waitFor(() => frames.slice(from).find((f) => f.type === 'session.status' && f.sessionId === id && f.status === status && (reason === undefined || f.reason === reason)), {
        timeout,
        message: `session.status ${status}${reason ? ` "${reason}"` : ''} for ${id}`,
      });
    /** Waits until the stand-in was asked with text as a message; fails with Claude's screen. */
    const waitAsked = async (id, text, timeout = 90_000) =>
      waitFor(() => asked().some((p) => p.includes(text)), { timeout, message: `the model asked with ${JSON.stringify(text)}; ${diagnostic()}` }).catch(
        async (err) => {
          err.message += `\n${await screen(id)}`;
          throw err;
        },
      );
    const participant = (args) => asParticipant(page, args);

    const s = await server.createSession({ name: 'claude', agent: 'claude' });
    const id = s.id;
    await tabById(page, id).click();
    await waitStatus(id, 'waiting', READY);

    // 1. Ten prompts queued at once: each is typed when Claude waits,
    // and each must be submitted, as a message of its own.
    const queueFrom = frames.length;
    const started = Date.now();
    const acks = await participant({ id, texts: QUEUED });
    assert.equal(acks.length, QUEUED.length);
    for (const text of QUEUED) await waitAsked(id, text.split('\n')[0]);
    t.diagnostic(`ten queued prompts submitted in ${Date.now() - started} ms`);
    const texts = asked();
    for (const [i, text] of QUEUED.entries()) {
      const first = text.split('\n')[0];
      const with_ = texts.filter((p) => p.includes(first));
      // Its own turn: no other queued prompt pasted into it.
      assert.ok(
        with_.every((p) => QUEUED.every((o, j) => j === i || !p.includes(o.split('\n')[0]))),
        `queued prompt ${i + 1} went as a message of its own: ${JSON.stringify(with_)}`,
      );
    }
    assert.ok(texts.some((p) => p.includes('over two lines')), `the two-line prompt reached the model whole; ${diagnostic()}`);
    const delivered = new Set(frames.slice(queueFrom).filter((f) => f.type === 'prompt.delivered' && f.sessionId === id).map((f) => f.promptId));
    assert.equal(delivered.size, QUEUED.length, 'each queued prompt delivered once');
    await screenshot('claude-submit-1-queue');

    // 2. Claude ended, then keys typed into the ended session: they resume it,
    // and the Enter typed after them submits them.
    const endAndWake = async (text, type) => {
      await waitFor(async () => (await server.api(`api/sessions/${id}`)).body?.session?.status === 'waiting', {
        timeout: 60_000,
        message: `${id} waiting at its prompt before it is ended`,
      });
      // Claude is ended with Ctrl+C twice. (Not /exit: on a busy machine
      // Claude's command menu lags the keys, and Enter then ran whatever
      // the menu had highlighted, /add-dir, in 3 of 4 runs, even after
      // the menu showed /exit first.) Claude takes the second Ctrl+C only
      // within a moment of the first, which a loaded machine can miss:
      // then a quick pair again. Ctrl+C typed into an ended session does
      // not wake it.
      await terminalPane(page).click();
      await waitFor(
        async () => {
          if ((await tabById(page, id).getAttribute('data-status')) === 'stopped') return true;
          await page.keyboard.press('Control+C');
          await page.keyboard.press('Control+C');
          return false;
        },
        { timeout: 60_000, interval: 3_000, message: `tab ${id} stopped after Ctrl+C twice` },
      ).catch(async (err) => {
        err.message += `\nClaude's screen:\n${showLines((await terminalLines(page, id)) ?? [])}`;
        throw err;
      });
      const from = Date.now();
      await type(text);
      await waitAsked(id, text);
      t.diagnostic(`"${text}" submitted ${Date.now() - from} ms after it was typed into the ended session`);
      const n = asked().filter((p) => p.includes(text)).length;
      assert.ok(n >= 1, diagnostic());
    };
    await endAndWake('RECALL woken key by key', async (text) => {
      await terminalPane(page).click();
      await page.keyboard.type(text);
      await page.keyboard.press('Enter');
    });
    await endAndWake('RECALL woken in one burst', (text) => participant({ id, data: `${text}\r` }));
    await screenshot('claude-submit-2-woken');
    stopBusy();
  },
);
