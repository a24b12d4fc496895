// Terminal fidelity across reloads and restarts (docs/protocol.md section 4,
// "Terminal queries in replays" and "A new run starts on a clean terminal"):
//
// - A reload never types into the running program: the terminal queries
//   (DA1, DA2, cursor position, OSC 10/11 colours, DECRQM) still in the
//   replayed output go unanswered, in the tab on screen and in one shown
//   later; queries the program sends live are still answered.
// - vim open across a reload: its startup queries, replayed, do not run as
//   vim commands (the cursor stays, the buffer is not modified).
// - A resumed run starts on a clean terminal: a run that died on the
//   alternate screen with mouse tracking, application cursor keys and
//   focus reporting on leaves none of them to the next run, and a click
//   types nothing into its shell.
// - The "Restored after a restart" bar takes no rows from the terminal: a
//   restored full-screen program keeps its last row. A session that failed
//   on its own is still an error after the restart.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  uiTest, sel, createSession, tabById, waitFor, waitForPrompt, waitForLine, typeCommand, terminalLines,
  terminalPane, reloadApp, waitForScreen, showLines, SERVER_DOWN_CONSOLE,
} from './harness.mjs';

// ---------------------------------------------------------------------------
// Helpers (local to this file)

/** Prints the queries, then reads the live answers (up to the CPR's R, asked last) so none reach the prompt. */
const QUERY_CMD =
  "printf '\\033[c\\033[>c\\033]10;?\\007\\033]11;?\\007\\033[?2026$p\\033[6n'; " +
  'read -r -s -d R -t 15 ans; echo "QUERIES-DONE-$((${#ans} > 10))"';
/** The line QUERY_CMD ends with when the live queries were answered (more than 10 characters read). */
const QUERIES_DONE = 'QUERIES-DONE-1';

/** Pieces of xterm.js's answers to the queries above: none may ever show on a screen. */
const ANSWER_JUNK = /rgb:|0;276;0c|\?1;2c|2026;\d\$y|\d+;\d+R/;

const isPrompt = (l) => /^\$( |$)/.test(l);

function lastNonEmpty(lines) {
  for (let i = lines.length - 1; i >= 0; i--) if (lines[i].trim()) return lines[i];
  return '';
}


/** The rows on screen (the viewport) of a session's terminal, right-trimmed. */
async function visibleRows(page, id) {
  return page.evaluate((sid) => {
    const term = window.__agentmux.terminals.get(sid);
    if (!term) return null;
    const b = term.buffer.active;
    const out = [];
    for (let y = b.viewportY; y < b.viewportY + term.rows; y++) {
      out.push((b.getLine(y)?.translateToString(true) ?? '').trimEnd());
    }
    return out;
  }, id);
}

/** The terminal modes the tests care about, as xterm.js has them. */
async function termModes(page, id) {
  return page.evaluate((sid) => {
    const term = window.__agentmux.terminals.get(sid);
    if (!term) return null;
    const m = term.modes;
    return {
      buffer: term.buffer.active.type,
      mouse: m.mouseTrackingMode,
      appCursor: m.applicationCursorKeysMode,
      appKeypad: m.applicationKeypadMode,
      focus: m.sendFocusMode,
      rows: term.rows,
      cols: term.cols,
    };
  }, id);
}

/**
 * Types a marker command into a shell at its prompt and checks that it ran
 * as typed: the command line is exactly "$ <cmd>" and its output line is
 * exactly `want`. Anything typed before it (the answers to replayed
 * queries) would show on that line.
 */
async function checkCleanCommand(page, id, cmd, want, what) {
  // The part of the command that is new on this screen (cmd is "echo <tag>...").
  const arg = cmd.replace(/^echo /, '');
  await typeCommand(page, cmd);
  // Wait for the command to finish: its output, or the prompt after its line.
  const lines = await waitForScreen(
    page,
    id,
    (ls) => {
      const i = ls.findLastIndex((l) => l.includes(arg));
      return ls.includes(want) || (i >= 0 && ls.slice(i + 1).some(isPrompt));
    },
    `${what}: the output of "${cmd}"`,
  ).catch((err) => {
    err.message = `${what}: "${cmd}" did not run as typed: ${err.message}`;
    throw err;
  });
  const cmdLine = lines.findLast((l) => l.includes(arg));
  assert.equal(cmdLine, `$ ${cmd}`, `${what}: nothing was typed before the command:\n${showLines(lines)}`);
  assert.ok(lines.includes(want), `${what}: the output line is exactly ${want}:\n${showLines(lines)}`);
  const junk = lines.filter((l) => ANSWER_JUNK.test(l));
  assert.deepEqual(junk, [], `${what}: answers to terminal queries showed up on the screen:\n${showLines(lines)}`);
  return lines;
}

/** Runs a live cursor-position and DA1 query in the shell: both must be answered. Returns the screen once the prompt after the answer is back. */
async function checkLiveQueries(page, id, tag) {
  await typeCommand(
    page,
    `printf '\\033[6n'; read -r -s -d R -t 15 pos; printf '\\033[c'; read -r -s -d c -t 15 da; echo "LIVE${tag}:\${pos#*[}:\${da#*[}:END"`,
  );
  const line = await waitForLine(page, id, (l) => l.startsWith(`LIVE${tag}:`), {
    timeout: 25_000,
    message: `the answer line LIVE${tag}:... of the live queries`,
  });
  assert.match(line, new RegExp(`^LIVE${tag}:\\d+;\\d+:\\?[\\d;]+:END$`), 'the live CPR and DA1 queries were answered');
  // The shell prints its prompt after the answer line, a moment later: wait
  // for a line after it, so the caller checks the prompt, not the gap before it.
  return waitForScreen(
    page,
    id,
    (ls) => {
      const i = ls.findLastIndex((l) => l.startsWith(`LIVE${tag}:`));
      return i >= 0 && ls.slice(i + 1).some((l) => l.trim());
    },
    `the prompt after the answer line LIVE${tag}:...`,
  );
}

/** Checks that fn() reports ok on every poll for `ms` (a state that must not change, e.g. after a layout change); returns the last report. */
async function holdsFor(fn, ms, message) {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (!v.ok) assert.fail(`${message}: ${v.detail}`);
    if (Date.now() >= end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

// ---------------------------------------------------------------------------

uiTest(
  'a reload never types the answers to replayed terminal queries into the shell; live queries are answered',
  { timeout: 120_000 },
  async ({ t, page, screenshot }) => {
    const id = await createSession(page, 'queries');
    await waitForPrompt(page, id);
    await typeCommand(page, QUERY_CMD);
    let lines = await waitForScreen(
      page,
      id,
      (ls) => ls.includes(QUERIES_DONE) && isPrompt(lastNonEmpty(ls)),
      'the queries printed, answered live, and the prompt back',
    );
    assert.equal(lastNonEmpty(lines), '$', `a clean prompt after the live answers were read:\n${showLines(lines)}`);

    for (const round of [1, 2]) {
      await reloadApp(page);
      lines = await waitForScreen(
        page,
        id,
        (ls) => ls.includes(QUERIES_DONE) && isPrompt(lastNonEmpty(ls)),
        `reload ${round}: the screen back, with the prompt`,
      );
      assert.equal(await page.evaluate(() => window.__agentmux.activeSessionId()), id, 'the session is on screen');
      await checkCleanCommand(page, id, `echo MARK${round}-$((6*7))`, `MARK${round}-42`, `reload ${round}`);
      // The swallowing ends with the replay: a live query is answered.
      lines = await checkLiveQueries(page, id, String(round));
      assert.equal(lastNonEmpty(lines), '$', `reload ${round}: a clean prompt at the end:\n${showLines(lines)}`);
      t.diagnostic(`reload ${round}: marker ran as typed, live queries answered`);
    }
    await screenshot('fidelity-queries');
  },
);

uiTest(
  'a session shown after the reload (a hidden tab at reload time) gets no answers typed into it either',
  { timeout: 120_000 },
  async ({ page, screenshot }) => {
    const asker = await createSession(page, 'asker');
    await waitForPrompt(page, asker);
    await typeCommand(page, QUERY_CMD);
    await waitForScreen(page, asker, (ls) => ls.includes(QUERIES_DONE) && isPrompt(lastNonEmpty(ls)), 'the queries printed');

    const other = await createSession(page, 'other');
    await waitForPrompt(page, other);
    assert.equal(await page.evaluate(() => window.__agentmux.activeSessionId()), other, '"other" is on screen');

    for (const round of [1, 2]) {
      await reloadApp(page);
      await waitForPrompt(page, other, { timeout: 20_000 });
      assert.equal(await page.evaluate(() => window.__agentmux.activeSessionId()), other, `reload ${round}: "other" is still on screen`);
      // Now show the asker: its replay, queries and all, is parsed only now.
      await tabById(page, asker).click();
      await waitFor(async () => (await page.evaluate(() => window.__agentmux.activeSessionId())) === asker, {
        message: 'the asker on screen after a click on its tab',
      });
      await waitForScreen(
        page,
        asker,
        (ls) => ls.includes(QUERIES_DONE) && isPrompt(lastNonEmpty(ls)),
        `reload ${round}: the asker's screen back`,
      );
      await checkCleanCommand(page, asker, `echo HIDDEN${round}-$((6*7))`, `HIDDEN${round}-42`, `reload ${round}, tab shown later`);
      await checkLiveQueries(page, asker, `H${round}`);
      // The shell in "other" got nothing either.
      await tabById(page, other).click();
      await waitFor(async () => (await page.evaluate(() => window.__agentmux.activeSessionId())) === other, {
        message: '"other" on screen again',
      });
      await checkCleanCommand(page, other, `echo OTHER${round}-$((6*7))`, `OTHER${round}-42`, `reload ${round}, the other tab`);
    }
    await screenshot('fidelity-hidden-tab');
  },
);

uiTest(
  'vim open across reloads: its replayed startup queries do not run as vim commands',
  { timeout: 120_000 },
  async ({ page, server, screenshot }) => {
    const original = 'alpha\nbravo\ncharlie\ndelta\necho\nfoxtrot\n';
    const file = await server.writeFile('notes.txt', original);
    const id = await createSession(page, 'editor');
    await waitForPrompt(page, id);
    await typeCommand(page, 'vim notes.txt');
    await waitForScreen(
      page,
      id,
      (ls) => ls.some((l) => l.startsWith('"notes.txt"')) && ls.includes('foxtrot'),
      'vim showing notes.txt',
    );
    // Focus without a click: vim has the mouse (defaults.vim), a click would move its cursor.
    const focusTerm = () => page.evaluate((sid) => window.__agentmux.terminals.get(sid).focus(), id);
    const ask = async (tag) => {
      await focusTerm();
      await page.keyboard.type(`:echo '${tag}-' . line('.') . '-' . col('.') . '-' . &modified`);
      await page.keyboard.press('Enter');
      const rows = await waitForScreen(
        page,
        id,
        (ls) => ls.some((l) => l.startsWith(`${tag}-`)),
        `vim's answer ${tag}-<line>-<col>-<modified> on its command line (typed keys ran as vim commands otherwise)`,
      );
      // The message, without the ruler vim shows on the same row.
      return rows.find((l) => l.startsWith(`${tag}-`)).split(/\s+/)[0];
    };
    await focusTerm();
    await page.keyboard.type('3G4|');
    assert.equal(await ask('AT'), 'AT-3-4-0', 'vim at line 3, column 4, unmodified');

    for (const round of [1, 2]) {
      await reloadApp(page);
      await waitForScreen(page, id, (ls) => ls.includes('foxtrot') && ls.some((l) => l.startsWith('AT-') || l.startsWith('BACK')), `reload ${round}: vim's screen back`);
      assert.equal(await ask(`BACK${round}`), `BACK${round}-3-4-0`, `reload ${round}: vim's cursor did not move and the buffer is unmodified`);
    }
    await screenshot('fidelity-vim');

    await focusTerm();
    await page.keyboard.type(':wq');
    await page.keyboard.press('Enter');
    const lines = await waitForScreen(page, id, (ls) => ls.some((l) => l.includes('"notes.txt"') && /written/.test(l)) || isPrompt(lastNonEmpty(ls)), 'vim to write and quit');
    await waitForScreen(page, id, (ls) => isPrompt(lastNonEmpty(ls)), 'the shell prompt after :wq').catch((err) => {
      err.message += `\n(before: ${showLines(lines)})`;
      throw err;
    });
    assert.equal(await fs.readFile(file, 'utf8'), original, 'notes.txt on disk is unchanged');
    await checkCleanCommand(page, id, 'echo VIMDONE-$((6*7))', 'VIMDONE-42', 'after vim');
  },
);

uiTest(
  'a resumed run starts on a clean terminal: no alternate screen, mouse tracking, cursor keys or focus reports left over',
  { timeout: 120_000, allowConsole: SERVER_DOWN_CONSOLE },
  async ({ t, page, server, screenshot }) => {
    // The first run turns the modes on and dies with them on (the server's
    // restart kills it); every later run is a plain interactive bash.
    const flag = path.join(server.workspace, '.modes-first-run-done');
    const script =
      // (bash -c drops PS1; the shell it execs gets it back.)
      `if [ -e '${flag}' ]; then export PS1='$ '; exec bash --norc --noprofile -i; fi; : > '${flag}'; ` +
      // One write, the line with the modes: the page answers the focus
      // report mode at once ("\\033[I"), and the terminal's echo of that
      // answer must not land between the modes and the line.
      "printf '\\033[?1049h\\033[H\\033[2J\\033[?1000h\\033[?1002h\\033[?1006h\\033[?1h\\033=\\033[?1004hDEAD-RUN-MODES-ON\\n'; " +
      'exec sleep 600';
    const s = await server.createSession({ name: 'modes', command: ['bash', '-c', script] });
    const id = s.id;
    const tab = tabById(page, id);
    await tab.click();
    await waitForLine(page, id, 'DEAD-RUN-MODES-ON', { timeout: 20_000 });
    const dead = await termModes(page, id);
    assert.deepEqual(
      { buffer: dead.buffer, mouse: dead.mouse !== 'none', appCursor: dead.appCursor, focus: dead.focus },
      { buffer: 'alternate', mouse: true, appCursor: true, focus: true },
      `the first run turned the modes on: ${JSON.stringify(dead)}`,
    );

    await server.restart();
    await waitFor(async () => (await tab.getAttribute('data-status')) === 'idle', { timeout: 30_000, message: 'the session idle after the restart' });
    const resume = page.locator(`${sel('resume')} >> visible=true`).first();
    await resume.waitFor({ state: 'visible', timeout: 20_000 });

    // A reload of the restored (not resumed) session replays the dead run:
    // its modes come back with it.
    await reloadApp(page);
    await waitForLine(page, id, 'DEAD-RUN-MODES-ON', { timeout: 20_000 });
    const restored = await termModes(page, id);
    t.diagnostic(`modes of the restored screen after a reload: ${JSON.stringify(restored)}`);
    assert.equal(restored.buffer, 'alternate', 'the restored screen is the dead run\'s alternate screen');
    assert.notEqual(restored.mouse, 'none', 'the restored screen has the dead run\'s mouse tracking');

    await page.locator(`${sel('resume')} >> visible=true`).first().click();
    await waitFor(async () => (await tab.getAttribute('data-status')) === 'active', { timeout: 20_000, message: 'active after resume' });
    await waitForScreen(page, id, (ls) => isPrompt(lastNonEmpty(ls)), 'the resumed run\'s bash prompt');
    const clean = await termModes(page, id);
    assert.deepEqual(
      { buffer: clean.buffer, mouse: clean.mouse, appCursor: clean.appCursor, appKeypad: clean.appKeypad, focus: clean.focus },
      { buffer: 'normal', mouse: 'none', appCursor: false, appKeypad: false, focus: false },
      `the resumed run starts on a clean terminal: ${JSON.stringify(clean)}`,
    );

    // A click in the terminal types nothing into bash (mouse reports would).
    const box = await terminalPane(page).boundingBox();
    await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
    await page.mouse.click(box.x + box.width / 3, box.y + box.height / 3);
    await checkCleanCommand(page, id, 'echo CLICK-$((3*3))', 'CLICK-9', 'after clicks in the resumed run');
    // Arrow keys are plain cursor keys again: Up recalls the last command.
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('Enter');
    await waitForScreen(page, id, (ls) => ls.filter((l) => l === 'CLICK-9').length >= 2, 'Up + Enter running the last command again');
    await screenshot('fidelity-resumed-clean');
  },
);

uiTest(
  'the restored-screen bar takes no rows from the terminal; a failed session stays an error after a restart',
  { timeout: 120_000, allowConsole: SERVER_DOWN_CONSOLE },
  async ({ t, page, server, screenshot }) => {
    const failed = await server.createSession({ name: 'fails', command: ['sh', '-c', 'exit 3'] });
    await waitFor(
      async () => {
        const s = (await server.sessions()).find((x) => x.id === failed.id);
        return s && s.status === 'error' && s.exitCode === 3;
      },
      { timeout: 20_000, message: 'the failing session in status error with exit code 3' },
    );

    // A full-screen program on the alternate screen: row-1 ... row-(N-1),
    // then LAST-ROW on the last row; redrawn on every resize.
    const draw =
      'draw() { set -- $(stty size); printf "\\033[H\\033[2J"; i=1; ' +
      'while [ $i -lt $1 ]; do printf "row-%d\\r\\n" $i; i=$((i+1)); done; printf "LAST-ROW"; }; ' +
      'printf "\\033[?1049h"; trap draw WINCH; draw; while :; do sleep 1 & wait $!; done';
    const full = await server.createSession({ name: 'fullscreen', command: ['bash', '-c', draw] });
    const tab = tabById(page, full.id);
    await tab.click();
    const fullScreen = async () => {
      const rows = await visibleRows(page, full.id);
      if (!rows) return { ok: false, detail: 'no terminal' };
      const n = rows.length;
      const ok = rows[n - 1] === 'LAST-ROW' && rows[0] === 'row-1' && rows[n - 2] === `row-${n - 1}`;
      return { ok, rows: n, detail: `${n} rows: first ${JSON.stringify(rows[0])}, last two ${JSON.stringify(rows.slice(-2))}` };
    };
    await waitFor(async () => {
      const v = await fullScreen();
      return v.ok && v;
    }, { timeout: 20_000, message: 'the full-screen program filling every row, LAST-ROW last' });
    const size0 = await termModes(page, full.id);
    assert.equal(size0.buffer, 'alternate');
    t.diagnostic(`before the restart: ${size0.cols}x${size0.rows}`);

    await server.restart();
    await waitFor(async () => (await tab.getAttribute('data-status')) === 'idle', { timeout: 30_000, message: 'the session idle after the restart' });
    // The failed session is still an error, with its exit code, not idle.
    const s = (await server.sessions()).find((x) => x.id === failed.id);
    assert.equal(s.status, 'error', `the failed session after the restart: ${JSON.stringify(s)}`);
    assert.equal(s.exitCode, 3, 'its exit code survives the restart');

    const resume = page.locator(`${sel('resume')} >> visible=true`).first();
    await resume.waitFor({ state: 'visible', timeout: 20_000 });
    await waitFor(async () => !(await page.locator(sel('banner-connection')).isVisible()), {
      timeout: 20_000,
      message: 'the connection banner gone after the restart',
    });
    // The bar is up: for a while (its layout settles, a fit follows) the
    // terminal keeps every row and the program's last row stays on the
    // last row.
    await holdsFor(
      async () => {
        const v = await fullScreen();
        const m = await termModes(page, full.id);
        const rows = (await visibleRows(page, full.id)) ?? [];
        return {
          // The banners shown while the server was down lie over the page
          // and took no rows either: the whole screen is still in place.
          ok: m.rows === size0.rows && rows.includes('LAST-ROW') && v.ok,
          detail: `terminal ${m.cols}x${m.rows} (was ${size0.cols}x${size0.rows}); ${v.detail}`,
        };
      },
      1500,
      'with the restored-screen bar shown, the terminal keeps its rows and the whole screen',
    );
    await screenshot('fidelity-restored-bar');

    // A reload: a fresh terminal, fitted with the bar already up, replays
    // the saved screen whole.
    await reloadApp(page);
    await page.locator(`${sel('resume')} >> visible=true`).first().waitFor({ state: 'visible', timeout: 20_000 });
    await waitFor(async () => (await fullScreen()).ok, { timeout: 20_000, message: 'the restored screen after a reload, LAST-ROW last' }).catch(async (err) => {
      err.message += `\n${(await fullScreen()).detail}`;
      throw err;
    });
    await holdsFor(
      async () => {
        const v = await fullScreen();
        const m = await termModes(page, full.id);
        return { ok: v.ok && m.rows === size0.rows, detail: `terminal ${m.cols}x${m.rows} (was ${size0.cols}x${size0.rows}); ${v.detail}` };
      },
      1500,
      'after a reload with the bar shown, the terminal keeps its rows and LAST-ROW',
    );

    const ftab = tabById(page, failed.id);
    await waitFor(async () => (await ftab.getAttribute('data-status')) === 'error', { message: 'the failed session\'s tab says error' });
    await ftab.click();
    await page.locator(`${sel('resume')} >> visible=true`).first().waitFor({ state: 'visible' });
    await screenshot('fidelity-failed-after-restart');
  },
);
