// Scrollback search (Ctrl+Shift+F) selects a match from far back in the
// buffer; the artifact pane refreshes by itself when its file is rewritten.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import {
  uiTest,
  sel,
  createSession,
  waitFor,
  waitForPrompt,
  waitForLine,
  typeCommand,
  terminalPane,
  terminalHasFocus,
} from './harness.mjs';

uiTest('Ctrl+Shift+F searches the scrollback and selects the match', { timeout: 30_000 }, async ({ page, screenshot }) => {
  const id = await createSession(page, 'searcher');
  await waitForPrompt(page, id);
  await typeCommand(page, "seq 1 300 | sed 's/^/row-/'; echo end-of-rows-$((3*7))");
  await waitForLine(page, id, 'end-of-rows-21', { timeout: 10_000 });
  await waitForLine(page, id, 'row-300', { timeout: 2000 });

  // row-123 is far above the visible rows: in the scrollback.
  const view = await page.evaluate((sid) => {
    const term = window.__agentmux.terminals.get(sid);
    return { rows: term.rows, viewportY: term.buffer.active.viewportY };
  }, id);
  assert.ok(view.viewportY > 0, `the buffer has scrolled (viewportY ${view.viewportY}, rows ${view.rows})`);

  const search = page.locator(sel('search'));
  assert.equal(await search.isVisible(), false, 'the search box is hidden before Ctrl+Shift+F');
  await terminalPane(page).click();
  assert.ok(await terminalHasFocus(page), 'the terminal has focus');
  await page.keyboard.press('Control+Shift+F');
  await search.waitFor({ state: 'visible', timeout: 3000 });
  const input = page.locator(sel('search-input'));
  await waitFor(() => input.evaluate((el) => el === document.activeElement), {
    timeout: 3000,
    message: 'focus in [data-testid=search-input] after Ctrl+Shift+F',
  });
  await input.pressSequentially('row-123');
  await input.press('Enter');

  const sel1 = await waitFor(
    async () => {
      const s = await page.evaluate((sid) => {
        const term = window.__agentmux.terminals.get(sid);
        const pos = term.getSelectionPosition();
        const line = pos ? term.buffer.active.getLine(pos.start.y) : undefined;
        return { text: term.getSelection(), line: line ? line.translateToString(true) : null, pos };
      }, id);
      return s.text.includes('row-123') ? s : null;
    },
    { timeout: 5000, message: 'a terminal selection containing "row-123"' },
  );
  assert.equal(sel1.text, 'row-123', 'the selection is the match');
  assert.equal(sel1.line, 'row-123', 'the selected match is on the row-123 line');
  // The match is scrolled into view.
  const y = await page.evaluate((sid) => window.__agentmux.terminals.get(sid).buffer.active.viewportY, id);
  assert.ok(sel1.pos.start.y >= y && sel1.pos.start.y < y + view.rows, `match row ${sel1.pos.start.y} in view [${y}, ${y + view.rows})`);
  await screenshot('search');
});

uiTest('the open document refreshes when its file is rewritten', { timeout: 30_000 }, async ({ t, page, server, screenshot }) => {
  const id = await createSession(page, 'live-doc');
  await waitForPrompt(page, id);
  const follow = page.locator(sel('follow-docs'));
  assert.equal(await follow.isChecked(), true, 'follow-docs checked by default');

  const content = page.locator(sel('artifact-content'));
  const pathEl = page.locator(sel('artifact-path'));
  await server.writeFile('docs/live.md', '# Live\n\nversion one\n');
  await waitFor(async () => (await pathEl.innerText()).trim() === 'docs/live.md', {
    timeout: 10_000,
    message: 'artifact-path docs/live.md (follow-docs)',
  });
  await waitFor(async () => (await content.innerText()).includes('version one'), {
    timeout: 5000,
    message: 'artifact-content showing "version one"',
  });
  assert.equal((await content.locator('h1').first().innerText()).trim(), 'Live');

  const mtime1 = (await fs.stat(path.join(server.workspace, 'docs/live.md'))).mtime;
  await server.writeFile('docs/live.md', '# Live\n\nversion two\n');
  const mtime2 = (await fs.stat(path.join(server.workspace, 'docs/live.md'))).mtime;
  // Last-Modified has a 1 s resolution: when both versions fall in the same
  // second, a reload that revalidates with If-Modified-Since gets a 304 and
  // the browser's cached "version one". The pane must fetch around that.
  t.diagnostic(`mtimes: version one ${mtime1.toISOString()}, version two ${mtime2.toISOString()}`);
  await waitFor(
    async () => {
      const s = await content.innerText();
      return s.includes('version two') && !s.includes('version one');
    },
    { timeout: 5000, message: 'artifact-content updated to "version two" with no click' },
  );
  assert.equal((await pathEl.innerText()).trim(), 'docs/live.md', 'still the same document');
  await screenshot('artifact-refresh');
});
