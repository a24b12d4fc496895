// Flow control in the browser: a 64 MiB cat through bash reaches xterm.js
// whole. The terminal on screen acknowledges what it parsed, so the server
// holds cat to the browser's pace instead of skipping ahead when it falls a
// ring (1 MiB) behind. The last 10,000 lines (1.25 MB, more than the ring)
// must all be in the buffer, in order.
import assert from 'node:assert/strict';
import { uiTest, createSession, waitFor, waitForPrompt, typeCommand } from './harness.mjs';

const LINE_CHARS = 125; // one row at 1600 px; 10,000 lines are 1.25 MB, more than the ring
const FILE_BYTES = 64 << 20;

/** Numbered lines of LINE_CHARS characters (newline included), FILE_BYTES in all. */
function floodFile() {
  const lines = Math.floor(FILE_BYTES / LINE_CHARS);
  const filler = '.'.repeat(LINE_CHARS - 10);
  const parts = new Array(lines);
  for (let i = 0; i < lines; i++) parts[i] = `${String(i).padStart(8, '0')} ${filler}\n`;
  return { text: parts.join(''), lines };
}

uiTest(
  'a 64 MiB cat arrives whole: the last 10,000 lines are in the buffer, in order',
  { timeout: 300_000, viewport: { width: 1600, height: 800 } },
  async ({ page, server }) => {
    const { text, lines } = floodFile();
    await server.writeFile('flood.txt', text);
    const id = await createSession(page, 'flood');
    await waitForPrompt(page, id);
    const cols = await page.evaluate((sid) => window.__agentmux.terminals.get(sid).cols, id);
    assert.ok(cols > LINE_CHARS, `the terminal has ${cols} columns; each line must fit in one row`);

    const started = Date.now();
    await typeCommand(page, 'cat flood.txt; echo FLOOD-DONE');
    await waitFor(
      () =>
        page.evaluate((sid) => {
          const b = window.__agentmux.terminals.get(sid).buffer.active;
          for (let y = b.length - 1; y >= Math.max(0, b.length - 5); y--) {
            if (b.getLine(y)?.translateToString(true).trim() === 'FLOOD-DONE') return true;
          }
          return false;
        }, id),
      { timeout: 240_000, interval: 250, message: 'the end of the flood in the terminal' },
    );
    const seconds = (Date.now() - started) / 1000;

    const numbers = await page.evaluate((sid) => {
      const b = window.__agentmux.terminals.get(sid).buffer.active;
      const out = [];
      for (let y = 0; y < b.length; y++) {
        const m = /^(\d{8}) \.+$/.exec(b.getLine(y)?.translateToString(true) ?? '');
        if (m) out.push(Number(m[1]));
      }
      return out;
    }, id);
    const last = numbers.slice(-10_000);
    assert.equal(last.length, 10_000, `${numbers.length} numbered lines in the buffer, want at least 10,000`);
    for (let i = 0; i < last.length; i++) {
      if (last[i] !== lines - 10_000 + i) {
        assert.fail(`line ${i} of the last 10,000 is ${last[i]}, want ${lines - 10_000 + i}: output was lost or reordered`);
      }
    }
    console.log(`# 64 MiB cat into xterm.js: ${seconds.toFixed(1)} s (${(FILE_BYTES / 1e6 / seconds).toFixed(1)} MB/s), last 10,000 lines whole`);
  },
);
