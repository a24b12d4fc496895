// A reload never types into the program (docs/protocol.md section 4,
// "Terminal queries in replays"): the input modes in a replay's history
// (focus reporting, mouse tracking and its encodings) make the page send
// nothing, and after the replay the page has the modes the program has
// now.
//
// - A shell where a program turned focus reporting and mouse tracking on,
//   then off, runs `cat -v`: a reload, then focus changes, clicks and mouse
//   moves over the terminal, reach cat as nothing at all. The history is
//   longer than the first screens a reload asks for, so the first replay
//   starts after the modes were turned on (they come back in its mode
//   prefix) and the whole replay follows.
// - The positive control: a program that leaves focus reporting on gets
//   exactly the focus changes made after the reload, and nothing from the
//   reload itself.
import assert from 'node:assert/strict';
import {
  uiTest, createSession, waitFor, waitForPrompt, typeCommand, terminalLines, terminalPane, reloadApp, waitForScreen, showLines,
} from './harness.mjs';

// ---------------------------------------------------------------------------
// Helpers (local to this file)


/** The input modes as xterm.js has them. */
async function inputModes(page, id) {
  return page.evaluate((sid) => {
    const m = window.__agentmux.terminals.get(sid).modes;
    return { focus: m.sendFocusMode, mouse: m.mouseTrackingMode, appCursor: m.applicationCursorKeysMode, paste: m.bracketedPasteMode };
  }, id);
}

/** Takes the keyboard focus away from the terminal, as a click elsewhere would. */
async function blurTerminal(page) {
  await page.evaluate(() => {
    if (document.activeElement instanceof HTMLElement) document.activeElement.blur();
  });
}

/** Gives the terminal the keyboard focus without a click (a click is a mouse event too). */
async function focusTerminal(page, id) {
  await page.evaluate((sid) => window.__agentmux.terminals.get(sid).focus(), id);
}

/**
 * Types line and Enter into cat -v, and waits for cat to write it back:
 * the echo and cat's copy, after the line `after`. Returns cat's copy,
 * with whatever reached cat before the line shown by -v as ^[...
 */
async function catLine(page, id, line, after) {
  await page.keyboard.type(line);
  await page.keyboard.press('Enter');
  const lines = await waitForScreen(
    page,
    id,
    (ls) => {
      const from = ls.lastIndexOf(after);
      return from >= 0 && ls.slice(from + 1).filter((l) => l.endsWith(line)).length >= 2;
    },
    `cat -v to echo ${line}`,
  );
  return lines.slice(lines.lastIndexOf(after) + 1).filter((l) => l.endsWith(line))[1];
}

// ---------------------------------------------------------------------------

uiTest(
  'a reload sends no focus or mouse reports for modes the history turned on and off',
  { timeout: 120_000 },
  async ({ t, page, screenshot }) => {
    const id = await createSession(page, 'modes-off');
    await waitForPrompt(page, id);
    // Focus reporting on answers at once with the focus state (ESC [ I, the
    // terminal has the focus after typing): read it, so it never reaches cat.
    await typeCommand(
      page,
      "printf '\\033[?1004h'; read -r -s -d I -t 15 rep; printf '\\033[?1003h\\033[?1006h'; " +
        "seq -f 'LINE-%g' 1 150; printf '\\033[?1006l\\033[?1003l\\033[?1004l'; echo MODES-OFF-$((6*7)); cat -v",
    );
    await waitForScreen(page, id, (ls) => ls.includes('MODES-OFF-42'), 'the modes on, 150 lines, the modes off');
    assert.deepEqual(await inputModes(page, id), { focus: false, mouse: 'none', appCursor: false, paste: false }, 'live: the modes are off again');

    for (const round of [1, 2]) {
      await reloadApp(page);
      // The whole replay is in: the command line comes before the lines
      // the first screens carry.
      await waitForScreen(
        page,
        id,
        (ls) => ls.includes('MODES-OFF-42') && ls.some((l) => l.startsWith('$ printf')) && ls.includes('LINE-1'),
        `reload ${round}: the whole screen and scrollback back`,
      );
      assert.deepEqual(
        await inputModes(page, id),
        { focus: false, mouse: 'none', appCursor: false, paste: false },
        `reload ${round}: the modes the program has now, all off`,
      );
      // Everything a page does that a mode would report.
      await focusTerminal(page, id);
      await blurTerminal(page);
      const box = await terminalPane(page).boundingBox();
      await page.mouse.move(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.move(box.x + box.width / 3, box.y + box.height / 4, { steps: 5 });
      await page.mouse.click(box.x + box.width / 2, box.y + box.height / 2);
      await page.mouse.wheel(0, -120);
      await blurTerminal(page);
      await focusTerminal(page, id);
      const got = await catLine(page, id, `CAT-END-${round}`, 'MODES-OFF-42');
      const lines = await terminalLines(page, id);
      assert.equal(got, `CAT-END-${round}`, `reload ${round}: nothing but the typed line reached cat:\n${showLines(lines)}`);
      const junk = lines.slice(lines.indexOf('MODES-OFF-42') + 1).filter((l) => l.includes('^['));
      assert.deepEqual(junk, [], `reload ${round}: no escape sequence reached the program:\n${showLines(lines)}`);
      t.diagnostic(`reload ${round}: cat got only ${got}`);
    }
    await screenshot('reload-input-modes-off');
  },
);

uiTest(
  'after a reload a program that left focus reporting on gets the focus changes made since, and nothing else',
  { timeout: 120_000 },
  async ({ t, page, screenshot }) => {
    const id = await createSession(page, 'focus-on');
    await waitForPrompt(page, id);
    await typeCommand(page, "printf '\\033[?1004h'; read -r -s -d I -t 15 rep; echo FOCUS-ON-$((6*7)); cat -v");
    await waitForScreen(page, id, (ls) => ls.includes('FOCUS-ON-42'), 'focus reporting on');
    assert.equal((await inputModes(page, id)).focus, true, 'live: focus reporting is on');

    let after = 'FOCUS-ON-42';
    for (const round of [1, 2]) {
      await reloadApp(page);
      await waitForScreen(page, id, (ls) => ls.includes('FOCUS-ON-42') && ls.some((l) => l.startsWith('$ printf')), `reload ${round}: the screen back`);
      assert.equal((await inputModes(page, id)).focus, true, `reload ${round}: focus reporting is still on`);
      // The reload left the terminal without the focus: giving it the
      // focus is the first thing the program hears of.
      await focusTerminal(page, id);
      let got = await catLine(page, id, `PRE-${round}`, after);
      assert.equal(got, `^[[IPRE-${round}`, `reload ${round}: cat got the focus-in and the typed line, and nothing from the reload`);
      after = got;
      await blurTerminal(page);
      await focusTerminal(page, id);
      got = await catLine(page, id, `POST-${round}`, after);
      assert.equal(got, `^[[O^[[IPOST-${round}`, `reload ${round}: a focus-out and a focus-in reach the program`);
      after = got;
      t.diagnostic(`reload ${round}: cat got ${got}`);
    }
    await screenshot('reload-input-modes-focus-on');
  },
);
