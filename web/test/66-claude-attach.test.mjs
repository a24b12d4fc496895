// An image pasted onto a session of the real Claude Code CLI (2.1.197),
// against the stand-in API (fake-anthropic.mjs, which records the image
// blocks of each request): agentmux stores it and pastes its absolute
// path, which Claude takes as an image ("[Image #1]") and sends to the
// model as an image block with the file's bytes. (Claude reads a pasted
// path as an image only when it is absolute and ends in .png, .jpg,
// .jpeg, .gif or .webp; a relative one stays text.)
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { drawPNG, tabById, terminalPane, waitFor, waitForLine } from './harness.mjs';
import { claudeUiTest } from './claude-cli.mjs';

const PROMPT = 'What is in this picture?';
const ANSWER = 'A red square on blue.';

await claudeUiTest(
  'the real Claude Code CLI receives an image pasted onto its terminal as an image',
  { reply: ANSWER, timeout: 180_000 },
  async ({ page, server, api, screenshot }) => {
    const s = await server.createSession({ name: 'looker', agent: 'claude' });
    const id = s.id;
    await tabById(page, id).click();
    await waitForLine(page, id, (l) => /^\s*❯/.test(l), { timeout: 60_000, message: "Claude's input box" });
    await terminalPane(page).click();

    const png = await drawPNG(page);
    // What the browser fires for a screenshot pasted from the clipboard.
    await page.evaluate(([sid, bytes]) => {
      const dt = new DataTransfer();
      dt.items.add(new File([new Uint8Array(bytes)], 'image.png', { type: 'image/png' }));
      const target = document.querySelector(`.term-host[data-session-id="${sid}"] .xterm-helper-textarea`);
      target.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    }, [id, Array.from(png)]);

    const stored = path.join(s.cwd, '.agentmux', 'attachments', id, 'image.png');
    await waitFor(async () => (await fs.readFile(stored).catch(() => null))?.equals(Buffer.from(png)), { timeout: 10_000, message: `${stored} stored byte for byte` });
    await waitForLine(page, id, /\[Image #1\]/, { timeout: 30_000, message: 'Claude taking the pasted path as [Image #1]' });
    await page.keyboard.type(PROMPT);
    await waitForLine(page, id, (l) => l.includes(PROMPT), { timeout: 10_000 });
    await screenshot('66-claude-attach-prompt');
    await page.keyboard.press('Enter');

    const req = await waitFor(() => api.requests.find((r) => r.path === '/v1/messages' && r.images?.length && r.userText.includes(PROMPT)),
      { timeout: 60_000, message: 'a request to the model with the image and the prompt' });
    assert.equal(req.images.length, 1, 'one image');
    assert.equal(req.images[0].mediaType, 'image/png');
    assert.deepEqual(Buffer.from(req.images[0].data, 'base64'), Buffer.from(png), 'the model got the pasted image, byte for byte');
    await waitForLine(page, id, (l) => l.includes(ANSWER), { timeout: 30_000, message: "the stand-in's answer" });
    await screenshot('66-claude-attach-answered');
  },
);
