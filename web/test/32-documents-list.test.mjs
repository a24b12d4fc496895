// Issue 27, part 7: the Documents list comes from the server (GET
// /api/documents), not only from the events this page saw, so it survives
// a reload, a restart of the server, and a page that opens late.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { uiTest, sel, waitFor, openApp, SERVER_DOWN_CONSOLE } from './harness.mjs';

const listed = (page) => page.locator(sel('recent-doc')).evaluateAll((els) => els.map((e) => e.getAttribute('data-path')));

async function waitForList(page, want, message) {
  let got;
  await waitFor(async () => {
    got = await listed(page);
    return got.join() === want.join();
  }, { message: `${message}: want ${want.join(', ')}` });
  return got;
}

/** Two documents written before the server starts, an hour and two ago. */
async function oldDocuments(dir) {
  const now = Date.now() / 1000;
  for (const [rel, age] of [['docs/older.md', 7200], ['docs/plans/old.md', 3600]]) {
    const p = path.join(dir, rel);
    await fs.mkdir(path.dirname(p), { recursive: true });
    await fs.writeFile(p, `# ${rel}\n`);
    await fs.utimes(p, now - age, now - age);
  }
  await fs.writeFile(path.join(dir, 'README.md'), '# not under docs/\n');
}

uiTest(
  'the Documents list survives a reload, a late joiner and a restart',
  { setupWorkspace: oldDocuments, allowConsole: SERVER_DOWN_CONSOLE },
  async ({ page, context, server }) => {
    // Written before this page opened: listed at once, newest first.
    await waitForList(page, ['docs/plans/old.md', 'docs/older.md'], 'the documents on disk at start');

    await server.writeFile('docs/new.md', '# new\n');
    await waitForList(page, ['docs/new.md', 'docs/plans/old.md', 'docs/older.md'], 'a document written now, first');

    await page.reload();
    await waitForList(page, ['docs/new.md', 'docs/plans/old.md', 'docs/older.md'], 'the list after a reload');

    const late = await context.newPage();
    await openApp(late, server.url);
    await waitForList(late, ['docs/new.md', 'docs/plans/old.md', 'docs/older.md'], 'the list on a page that opened late');
    await late.close();

    // Written while the server was down: the reconnection brings it.
    assert.equal(await server.stop(), 0, 'the server exits 0 on SIGTERM');
    await server.writeFile('docs/while-down.md', '# written while the server was down\n');
    await server.restart();
    await waitForList(page, ['docs/while-down.md', 'docs/new.md', 'docs/plans/old.md', 'docs/older.md'], 'the list after a restart');
  },
);
