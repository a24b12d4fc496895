// The key bar on a phone (issue 31, item 3): every key sends exactly the
// bytes its key sends, to a program that shows them (`cat -vT` on a raw
// terminal: ESC as ^[, Tab as ^I, Enter as ^M, a UTF-8 byte as M-x); the
// sticky Ctrl latches, lets go, and makes the phone keyboard's next letter
// a control character; text from the keyboard and an IME composition
// reach the program once; the buttons leave the focus (and so the phone's
// keyboard) where it was; a bar key in the middle of a composition has the
// composed word go first; a held arrow repeats; with the keyboard up the
// bar sits on it and the cursor's line shows above the bar (the terminal
// gives up rows, or, watched at another page's size, its pane scrolls);
// a key from the bar takes the size as typing does. On a desktop there is
// no bar.
import assert from 'node:assert/strict';
import {
  uiTest, sel, createSession, waitFor, waitForPrompt, waitForLine, typeCommand, terminalHasFocus, termSize, selectSession,
} from './harness.mjs';

/** A phone, as Chromium emulates one: 390 x 844 CSS pixels, three device pixels each, touch. */
const PHONE = { viewport: { width: 390, height: 844 }, contextOptions: { deviceScaleFactor: 3, isMobile: true, hasTouch: true } };

/** What `cat -vT` writes for these bytes (a string of UTF-8 text). */
function catV(text) {
  let out = '';
  for (const b of new TextEncoder().encode(text)) {
    let c = b;
    if (c >= 0x80) {
      out += 'M-';
      c -= 0x80;
    }
    if (c < 0x20) out += `^${String.fromCharCode(c + 0x40)}`;
    else if (c === 0x7f) out += '^?';
    else out += String.fromCharCode(c);
  }
  return out;
}

/**
 * Everything the terminal shows after the line `marker`, wrapped lines
 * joined: what cat wrote back, on one logical line (a raw terminal's
 * Enter is ^M, no new line).
 */
async function after(page, id, marker) {
  return page.evaluate(([sid, marker]) => {
    const buf = window.__agentmux.terminals.get(sid).buffer.active;
    const lines = [];
    for (let i = 0; i < buf.length; i++) {
      const l = buf.getLine(i);
      const text = l.translateToString(true);
      if (l.isWrapped && lines.length) lines[lines.length - 1] += text;
      else lines.push(text);
    }
    const at = lines.lastIndexOf(marker);
    return at < 0 ? null : lines.slice(at + 1).join('\n');
  }, [id, marker]);
}

/** Starts `cat -vT` on a raw terminal in a new session (application cursor keys on, with appCursor). */
async function catSession(page, name, { appCursor = false } = {}) {
  const id = await createSession(page, name);
  await waitForPrompt(page, id);
  const marker = `${name.toUpperCase()}-READY-42`;
  // The lines first put the cursor on the screen's last row, where a
  // raised keyboard would hide it. Then the terminal goes raw (no line
  // editing, no signals, no echo), so each key's bytes reach cat as sent.
  await typeCommand(
    page,
    `seq -f 'line %g' 1 60; ${appCursor ? "printf '\\033[?1h'; " : ''}stty raw -echo; printf '%s-READY-%s\\r\\n' ${name.toUpperCase()} $((6*7)); exec cat -vT`,
  );
  await waitForLine(page, id, marker, { message: `cat -vT started in ${name}` });
  return { id, marker };
}

/**
 * A check of what reached cat: after each step, the whole of what cat
 * wrote since the marker must be what the steps so far sent, no more and
 * no less (a doubled or lost character fails it).
 */
function expectCat(page, id, marker) {
  let want = '';
  return async (bytes, what) => {
    want += catV(bytes);
    // A trailing space is not told from an empty cell; the next step's text shows it.
    const goal = want.trimEnd();
    let got;
    await waitFor(async () => (got = await after(page, id, marker))?.trimEnd() === goal, {
      timeout: 5000,
      message: `${what}: cat to have got ${JSON.stringify(goal)}`,
    }).catch((err) => {
      err.message += `\ncat wrote ${JSON.stringify(got)}`;
      throw err;
    });
  };
}

/** The height of a phone keyboard, in CSS pixels, on a 390 x 844 phone. */
const KEYBOARD = 336;

/**
 * What a phone does when its keyboard comes up (Chrome on Android, Safari
 * on iOS): the layout viewport keeps its 844 px and the visual viewport
 * shrinks to what the keyboard leaves. Chromium's emulation has no
 * keyboard, so the visual viewport reports the shrunk height and fires
 * its resize event, as it would then; a plain box stands where the
 * keyboard would be, so that a screenshot shows what it covers.
 */
async function raiseKeyboard(page) {
  await page.evaluate((kb) => {
    const vv = window.visualViewport;
    Object.defineProperty(vv, 'height', { configurable: true, get: () => window.innerHeight - kb });
    const fake = document.createElement('div');
    fake.id = 'test-keyboard';
    fake.textContent = 'phone keyboard (emulated)';
    fake.style.cssText = `position:fixed;left:0;right:0;bottom:0;height:${kb}px;z-index:1000;pointer-events:none;` +
      'background:#3a3f47;color:#aab;font:14px sans-serif;display:flex;align-items:center;justify-content:center';
    document.body.append(fake);
    vv.dispatchEvent(new Event('resize'));
  }, KEYBOARD);
}

/** Where the bar, the terminal's host and the cursor's line are on the screen. */
async function cursorGeometry(page, id) {
  return page.evaluate((sid) => {
    const bar = document.querySelector('[data-testid="keybar"]').getBoundingClientRect();
    const term = window.__agentmux.terminals.get(sid);
    const host = document.querySelector(`.term-host[data-session-id="${sid}"]`).getBoundingClientRect();
    const screen = term.element.querySelector('.xterm-screen').getBoundingClientRect();
    const buf = term.buffer.active;
    const cell = screen.height / term.rows;
    const row = buf.baseY + buf.cursorY - buf.viewportY;
    const cursorTop = screen.top + row * cell;
    return { barTop: bar.top, barBottom: bar.bottom, hostTop: host.top, cursorTop, cursorBottom: cursorTop + cell, rows: term.rows };
  }, id);
}

const key = (page, name) => page.locator(sel('keybar')).getByRole('button', { name, exact: true });

uiTest('on a phone the key bar sends each key\'s bytes, Ctrl latches, and typed and composed text arrives once', { ...PHONE, timeout: 90_000 }, async ({ page, screenshot }) => {
  const { id, marker } = await catSession(page, 'keys');
  const bar = page.locator(sel('keybar'));
  await bar.waitFor({ state: 'visible' });
  assert.ok(await terminalHasFocus(page), 'the terminal has the focus (the phone keyboard is up)');
  const sent = expectCat(page, id, marker);

  const keys = [
    ['Esc', '\x1b'], ['Tab', '\t'], ['Up', '\x1b[A'], ['Down', '\x1b[B'], ['Left', '\x1b[D'], ['Right', '\x1b[C'],
    ['Ctrl+C', '\x03'], ['Enter', '\r'], ['Slash', '/'], ['Pipe', '|'], ['Tilde', '~'], ['Dash', '-'],
  ];
  for (const [name, bytes] of keys) {
    await key(page, name).tap();
    await sent(bytes, `a tap on ${name}`);
  }
  assert.ok(await terminalHasFocus(page), 'the taps left the focus in the terminal: the phone keyboard stays up');

  // Sticky Ctrl: latched, shown; a second tap lets go, and the next key goes plain.
  const ctrl = key(page, 'Ctrl');
  await ctrl.tap();
  assert.equal(await ctrl.getAttribute('aria-pressed'), 'true', 'Ctrl latched');
  await screenshot('keybar-ctrl-latched');
  await ctrl.tap();
  assert.equal(await ctrl.getAttribute('aria-pressed'), 'false', 'a second tap lets go');
  await key(page, 'Slash').tap();
  await sent('/', 'Slash after Ctrl let go');
  // Ctrl and the phone keyboard's next letter: its control character, once.
  await ctrl.tap();
  await page.keyboard.type('c');
  await sent('\x03', 'Ctrl, then c from the keyboard');
  assert.equal(await ctrl.getAttribute('aria-pressed'), 'false', 'the latch lets go after one key');
  await page.keyboard.type('x');
  await sent('x', 'the key after that, plain');
  // Ctrl and a bar key: what xterm.js sends for Ctrl and that key.
  await ctrl.tap();
  await key(page, 'Up').tap();
  await sent('\x1b[1;5A', 'Ctrl, then Up');
  await ctrl.tap();
  await key(page, 'Dash').tap();
  await sent('\x1f', 'Ctrl, then Dash');

  // Typed text, and an IME composition: the composition ("ni", then
  // "nihao") sends nothing; its commit sends the committed text once.
  await page.keyboard.type('typed');
  await sent('typed', 'text typed on the keyboard');
  const session = await page.context().newCDPSession(page);
  // A person's keys come tens of milliseconds apart, and the page's
  // zero-delay timers run in between: xterm.js reads a commit out of its
  // textarea in one. CDP's come faster than that, and input outranks
  // timers; so each waits for the page to have run the timers its event
  // set (a timer set after them runs after them).
  const cdp = {
    async send(method, params) {
      await session.send(method, params);
      await page.evaluate(() => new Promise((resolve) => setTimeout(resolve, 0)));
    },
  };
  await cdp.send('Input.imeSetComposition', { text: 'ni', selectionStart: 2, selectionEnd: 2 });
  await cdp.send('Input.imeSetComposition', { text: 'nihao', selectionStart: 5, selectionEnd: 5 });
  await cdp.send('Input.insertText', { text: '你好' });
  await sent('你好', 'a committed composition');
  // Japanese, composed and committed twice in a row; then text inserted
  // without a composition, as dictation and a keyboard's suggestion do.
  await cdp.send('Input.imeSetComposition', { text: 'か', selectionStart: 1, selectionEnd: 1 });
  await cdp.send('Input.imeSetComposition', { text: 'かな', selectionStart: 2, selectionEnd: 2 });
  await cdp.send('Input.insertText', { text: '仮名' });
  await sent('仮名', 'a second composition');
  await cdp.send('Input.imeSetComposition', { text: '한', selectionStart: 1, selectionEnd: 1 });
  await cdp.send('Input.insertText', { text: '한' });
  await sent('한', 'a Korean syllable');
  await cdp.send('Input.insertText', { text: 'dictated.' });
  await sent('dictated.', 'inserted text');
  // Autocorrection: the word composed ("teh") is replaced as it is
  // committed ("the"); the space after it is a key of its own.
  for (const [typed, fixed] of [['teh', 'the'], ['mroe', 'more']]) {
    for (let i = 1; i <= typed.length; i++) {
      await cdp.send('Input.imeSetComposition', { text: typed.slice(0, i), selectionStart: i, selectionEnd: i });
    }
    await cdp.send('Input.insertText', { text: fixed });
    await page.keyboard.type(' ');
  }
  await sent('the more ', 'autocorrected words');
  await page.keyboard.type('end');
  await sent('end', 'a key after the words');
  // Ctrl, then a letter a phone keyboard composes (it would hold it until
  // a space): the letter goes at once, as its control character.
  const ctrlKey = key(page, 'Ctrl');
  await ctrlKey.tap();
  await cdp.send('Input.imeSetComposition', { text: 'd', selectionStart: 1, selectionEnd: 1 });
  await sent('\x04', 'Ctrl, then a composed d');
  assert.equal(await ctrlKey.getAttribute('aria-pressed'), 'false', 'the latch let go');
  await cdp.send('Input.imeSetComposition', { text: 'w', selectionStart: 1, selectionEnd: 1 });
  await cdp.send('Input.insertText', { text: 'w' });
  await sent('w', 'the next composed letter, plain and once');
  // A key from the bar in the middle of a composition: the word composed
  // so far goes first, once, as a keyboard's Enter would have it.
  await cdp.send('Input.imeSetComposition', { text: 'ls', selectionStart: 2, selectionEnd: 2 });
  await key(page, 'Enter').tap();
  await sent('ls\r', 'Enter in the middle of a composition');
  await page.keyboard.type('z');
  await sent('z', 'a key after that');
  await cdp.send('Input.imeSetComposition', { text: 'ab', selectionStart: 2, selectionEnd: 2 });
  await key(page, 'Up').tap();
  await cdp.send('Input.imeSetComposition', { text: 'c', selectionStart: 1, selectionEnd: 1 });
  await cdp.send('Input.insertText', { text: 'c' });
  await sent('ab\x1b[Ac', 'an arrow between two compositions');
  assert.ok(await terminalHasFocus(page), 'the terminal still has the focus');
  await screenshot('keybar-phone');
});

uiTest('in application cursor mode the arrows send ESC O', { ...PHONE, timeout: 60_000 }, async ({ page }) => {
  const { id, marker } = await catSession(page, 'app', { appCursor: true });
  assert.equal(
    await page.evaluate((sid) => window.__agentmux.terminals.get(sid).modes.applicationCursorKeysMode, id),
    true,
    'the program turned application cursor keys on',
  );
  const sent = expectCat(page, id, marker);
  for (const [name, bytes] of [['Up', '\x1bOA'], ['Down', '\x1bOB'], ['Left', '\x1bOD'], ['Right', '\x1bOC'], ['Enter', '\r']]) {
    await key(page, name).tap();
    await sent(bytes, `a tap on ${name}`);
  }

  // An arrow held down repeats until let go; its release adds nothing.
  const base = await after(page, id, marker);
  const box = await key(page, 'Left').boundingBox();
  const point = { x: box.x + box.width / 2, y: box.y + box.height / 2 };
  const cdp = await page.context().newCDPSession(page);
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [point] });
  const held = (text) => text.slice(base.length).split('^[OD').length - 1;
  await waitFor(async () => held(await after(page, id, marker)) >= 3, { message: 'Left, held, to repeat' });
  await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
  await key(page, 'Slash').tap();
  const got = await waitFor(async () => {
    const text = await after(page, id, marker);
    return text.endsWith('/') && text;
  }, { message: 'the Slash after the held Left' });
  assert.match(got.slice(base.length), /^(\^\[OD){3,}\/$/, 'the held Left repeated, and nothing else reached cat');
});

uiTest('with the phone keyboard up the bar sits on it and the cursor line shows above the bar', { ...PHONE, timeout: 60_000 }, async ({ page, screenshot }) => {
  const { id, marker } = await catSession(page, 'kbd');
  const bar = page.locator(sel('keybar'));
  await bar.waitFor({ state: 'visible' });
  const before = await termSize(page, id);
  // The user had scrolled back through the output: raising the keyboard
  // to type brings the cursor's line back, as a key would.
  await page.evaluate((sid) => window.__agentmux.terminals.get(sid).scrollLines(-30), id);
  await waitFor(() => page.evaluate((sid) => {
    const buf = window.__agentmux.terminals.get(sid).buffer.active;
    return buf.viewportY < buf.baseY;
  }, id), { message: 'the terminal scrolled back' });

  await raiseKeyboard(page);
  const top = 844 - KEYBOARD;
  const geometry = () => cursorGeometry(page, id);
  let g;
  await waitFor(async () => {
    g = await geometry();
    return g.barBottom <= top + 0.5 && g.barBottom >= top - 2 && g.cursorBottom <= g.barTop && g.cursorTop >= g.hostTop;
  }, { timeout: 5000, message: 'the bar on the keyboard, the cursor line above the bar' }).catch((err) => {
    err.message += `\ngeometry: ${JSON.stringify(g)}`;
    throw err;
  });
  // The terminal gave the keyboard its rows; keys go on working.
  assert.ok(g.rows < before.rows, `the terminal has fewer rows above the keyboard (${before.rows} → ${g.rows})`);
  const sent = expectCat(page, id, marker);
  await key(page, 'Tilde').tap();
  await page.keyboard.type('ok');
  await sent('~ok', 'keys with the keyboard up');
  g = await geometry();
  assert.ok(g.cursorBottom <= g.barTop, `the cursor line stays above the bar: ${JSON.stringify(g)}`);
  await screenshot('keybar-keyboard-up');

  // The keyboard goes: the app has the whole screen again.
  await page.evaluate(() => {
    delete window.visualViewport.height;
    document.getElementById('test-keyboard').remove();
    window.visualViewport.dispatchEvent(new Event('resize'));
  });
  await waitFor(async () => (await geometry()).barBottom > top + 100, { timeout: 5000, message: 'the bar back at the bottom of the screen' });
  await screenshot('keybar-keyboard-down');
});

uiTest('a watched session scrolls its cursor line above the raised keyboard, and a key from the bar takes its size, as typing does', { ...PHONE, timeout: 60_000 }, async ({ page, server }) => {
  // Made elsewhere, at a desktop's size: the phone only watches it.
  const s = await server.createSession({
    name: 'watched', cols: 120, rows: 60,
    command: ['bash', '-c', "seq -f 'line %g' 1 70; stty raw -echo; printf 'WATCHED-READY-%s\\r\\n' $((6*7)); exec cat -vT"],
  });
  await selectSession(page, s.id);
  await waitForLine(page, s.id, 'WATCHED-READY-42', { message: 'cat -vT started' });
  assert.deepEqual(await termSize(page, s.id), { cols: 120, rows: 60 }, 'watching, the phone shows the session at its size');
  // Drawn at another page's size, the session is taller than what the
  // raised keyboard leaves: the pane scrolls to the cursor's line.
  await raiseKeyboard(page);
  let g;
  await waitFor(async () => {
    g = await cursorGeometry(page, s.id);
    return g.barBottom <= 844 - KEYBOARD + 0.5 && g.cursorBottom <= g.barTop && g.cursorTop >= g.hostTop;
  }, { timeout: 5000, message: 'the watched session\'s cursor line above the bar' }).catch((err) => {
    err.message += `\ngeometry: ${JSON.stringify(g)}`;
    throw err;
  });
  assert.deepEqual(await termSize(page, s.id), { cols: 120, rows: 60 }, 'raising the keyboard takes no size: the phone still watches');
  await key(page, 'Down').tap();
  await expectCat(page, s.id, 'WATCHED-READY-42')('\x1b[B', 'a tap on Down');
  const own = await waitFor(async () => {
    const size = await termSize(page, s.id);
    return size.cols < 120 && size;
  }, { message: 'the phone fitting the terminal to itself after the key' });
  await waitFor(async () => {
    const listed = (await server.sessions()).find((x) => x.id === s.id);
    return listed.cols === own.cols && listed.rows === own.rows;
  }, { message: `the session at the phone's size ${JSON.stringify(own)}, as after a keystroke` });
});

uiTest('on a desktop there is no key bar', async ({ page }) => {
  const id = await createSession(page, 'desk');
  await waitForPrompt(page, id);
  assert.equal(await page.locator(sel('keybar')).isVisible(), false, 'no key bar without a touch screen');
});
