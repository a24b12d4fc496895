// Issue 41, point 2: trust before anything runs. A repository's
// agentmux.json asks for a check script: the page shows its text the
// first time, and "Not now" leaves a banner saying the turns go
// unchecked; the turns are indeed not checked. Approved from the banner's
// dialog, the next turn is checked. An edit of the script (as an agent
// might make) asks again, with the new text, and the new text does not
// run until approved.
import assert from 'node:assert/strict';
import { uiTest, sel, tabById, waitFor, waitForLine, initGitRepo, git, reloadApp } from './harness.mjs';

const AGENT = ['sh', '-c', `printf 'ready\\a'; while IFS= read -r l; do printf '%s\\n' "$l" > turn.txt; echo "got:$l"; printf '\\a'; done`];

async function setupWorkspace(dir) {
  await initGitRepo(dir);
  await git(dir, 'config', 'user.name', 'Trust Tester');
  await git(dir, 'config', 'user.email', 'trust@example.test');
  const fs = await import('node:fs/promises');
  await fs.writeFile(`${dir}/agentmux.json`, JSON.stringify({ scripts: { check: 'echo "checked $(cat turn.txt 2>/dev/null)"' } }, null, 2));
}

async function say(server, id, line) {
  const { status } = await server.api(`api/sessions/${id}/input`, { method: 'POST', body: JSON.stringify({ data: `${line}\r` }) });
  assert.equal(status, 204);
}

/** The checkpoints' ids and their checks' statuses, from the API. */
async function checkpoints(server, id) {
  const { body } = await server.api(`api/sessions/${id}/checkpoints`);
  return body.checkpoints.map((cp) => `#${cp.id}:${cp.check?.status ?? 'none'}`);
}

uiTest('a repository\'s check script runs only once approved, and asks again when it changes', {
  setupWorkspace, viewport: { width: 1280, height: 800 }, timeout: 90_000,
}, async ({ page, server, screenshot }) => {
  const dialog = page.locator(sel('scripts-dialog'));
  await dialog.waitFor({ state: 'visible' });
  assert.match(await page.locator('#scripts-intro').textContent(), /^agentmux\.json asks agentmux to run this script/);
  const scripts = await dialog.locator(sel('script')).evaluateAll((els) => els.map((e) => [e.dataset.name, e.querySelector('pre').textContent]));
  assert.deepEqual(scripts, [['check', 'echo "checked $(cat turn.txt 2>/dev/null)"']]);
  await screenshot('51-scripts-dialog');

  // Not now: the banner says so, and a reload does not ask again.
  await page.locator(sel('scripts-later')).click();
  await dialog.waitFor({ state: 'hidden' });
  const banner = page.locator(sel('banner-scripts'));
  await banner.waitFor({ state: 'visible' });
  assert.match(await banner.textContent(), /check script waits for your approval: until then sessions start without it, and no turn is checked/);
  await reloadApp(page);
  await banner.waitFor({ state: 'visible' });
  assert.equal(await dialog.isVisible(), false, 'put off: not asked again on a reload');

  // Unapproved, the turns are not checked. (A turn's check starts, or
  // not, before the next turn's checkpoint is taken: the one before the
  // last listed is decided.)
  const s = await server.createSession({ name: 'trusted', command: AGENT });
  await tabById(page, s.id).click();
  await waitForLine(page, s.id, 'ready');
  await say(server, s.id, 'one');
  await waitForLine(page, s.id, 'got:one');
  await say(server, s.id, 'two');
  await waitFor(async () => (await checkpoints(server, s.id)).length >= 3, { message: 'three checkpoints' });
  assert.deepEqual((await checkpoints(server, s.id)).slice(0, 2), ['#1:none', '#2:none']);
  assert.equal(await tabById(page, s.id).locator(sel('tab-check')).isVisible(), false);
  await screenshot('51-scripts-banner');

  // Approved from the banner: the next turn is checked.
  await page.locator(sel('banner-scripts-review')).click();
  await dialog.waitFor({ state: 'visible' });
  await page.locator(sel('scripts-approve')).click();
  await dialog.waitFor({ state: 'hidden' });
  await banner.waitFor({ state: 'hidden' });
  await say(server, s.id, 'three');
  await waitFor(async () => (await tabById(page, s.id).locator(sel('tab-check')).getAttribute('data-status')) === 'passed', { message: 'the approved check on the tab' });
  const { body } = await server.api(`api/sessions/${s.id}`);
  assert.match(body.session.check.output, /^checked (two|three)\n$/);

  // The script changes: asked again, with the new text, which does not run.
  await server.writeFile('agentmux.json', JSON.stringify({ scripts: { check: 'echo changed; exit 1' } }));
  await dialog.waitFor({ state: 'visible' });
  assert.deepEqual(await dialog.locator(`${sel('script')} pre`).allTextContents(), ['echo changed; exit 1']);
  await screenshot('51-scripts-changed');
  await page.locator(sel('scripts-later')).click();
  await banner.waitFor({ state: 'visible' });
  const before = (await checkpoints(server, s.id)).length;
  await say(server, s.id, 'four');
  await waitForLine(page, s.id, 'got:four');
  // Turn four's checkpoint first: a turn that ends before the one before
  // it is snapshot shares its checkpoint (checkpoint.Auto takes a session
  // once however often it was asked), and this wants two.
  await waitFor(async () => (await checkpoints(server, s.id)).length >= before + 1, { message: "turn four's checkpoint" });
  await say(server, s.id, 'five');
  await waitFor(async () => (await checkpoints(server, s.id)).length >= before + 2, { message: 'two more checkpoints' });
  assert.equal((await checkpoints(server, s.id))[before], `#${before + 1}:none`, 'the changed script did not run');
});

// Issue 41, point 1: the same scripts set in the page's workspace
// settings win over the file's and run without approval.
uiTest('a check script set in the workspace settings wins over the file\'s and runs without approval', {
  setupWorkspace, viewport: { width: 1280, height: 800 }, timeout: 60_000,
}, async ({ page, server, screenshot }) => {
  const dialog = page.locator(sel('scripts-dialog'));
  await dialog.waitFor({ state: 'visible' });
  await page.locator(sel('scripts-later')).click();

  await page.locator(sel('scripts-settings-open')).click();
  const settings = page.locator(sel('scripts-settings'));
  await settings.waitFor({ state: 'visible' });
  const check = page.locator(sel('scripts-settings-check'));
  assert.equal(await check.getAttribute('placeholder'), 'echo "checked $(cat turn.txt 2>/dev/null)"  (from agentmux.json)');
  await check.fill('echo "from the page"');
  await page.locator(sel('scripts-settings-mode')).selectOption('exclusive');
  await screenshot('51-scripts-settings');
  await page.locator(sel('scripts-settings-save')).click();
  await settings.waitFor({ state: 'hidden' });
  // Nothing of the file's waits any more: the page's check is in force.
  await page.locator(sel('banner-scripts')).waitFor({ state: 'hidden' });
  const { body } = await server.api('api/scripts');
  assert.deepEqual(body.scripts.map((s) => [s.name, s.source, s.approved]), [['check', 'settings', true]]);
  assert.equal(body.runMode, 'exclusive');

  const s = await server.createSession({ name: 'paged', command: AGENT });
  await tabById(page, s.id).click();
  await waitFor(async () => (await tabById(page, s.id).locator(sel('tab-check')).getAttribute('data-status')) === 'passed', { message: 'the page\'s check on the tab' });
  const { body: got } = await server.api(`api/sessions/${s.id}`);
  assert.equal(got.session.check.output, 'from the page\n');

  // Emptied again: the file's is in force, and waits for approval.
  await page.locator(sel('scripts-settings-open')).click();
  await settings.waitFor({ state: 'visible' });
  assert.equal(await check.inputValue(), 'echo "from the page"');
  await check.fill('');
  await page.locator(sel('scripts-settings-save')).click();
  await settings.waitFor({ state: 'hidden' });
  await page.locator(sel('banner-scripts')).waitFor({ state: 'visible' });
});
