// Issue 41, point 5: the workspace's run script. A session's Run starts it
// in a run session of its own ("web · run", a tab of its own), on the
// session's port: its dev server answers there and Preview lists it.
// Restart run starts it again in the same terminal; Stop run stops it
// and keeps its output.
import assert from 'node:assert/strict';
import { uiTest, sel, tabById, tabByName, waitFor, waitForLine, initGitRepo, git } from './harness.mjs';

const SERVER = `require('http').createServer((q, r) => r.end('run of ' + process.env.AGENTMUX_BRANCH)).listen(+process.env.AGENTMUX_PORT, '127.0.0.1', () => console.log('listening on ' + process.env.AGENTMUX_PORT))`;

async function setupWorkspace(dir) {
  await initGitRepo(dir);
  await git(dir, 'config', 'user.name', 'Run Tester');
  await git(dir, 'config', 'user.email', 'run@example.test');
}

uiTest('Run starts the dev server in a terminal of its own on the session\'s port; restart and stop', {
  setupWorkspace, flags: ['--run-script', `exec node -e "${SERVER}"`], viewport: { width: 1440, height: 900 }, timeout: 90_000,
}, async ({ page, server, screenshot }) => {
  const s = await server.createSession({ name: 'web', worktree: { branch: 'web' }, command: ['sh', '-c', 'echo agent; exec sleep 60'] });
  await tabById(page, s.id).click();
  const start = page.locator(sel('run-start'));
  await start.waitFor({ state: 'visible' });
  assert.equal((await start.textContent()).trim(), 'Run');
  await start.click();

  const runTab = tabByName(page, 'web · run');
  await runTab.waitFor();
  const runId = await runTab.getAttribute('data-session-id');
  await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, runId), { message: 'the run on screen' });
  await waitForLine(page, runId, `listening on ${s.ports.first}`);
  assert.equal(await (await fetch(`http://127.0.0.1:${s.ports.first}/`)).text(), 'run of web');
  assert.equal((await start.textContent()).trim(), 'Restart run');
  await page.locator(sel('run-stop')).waitFor({ state: 'visible' });
  assert.match(await page.locator(sel('statusbar')).textContent(), /1\/4 running/, 'the run is no agent: not counted');
  await screenshot('55-run-terminal');

  // Preview lists it, as the run's.
  await page.locator(sel('layout-preview')).click();
  const row = page.locator(`${sel('preview-port')}[data-port="${s.ports.first}"]`);
  await row.waitFor({ timeout: 15_000 });
  assert.match(await row.locator(sel('preview-port-session')).textContent(), /^web · run/);
  // And follows it: the run's server is the one shown.
  await waitFor(async () => ((await page.locator(sel('preview-address')).textContent()) ?? '').includes(`${s.ports.first}.localhost`), {
    message: 'Preview showing the run\'s port',
  });
  await screenshot('55-run-preview');
  await page.locator(sel('layout-terminal')).click();

  // Restart: the same terminal, the server again.
  await start.click();
  await waitForLine(page, runId, (l) => l.includes('Run script restarted.'), { message: 'the restart said' });
  await waitFor(async () => (await fetch(`http://127.0.0.1:${s.ports.first}/`).then((r) => r.text()).catch(() => '')) === 'run of web', { message: 'the server back' });

  // Stop: the output stays, the server goes.
  await page.locator(sel('run-stop')).click();
  await waitFor(async () => ((await start.textContent()).trim()) === 'Run', { message: 'Run again' });
  await page.locator(sel('run-stop')).waitFor({ state: 'hidden' });
  await waitFor(async () => !(await fetch(`http://127.0.0.1:${s.ports.first}/`).then(() => true).catch(() => false)), { message: 'the server gone' });
  await waitForLine(page, runId, `listening on ${s.ports.first}`);
});
