// Images and files into the prompt (issue 45, part 2): an image pasted
// onto a shell session's terminal is stored in the session's tree, byte
// for byte, and its absolute path, quoted, arrives at the prompt as a
// paste (so nothing runs); the shell then opens it by that path. A file
// dropped does the same; a program named like an image is refused with a
// toast that says why, and types nothing. On a phone, the key bar's
// Attach button picks a file the same way.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  uiTest, sel, createSession, drawPNG, waitFor, waitForPrompt, terminalPane,
} from './harness.mjs';

/** A phone, as Chromium emulates one. */
const PHONE = { viewport: { width: 390, height: 844 }, contextOptions: { deviceScaleFactor: 3, isMobile: true, hasTouch: true } };

/**
 * Dispatches on the session's terminal what a browser fires for a paste
 * (or a drop) of files alone: a ClipboardEvent (DragEvent) whose
 * DataTransfer holds them.
 */
async function pasteFiles(page, id, files, kind = 'paste') {
  await page.evaluate(([sid, files, kind]) => {
    const dt = new DataTransfer();
    for (const f of files) dt.items.add(new File([new Uint8Array(f.bytes)], f.name, { type: f.type }));
    const host = document.querySelector(`.term-host[data-session-id="${sid}"]`);
    if (kind === 'paste') {
      const target = host.querySelector('.xterm-helper-textarea');
      target.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    } else {
      host.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
      host.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
    }
  }, [id, files.map((f) => ({ ...f, bytes: Array.from(f.bytes) })), kind]);
}

/** The session's terminal lines, a line wrapped at the edge joined with the rest of it. */
async function logicalLines(page, id) {
  return page.evaluate((sid) => {
    const buf = window.__agentmux.terminals.get(sid).buffer.active;
    const lines = [];
    for (let i = 0; i < buf.length; i++) {
      const l = buf.getLine(i);
      const text = l.translateToString(true);
      if (l.isWrapped && lines.length) lines[lines.length - 1] += text;
      else lines.push(text);
    }
    return lines;
  }, id);
}

/** The last line of the session's terminal that starts with the prompt. */
async function promptLine(page, id) {
  const lines = await logicalLines(page, id);
  return lines.findLast((l) => l.startsWith('$ ')) ?? '';
}

/** The attachments stored for session id in the workspace (a shell session's tree). */
async function stored(server, id) {
  const dir = path.join(server.workspace, '.agentmux', 'attachments', id);
  return (await fs.readdir(dir).catch(() => [])).sort();
}

uiTest('an image pasted into a shell session is stored byte for byte and its path arrives at the prompt', {
  timeout: 60_000,
  // The refused upload, as the browser logs any answer that is an error.
  allowConsole: [/status of 415 \(Unsupported Media Type\)/],
}, async ({ page, server, screenshot }) => {
  const id = await createSession(page, 'paste-image');
  await waitForPrompt(page, id);
  await terminalPane(page).click();
  await page.keyboard.type('cksum ');
  const png = await drawPNG(page);
  await pasteFiles(page, id, [{ name: 'Screen shot.png', type: 'image/png', bytes: png }]);

  const abs = path.join(server.workspace, '.agentmux', 'attachments', id, 'Screen shot.png');
  await waitFor(async () => (await promptLine(page, id)).includes(`'${abs}'`), { message: `the quoted path ${abs} at the prompt` });
  // A paste, not a command: it waits for Enter.
  assert.equal((await promptLine(page, id)).trimEnd(), `$ cksum '${abs}'`);
  assert.deepEqual(await fs.readFile(abs), png, 'the stored file is the pasted image, byte for byte');
  await screenshot('65-attach-pasted');

  await page.keyboard.press('Enter');
  const size = png.length;
  await waitFor(async () => (await logicalLines(page, id)).some((l) => /^\d+ (\d+) (.*)$/.exec(l)?.slice(1).join(' ') === `${size} ${abs}`),
    { message: `cksum of the stored file (${size} bytes) by its typed path` });

  // A program named as an image: refused, said, nothing typed or stored.
  const elf = Buffer.concat([Buffer.from('\x7fELF\x02\x01\x01\x00', 'latin1'), Buffer.alloc(64)]);
  await waitForPrompt(page, id);
  const before = await promptLine(page, id);
  await pasteFiles(page, id, [{ name: 'cat.png', type: 'image/png', bytes: elf }]);
  const toastEl = page.locator(`${sel('toast')}[data-kind="error"]`, { hasText: 'cat.png was not attached' });
  await toastEl.waitFor({ state: 'visible' });
  assert.match(await toastEl.textContent(), /name does not count/);
  await screenshot('65-attach-refused');
  assert.equal(await promptLine(page, id), before, 'a refused file types nothing');
  assert.deepEqual(await stored(server, id), ['Screen shot.png']);

  // A PDF dropped: stored as one, its path typed.
  const pdf = Buffer.from('%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n');
  await pasteFiles(page, id, [{ name: 'spec.pdf', type: 'application/pdf', bytes: pdf }], 'drop');
  const pdfPath = path.join(server.workspace, '.agentmux', 'attachments', id, 'spec.pdf');
  await waitFor(async () => (await promptLine(page, id)).includes(pdfPath), { message: 'the dropped PDF path at the prompt' });
  assert.deepEqual(await fs.readFile(pdfPath), pdf);

  // The files go with the session.
  const res = await server.api(`api/sessions/${id}`, { method: 'DELETE' });
  assert.equal(res.status, 204);
  assert.deepEqual(await stored(server, id), []);
});

uiTest('on a phone, Attach on the key bar picks a file whose path arrives at the prompt', { timeout: 60_000, ...PHONE }, async ({ page, server, screenshot }) => {
  const id = await createSession(page, 'phone-attach');
  await waitForPrompt(page, id);
  const attachBtn = page.locator(`${sel('keybar')} [data-key="attach"]`);
  await attachBtn.waitFor({ state: 'visible' });
  assert.equal(await attachBtn.getAttribute('aria-label'), 'Attach a photo or a file');
  const input = page.locator(sel('attach-input'));
  assert.equal(await input.getAttribute('accept'), 'image/*,application/pdf,text/*');
  // The picker a tap opens is the phone's; Playwright answers it.
  const [chooser] = await Promise.all([page.waitForEvent('filechooser'), attachBtn.tap()]);
  const png = await drawPNG(page);
  await chooser.setFiles({ name: 'photo.png', mimeType: 'image/png', buffer: png });
  const abs = path.join(server.workspace, '.agentmux', 'attachments', id, 'photo.png');
  await waitFor(async () => (await promptLine(page, id)).includes(abs), { message: `the path ${abs} at the prompt` });
  assert.deepEqual(await fs.readFile(abs), png);
  await screenshot('65-attach-phone');
});
