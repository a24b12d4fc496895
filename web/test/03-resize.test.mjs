// Issue 5, test 3: a smaller window resizes the terminal and the PTY
// (terminal.resize reaches the program: `stty size` reports the new size).
import assert from 'node:assert/strict';
import { uiTest, createSession, waitFor, waitForPrompt, waitForLine, typeCommand, termSize } from './harness.mjs';

let tagN = 0;
/** Runs `stty size` with a unique tag; returns {rows, cols} as the PTY reports them. */
async function sttySize(page, id) {
  const tag = `SZ${++tagN}x`;
  await typeCommand(page, `echo "${tag}:$(stty size)"`);
  const line = await waitForLine(page, id, new RegExp(`^${tag}:\\d+ \\d+$`), { message: `the output of stty size (${tag})` });
  const [, rows, cols] = /:(\d+) (\d+)$/.exec(line.trim());
  return { rows: Number(rows), cols: Number(cols) };
}

uiTest('resizing the window resizes the PTY', async ({ page }) => {
  const id = await createSession(page, 'resize');
  await waitForPrompt(page, id);

  const before = await sttySize(page, id);
  const termBefore = await termSize(page, id);
  assert.equal(before.cols, termBefore.cols, `PTY cols ${before.cols} equal xterm cols ${termBefore.cols} at 1280x800`);
  assert.equal(before.rows, termBefore.rows, `PTY rows ${before.rows} equal xterm rows ${termBefore.rows} at 1280x800`);

  await page.setViewportSize({ width: 900, height: 600 });
  const termAfter = await waitFor(
    async () => {
      const s = await termSize(page, id);
      return s && s.cols < termBefore.cols && s;
    },
    { message: `xterm cols below ${termBefore.cols} after the window shrank (fit)` },
  );
  // The UI may debounce its terminal.resize; ask the PTY until it agrees.
  let last;
  await waitFor(
    async () => {
      const t = await termSize(page, id);
      last = { pty: await sttySize(page, id), term: t };
      return last.pty.cols === t.cols && last.pty.rows === t.rows && last.pty.cols < before.cols;
    },
    { timeout: 10_000, interval: 300, message: 'stty size to report the terminal\'s new size' },
  );
  assert.ok(last.pty.cols < before.cols, `cols shrank: ${before.cols} -> ${last.pty.cols}`);
  assert.ok(last.pty.rows < before.rows, `rows shrank: ${before.rows} -> ${last.pty.rows}`);
  assert.ok(termAfter.cols < termBefore.cols);
});
