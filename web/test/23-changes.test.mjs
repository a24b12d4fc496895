// The Changes view (layout "changes", Alt+4): what a session changed in its
// working tree. Its tab shows "+N −M" from session.diff; the view lists the
// files with their counts and draws each diff (unified or side by side),
// refreshes by itself while shown, collapses a file, copies patches, and
// opens a file in the document pane. Untrusted names and contents render
// as text. A session outside git gets a clear NOT_A_REPOSITORY message.
import assert from 'node:assert/strict';
import path from 'node:path';
import {
  uiTest, sel, createSession, tabById, waitFor, waitForPrompt, typeCommand, initGitRepo,
} from './harness.mjs';

const layout = (page) => page.locator('#app').getAttribute('data-layout');
const text = async (loc) => ((await loc.textContent()) ?? '').replace(/\s+/g, ' ').trim();

async function waitLayout(page, want) {
  await waitFor(async () => (await layout(page)) === want, { message: `#app[data-layout=${want}]` });
}

async function waitState(page, want, timeout = 10_000) {
  const changes = page.locator(sel('changes'));
  await waitFor(async () => (await changes.getAttribute('data-state')) === want, {
    timeout,
    message: `[data-testid=changes][data-state=${want}] (now ${await changes.getAttribute('data-state')})`,
  });
}

/** The file list as [path, status, counts] rows. */
const fileRows = (page) =>
  page.locator(sel('changes-file')).evaluateAll((els) =>
    els.map((e) => [e.dataset.path, e.dataset.status, e.querySelector('[data-testid=changes-counts]')?.textContent.replace(/\s+/g, '')]));

/** A file's diff section, by path (paths may hold quotes and brackets: no CSS selector). */
function diffOf(page, p) {
  return page.locator(sel('changes-diff')).filter({ has: page.locator(`xpath=self::*[@data-path=${xpathString(p)}]`) });
}

function xpathString(s) {
  if (!s.includes("'")) return `'${s}'`;
  if (!s.includes('"')) return `"${s}"`;
  return `concat(${s.split("'").map((part) => `'${part}'`).join(`, "'", `)})`;
}

const clipboard = (page) => page.evaluate(() => navigator.clipboard.readText());

async function apiDiff(server, id) {
  const { status, body } = await server.api(`api/sessions/${id}/diff`);
  assert.equal(status, 200, `GET /api/sessions/${id}/diff: ${status} ${JSON.stringify(body)}`);
  return body;
}

uiTest('the Changes view: the workspace counts, the diff live in both views, collapse, copy, open', { setupWorkspace: initGitRepo, timeout: 90_000 }, async ({ page, server, context, screenshot }) => {
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(server.url).origin });
  const id = await createSession(page, 'agent');
  await waitForPrompt(page, id);
  const tab = tabById(page, id);
  // Issue 27: a session in the workspace shows the workspace's changes,
  // which are not its own, in the status bar rather than on its tab.
  const tabDiff = page.locator(sel('workspace-diff'));
  assert.equal(await tabDiff.isVisible(), false, 'no "+N −M" for a clean tree');

  // A clean tree: the view says so. Alt+4 shows it.
  await page.keyboard.press('Alt+4');
  await waitLayout(page, 'changes');
  assert.equal(await page.locator(sel('layout-changes')).getAttribute('aria-pressed'), 'true');
  await waitState(page, 'clean');
  const changes = page.locator(sel('changes'));
  assert.equal(await changes.getAttribute('data-session-id'), id, 'the view shows the active session');
  assert.match(await text(page.locator(sel('changes-message'))), /No changes/);
  assert.ok(await page.locator(sel('changes-message')).isVisible(), 'the clean-tree message is visible');
  await screenshot('changes-clean');

  // The agent writes a file, changes one, and adds a script.
  await page.keyboard.press('Alt+1');
  await waitLayout(page, 'terminal');
  await typeCommand(page, "printf 'alpha line\\nbeta line\\n' > notes.txt; printf 'more docs\\n' >> README.md; printf 'const answer = 42;\\n' > app.js");
  await waitFor(async () => (await tabDiff.isVisible()) && (await text(tabDiff)) === 'workspace +4 \u22120', {
    message: `the status bar's "workspace +4 \u22120" (now "${await tabDiff.textContent().catch(() => '')}")`,
  });
  assert.equal(await tabDiff.getAttribute('data-additions'), '4');
  assert.equal(await tabDiff.getAttribute('data-deletions'), '0');
  assert.equal(await tab.locator(sel('tab-diff')).isVisible(), false, 'the workspace\'s counts are not on the tab');

  // A click on the counts shows the Changes view.
  await tabDiff.click();
  await waitLayout(page, 'changes');
  await waitState(page, 'ready');
  const api = await apiDiff(server, id);
  await waitFor(async () => (await fileRows(page)).length === 3, { message: 'three files listed' });
  assert.deepEqual(await fileRows(page), api.files.map((f) => [f.path, f.status, `+${f.additions}\u2212${f.deletions}`]), 'the file list is the API\'s, with counts');
  assert.deepEqual(
    Object.fromEntries((await fileRows(page)).map(([p, s, c]) => [p, `${s} ${c}`])),
    { 'README.md': 'modified +1\u22120', 'notes.txt': 'added +2\u22120', 'app.js': 'added +1\u22120' },
  );
  assert.equal(await text(page.locator(sel('changes-summary'))), '3 files +4 \u22120');

  // The hunks: the lines themselves, the context too.
  const notes = diffOf(page, 'notes.txt');
  const readme = diffOf(page, 'README.md');
  const appJs = diffOf(page, 'app.js');
  await waitFor(async () => /alpha line[\s\S]*beta line/.test(await notes.locator(sel('changes-diff-body')).innerText()), { message: 'notes.txt\'s lines drawn' });
  await waitFor(async () => /# test workspace[\s\S]*more docs/.test(await readme.locator(sel('changes-diff-body')).innerText()), { message: 'README.md\'s hunk with its context' });
  await waitFor(async () => (await appJs.locator(sel('changes-diff-body')).getAttribute('data-language')) === 'javascript', {
    message: 'app.js syntax-highlighted as javascript',
  });
  assert.equal(await notes.locator(sel('changes-diff-body')).getAttribute('data-view'), 'unified');
  assert.equal(await text(notes.locator(sel('changes-diff-name'))), 'notes.txt');
  await screenshot('changes-unified');

  // Side by side, and back.
  await page.locator(sel('changes-view-split')).click();
  await waitFor(async () => (await changes.getAttribute('data-view')) === 'split', { message: 'data-view split' });
  for (const d of [notes, readme, appJs]) {
    await waitFor(async () => (await d.locator(sel('changes-diff-body')).getAttribute('data-view')) === 'split', { message: 'each diff drawn side by side' });
  }
  assert.match(await readme.locator(sel('changes-diff-body')).innerText(), /more docs/);
  assert.equal(await page.locator(sel('changes-view-split')).getAttribute('aria-pressed'), 'true');
  await screenshot('changes-split');
  await page.locator(sel('changes-view-unified')).click();
  await waitFor(async () => (await notes.locator(sel('changes-diff-body')).getAttribute('data-view')) === 'unified', { message: 'unified again' });

  // Collapse a file, and expand it.
  const toggle = notes.locator(sel('changes-diff-toggle'));
  await toggle.click();
  assert.equal(await notes.getAttribute('data-collapsed'), 'true');
  assert.equal(await toggle.getAttribute('aria-expanded'), 'false');
  await notes.locator(sel('changes-diff-body')).waitFor({ state: 'hidden' });
  assert.ok(await readme.locator(sel('changes-diff-body')).isVisible(), 'the other files stay expanded');
  await screenshot('changes-collapsed');
  await toggle.click();
  assert.equal(await notes.getAttribute('data-collapsed'), 'false');
  await notes.locator(sel('changes-diff-body')).waitFor({ state: 'visible' });

  // Copy as patch: one file's, then all.
  const readmePatch = api.files.find((f) => f.path === 'README.md').patch;
  assert.match(readmePatch, /^diff --git a\/README\.md b\/README\.md\n/);
  await readme.locator(sel('changes-diff-copy')).click();
  await waitFor(async () => (await clipboard(page)) === readmePatch, { message: 'README.md\'s patch on the clipboard' });
  assert.equal(await readme.locator(sel('changes-diff-copy')).getAttribute('data-copied'), 'true', 'the button says it copied');
  await page.locator(sel('changes-copy-all')).click();
  const all = api.files.map((f) => (f.patch.endsWith('\n') ? f.patch : `${f.patch}\n`)).join('');
  await waitFor(async () => (await clipboard(page)) === all, { message: 'every patch on the clipboard' });

  // The view refreshes by itself when the session's changes change; a file
  // that did not change keeps its drawing.
  await readme.locator(sel('changes-diff-body')).evaluate((el) => { el.__kept = true; });
  await server.writeFile('notes.txt', 'alpha line\nbeta line\ngamma line\n');
  await waitFor(async () => (await fileRows(page)).find((r) => r[0] === 'notes.txt')?.[2] === '+3\u22120', { message: 'notes.txt +3 after the write' });
  await waitFor(async () => /gamma line/.test(await notes.locator(sel('changes-diff-body')).innerText()), { message: 'the new line drawn' });
  await waitFor(async () => (await text(tabDiff)) === 'workspace +5 \u22120', { message: 'the status bar\'s "workspace +5 \u22120"' });
  assert.equal(await readme.locator(sel('changes-diff-body')).evaluate((el) => el.__kept === true), true, 'README.md\'s diff was not redrawn');

  // A click on a file's name opens it in the document pane.
  await notes.locator(sel('changes-diff-name')).click();
  await waitLayout(page, 'artifact');
  await waitFor(async () => (await text(page.locator(sel('artifact-path')))) === 'notes.txt', { message: 'artifact-path notes.txt' });
  await waitFor(async () => /gamma line/.test(await page.locator(sel('artifact-content')).innerText()), { message: 'notes.txt in the document pane' });

  // Alt+4 comes back to the view, as it was.
  await page.keyboard.press('Alt+4');
  await waitLayout(page, 'changes');
  await waitState(page, 'ready');
  assert.equal((await fileRows(page)).length, 3);
  const help = await page.locator(sel('help')).textContent();
  assert.match(help, /Alt\s*\+\s*4\s*Changes/, 'the help lists Alt+4');
});

// Names and contents an agent controls; any of them run would set __pwned.
const HOSTILE_NAME = '<img src=x onerror=window.__pwned=1>.txt';
const HOSTILE_JS_NAME = '<svg onload=window.__pwned=2>.js';
const HOSTILE_BODY = '<script>window.__pwned=3</script>\n<img src=x onerror="window.__pwned=4">\n';

uiTest('hostile file names and contents render as text', { setupWorkspace: initGitRepo, timeout: 60_000 }, async ({ page, server, screenshot }) => {
  const id = await createSession(page, 'hostile');
  await waitForPrompt(page, id);
  await server.writeFile(HOSTILE_NAME, HOSTILE_BODY);
  await server.writeFile('evil.html', `<p>hi</p>\n${HOSTILE_BODY}`);
  await server.writeFile(HOSTILE_JS_NAME, 'const s = "</script><script>window.__pwned=5</script>";\n');
  await server.writeFile('README.md', `# test workspace\n${HOSTILE_BODY}`);
  const tabDiff = page.locator(sel('workspace-diff'));
  await waitFor(async () => (await text(tabDiff)) === 'workspace +8 \u22120', { message: `the status bar's "workspace +8 \u22120" (now "${await tabDiff.textContent().catch(() => '')}")` });

  // Anything the page adds from here on that could run or load.
  await page.evaluate(() => {
    window.__added = [];
    new MutationObserver((records) => {
      for (const r of records) {
        for (const n of r.addedNodes) {
          if (n.nodeType !== 1) continue;
          for (const el of [n, ...n.querySelectorAll('*')]) {
            const tag = el.tagName.toLowerCase();
            const on = [...el.attributes].filter((a) => a.name.toLowerCase().startsWith('on')).map((a) => a.name);
            if (['script', 'img', 'iframe', 'object', 'embed', 'image'].includes(tag) || on.length) window.__added.push(`${tag} ${on.join(' ')}`);
          }
        }
      }
    }).observe(document, { subtree: true, childList: true });
  });

  for (const view of ['unified', 'split']) {
    await page.locator(sel('layout-changes')).click();
    await waitState(page, 'ready');
    await page.locator(sel(`changes-view-${view}`)).click();
    const files = await fileRows(page);
    assert.deepEqual(files.map((r) => r[0]).sort(), [HOSTILE_JS_NAME, HOSTILE_NAME, 'README.md', 'evil.html'].sort(), 'every file listed, names as they are');

    // The names, as text, in the list and on each diff.
    const item = page.locator(sel('changes-file')).filter({ has: page.locator(`xpath=self::*[@data-path=${xpathString(HOSTILE_NAME)}]`) });
    assert.ok((await item.textContent()).includes(HOSTILE_NAME), 'the hostile name shows in the list as text');
    assert.ok(await item.isVisible());
    for (const name of [HOSTILE_NAME, HOSTILE_JS_NAME]) {
      const d = diffOf(page, name);
      assert.equal(await text(d.locator(sel('changes-diff-name'))), name, `${name} shows on its diff as text`);
    }
    // The contents, as text, wherever they are drawn (highlighted or not).
    for (const name of [HOSTILE_NAME, 'evil.html', 'README.md']) {
      const body = diffOf(page, name).locator(sel('changes-diff-body'));
      await waitFor(async () => (await body.getAttribute('data-view')) === view, { message: `${name} drawn ${view}` });
      const shown = await body.innerText();
      assert.ok(shown.includes('<script>window.__pwned=3</script>'), `${name}: the script tag shows as text (${view})`);
      assert.ok(shown.includes('<img src=x onerror="window.__pwned=4">'), `${name}: the img tag shows as text (${view})`);
    }
    assert.equal(await diffOf(page, 'evil.html').locator(sel('changes-diff-body')).getAttribute('data-language'), 'xml', 'evil.html highlighted as HTML');
    const js = diffOf(page, HOSTILE_JS_NAME).locator(sel('changes-diff-body'));
    assert.ok((await js.innerText()).includes('"</script><script>window.__pwned=5</script>"'), 'the script\'s string shows as text');
    assert.equal(await js.getAttribute('data-language'), 'javascript');
    await screenshot(`changes-hostile-${view}`);

    const found = await page.evaluate(() => ({
      pwned: window.__pwned,
      added: window.__added,
      inChanges: [...document.querySelectorAll('[data-testid=changes] script, [data-testid=changes] img, [data-testid=changes] iframe')].length,
      handlers: [...document.querySelectorAll('[data-testid=changes] *')].filter((el) => [...el.attributes].some((a) => a.name.startsWith('on'))).length,
    }));
    assert.deepEqual(found, { pwned: undefined, added: [], inChanges: 0, handlers: 0 }, `nothing from the patches ran or was added (${view})`);
  }

  // The hostile name opens in the document pane as well, as text.
  await diffOf(page, HOSTILE_NAME).locator(sel('changes-diff-name')).click();
  await waitLayout(page, 'artifact');
  await waitFor(async () => (await text(page.locator(sel('artifact-path')))) === HOSTILE_NAME, { message: 'the hostile name in artifact-path' });
  await waitFor(async () => (await page.locator(sel('artifact-content')).innerText()).includes('<script>window.__pwned=3</script>'), { message: 'its contents as text' });
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(await page.evaluate(() => window.__added), []);
});

uiTest('the Changes view follows the active session; a worktree\'s file opens from its worktree', { setupWorkspace: initGitRepo, timeout: 60_000 }, async ({ page, server }) => {
  const main = await createSession(page, 'main');
  await waitForPrompt(page, main);
  const wt = await server.createSession({ name: 'wt', worktree: { branch: 'feat-changes' } });
  const wtTab = tabById(page, wt.id);
  await wtTab.waitFor({ state: 'visible' });
  const wtRel = path.relative(server.workspace, wt.worktree.path);

  await server.writeFile('main-only.txt', 'from the workspace\n');
  await server.writeFile(path.join(wtRel, 'wt-only.txt'), 'from the worktree\none more\n');
  await waitFor(async () => (await text(wtTab.locator(sel('tab-diff')))) === '+2 \u22120', { message: 'the worktree tab\'s "+2 \u22120"' });
  await waitFor(async () => (await text(page.locator(sel('workspace-diff')))) === 'workspace +1 \u22120', { message: 'the workspace\'s "+1 \u22120" in the status bar' });
  assert.equal(await tabById(page, main).locator(sel('tab-diff')).isVisible(), false, 'the workspace session\'s tab shows no counts');

  await page.keyboard.press('Alt+4');
  await waitState(page, 'ready');
  const changes = page.locator(sel('changes'));
  assert.equal(await changes.getAttribute('data-session-id'), main);
  assert.deepEqual((await fileRows(page)).map((r) => r[0]), ['main-only.txt']);

  // Another tab: the view follows it.
  await wtTab.click();
  await waitFor(async () => (await changes.getAttribute('data-session-id')) === wt.id, { message: 'the view on the worktree session' });
  await waitState(page, 'ready');
  await waitFor(async () => (await fileRows(page)).map((r) => r[0]).join() === 'wt-only.txt', { message: 'the worktree\'s file listed' });
  assert.match(await text(page.locator(sel('changes-session'))), /feat-changes/);

  // Its file opens from the worktree, by its workspace-relative path.
  await diffOf(page, 'wt-only.txt').locator(sel('changes-diff-name')).click();
  await waitLayout(page, 'artifact');
  const want = `${wtRel}/wt-only.txt`;
  await waitFor(async () => (await text(page.locator(sel('artifact-path')))) === want, { message: `artifact-path ${want}` });
  await waitFor(async () => /from the worktree/.test(await page.locator(sel('artifact-content')).innerText()), { message: 'the worktree file\'s content' });
});

uiTest('outside a git repository the Changes view says so', { allowConsole: [/status of 409 \(Conflict\)/] }, async ({ page, server, screenshot }) => {
  const id = await createSession(page, 'plain');
  await waitForPrompt(page, id);
  await server.writeFile('notes.txt', 'not tracked by anything\n');
  await page.keyboard.press('Alt+4');
  await waitLayout(page, 'changes');
  await waitState(page, 'not-a-repository');
  const message = page.locator(sel('changes-message'));
  assert.ok(await message.isVisible());
  assert.equal(await message.getAttribute('data-kind'), 'not-a-repository');
  assert.match(await text(message), /Not a git repository/);
  assert.match(await text(message), /not inside a git repository/, 'the server\'s explanation');
  assert.equal(await page.locator(sel('changes-file')).count(), 0);
  assert.equal(await tabById(page, id).locator(sel('tab-diff')).isVisible(), false, 'no counts on the tab');
  await screenshot('changes-not-a-repository');
});

uiTest('the Changes view fits a narrow window', { setupWorkspace: initGitRepo, viewport: { width: 500, height: 800 } }, async ({ page, server, screenshot }) => {
  const id = await createSession(page, 'narrow');
  await waitForPrompt(page, id);
  await server.writeFile('notes.txt', 'a line long enough to need scrolling sideways in a window this narrow, which it does\n');
  await server.writeFile('README.md', '# test workspace\nmore\n');
  await waitFor(async () => (await text(page.locator(sel('workspace-diff')))) === 'workspace +2 \u22120', { message: 'the status bar\'s "workspace +2 \u22120"' });
  await page.keyboard.press('Alt+4');
  await waitState(page, 'ready');
  for (const view of ['unified', 'split']) {
    await page.locator(sel(`changes-view-${view}`)).click();
    await waitFor(async () => (await diffOf(page, 'notes.txt').locator(sel('changes-diff-body')).getAttribute('data-view')) === view, { message: `drawn ${view}` });
    await screenshot(`changes-narrow-${view}`);
    const m = await page.evaluate(() => ({ doc: document.documentElement.scrollWidth, body: document.body.scrollWidth }));
    assert.ok(m.doc <= 500 && m.body <= 500, `no sideways scroll of the page (${view}): ${JSON.stringify(m)}`);
    for (const testid of ['changes-view-unified', 'changes-view-split', 'changes-copy-all', 'changes-reload']) {
      const box = await page.locator(sel(testid)).boundingBox();
      assert.ok(box && box.x >= 0 && box.x + box.width <= 500.5, `${testid} within the window: ${JSON.stringify(box)}`);
    }
  }
});
