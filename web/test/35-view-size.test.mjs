// Issue 27, part 6: viewing never resizes. A second page, at 1024 px or on
// a phone, leaves the session's size as the person typing has it, and shows
// the session at that size (a long command line intact); "Fit to this
// window" resizes on purpose, and typing from the second page takes the
// size, as in tmux.
import assert from 'node:assert/strict';
import {
  uiTest, sel, browser, openApp, createSession, waitFor, waitForPrompt, waitForLine, typeCommand, termSize, tabById, screenshot, selectSession,
} from './harness.mjs';

/** The session's size as the server has it (GET /api/sessions). */
async function apiSize(server, id) {
  const s = (await server.sessions()).find((x) => x.id === id);
  assert.ok(s, `session ${id} is listed`);
  return { cols: s.cols, rows: s.rows };
}

/** The buffer's lines with wrapped rows joined: the lines as the program wrote them. */
async function logicalLines(page, id) {
  return page.evaluate((id) => {
    const buf = window.__agentmux.terminals.get(id).buffer.active;
    const out = [];
    for (let i = 0; i < buf.length; i++) {
      const line = buf.getLine(i);
      const text = line.translateToString(false);
      if (line.isWrapped && out.length) out[out.length - 1] += text;
      else out.push(text);
    }
    return out.map((l) => l.trimEnd());
  }, id);
}

/** Records the JSON frames a page's WebSockets send and receive, in order. */
function recordFrames(page) {
  const log = [];
  page.on('websocket', (sock) => {
    const take = (dir) => ({ payload }) => {
      try {
        const m = JSON.parse(String(payload));
        if (m.type !== 'terminal.output' && m.type !== 'terminal.ack') log.push({ dir, ...m });
      } catch {}
    };
    sock.on('framesent', take('sent'));
    sock.on('framereceived', take('received'));
  });
  return log;
}

/**
 * Waits until the server has handled everything the page sent up to now:
 * selecting another session sends a client.hello, answered in order with a
 * client.welcome, and a connection's messages are handled one at a time.
 */
async function settle(page, log, otherId, backId) {
  const hellos = () => log.filter((m) => m.dir === 'sent' && m.type === 'client.hello').length;
  const welcomes = () => log.filter((m) => m.dir === 'received' && m.type === 'client.welcome').length;
  const before = hellos();
  await selectSession(page, otherId);
  await waitFor(() => hellos() > before && welcomes() >= hellos(), { message: 'the welcome for the hello sent after the resize' });
  await selectSession(page, backId);
}

const WORDS = Array.from({ length: 20 }, (_, i) => `word${String(i).padStart(2, '0')}-abcdef`).join(' ');
const LONG = `echo ${WORDS}`;

uiTest('a page that only watches leaves the size alone and shows the session as written', { timeout: 150_000 }, async ({ page, server }) => {
  assert.equal(LONG.length, 284);
  const id = await createSession(page, 'sized');
  const other = await createSession(page, 'other');
  await tabById(page, id).click();
  await waitForPrompt(page, id);
  await typeCommand(page, LONG);
  await waitFor(async () => (await logicalLines(page, id)).includes(WORDS), { message: 'the long line\'s output' });
  const typed = await termSize(page, id);
  const size = await waitFor(async () => {
    const s = await apiSize(server, id);
    return s.cols === typed.cols && s.rows === typed.rows && s;
  }, { message: `the session at the typing page's size ${JSON.stringify(typed)}` });
  assert.ok(size.cols > 120, `the typing page is wide: ${size.cols} cols`);

  const b = await browser();
  const watchers = [];
  for (const [name, viewport] of [['1024', { width: 1024, height: 768 }], ['phone', { width: 390, height: 844 }]]) {
    const context = await b.newContext({ viewport });
    const w = await context.newPage();
    watchers.push({ name, context, page: w });
    const log = recordFrames(w);
    await openApp(w, server.url);
    await selectSession(w, id);
    // It told the server its own, smaller size...
    const asked = await waitFor(
      () => log.find((m) => m.dir === 'sent' && m.type === 'terminal.resize' && m.sessionId === id),
      { message: `${name}: its terminal.resize` },
    );
    assert.ok(asked.cols < size.cols, `${name} asked for ${asked.cols} cols, fewer than the session's ${size.cols}`);
    assert.notEqual(asked.take, true, `${name} did not take the size`);
    await settle(w, log, other, id);
    // ...which the server only remembered.
    assert.deepEqual(await apiSize(server, id), size, `${name}: the session keeps its size while watched`);
    // It draws the session at the session's size: the command line whole.
    await waitFor(async () => {
      const t = await termSize(w, id);
      return t.cols === size.cols && t.rows === size.rows;
    }, { message: `${name}: xterm at the session's ${size.cols}x${size.rows}` });
    await waitFor(async () => {
      const lines = await logicalLines(w, id);
      return lines.some((l) => l.endsWith(LONG)) && lines.includes(WORDS);
    }, { message: `${name}: the 284-character command line and its output, intact` });
    // Scaled down to fit the pane, to a readable minimum, then scrolled sideways.
    const fit = await w.evaluate((id) => {
      const host = document.querySelector(`.term-host[data-session-id="${id}"]`);
      const t = window.__agentmux.terminals.get(id);
      return { font: t.options.fontSize, scroll: host.scrollWidth, client: host.clientWidth };
    }, id);
    if (name === '1024') {
      assert.ok(fit.font < 13 && fit.font >= 8, `1024: the font is scaled down (${fit.font}px)`);
      assert.ok(fit.scroll <= fit.client + 1, `1024: the screen fits the pane (${fit.scroll} <= ${fit.client})`);
    } else {
      assert.ok(fit.font >= 8, `phone: the font stays readable (${fit.font}px)`);
      assert.ok(fit.scroll > fit.client, `phone: the pane scrolls sideways (${fit.scroll} > ${fit.client})`);
    }
    await screenshot(w, `view-size-${name}`);
    assert.ok(await w.getByRole('button', { name: 'Fit to this window' }).isVisible(), `${name}: "Fit to this window" is offered`);
  }
  await screenshot(page, 'view-size-typist');

  // "Fit to this window" on the 1024 page resizes on purpose.
  const [mid, phone] = watchers;
  await mid.page.getByRole('button', { name: 'Fit to this window' }).click();
  const midSize = await waitFor(async () => {
    const s = await apiSize(server, id);
    const t = await termSize(mid.page, id);
    return s.cols < size.cols && s.cols === t.cols && s.rows === t.rows && s;
  }, { message: 'the session at the 1024 page\'s size after "Fit to this window"' });
  assert.equal(await mid.page.evaluate((id) => window.__agentmux.terminals.get(id).options.fontSize, id), 13, 'the fitted page draws at its own font size');
  assert.ok(!(await mid.page.getByRole('button', { name: 'Fit to this window' }).isVisible()), 'no "Fit" while the page has the size');
  // The first page now watches: it shows the session at the new size.
  await waitFor(async () => {
    const t = await termSize(page, id);
    return t.cols === midSize.cols && t.rows === midSize.rows;
  }, { message: 'the first page draws the session at the size the 1024 page took' });
  assert.ok(await page.getByRole('button', { name: 'Fit to this window' }).isVisible(), 'the first page, now watching, is offered "Fit to this window"');
  await screenshot(page, 'view-size-desktop-watching');
  await screenshot(mid.page, 'view-size-1024-fitted');

  // Typing from the phone takes the size.
  await selectSession(phone.page, id);
  await typeCommand(phone.page, 'echo "PH:$(stty size)"');
  const line = await waitForLine(phone.page, id, /^PH:\d+ \d+$/, { message: 'stty size typed from the phone' });
  const [, rows, cols] = /^PH:(\d+) (\d+)$/.exec(line.trim());
  const phoneSize = await termSize(phone.page, id);
  assert.ok(phoneSize.cols < midSize.cols, `the phone's own size (${phoneSize.cols} cols) is narrower`);
  assert.deepEqual({ cols: Number(cols), rows: Number(rows) }, phoneSize, 'the PTY has the phone\'s size once it typed');
  assert.deepEqual(await apiSize(server, id), phoneSize, 'the session has the phone\'s size');
  await screenshot(phone.page, 'view-size-phone-typed');

  for (const w of watchers) await w.context.close();
});
