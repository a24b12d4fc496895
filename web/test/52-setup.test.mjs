// Issue 41, point 4: a worktree session's setup script runs in its own
// terminal before the agent. The header says "Setting up" with the time
// it has taken; a setup that fails leaves the agent unstarted, with its
// output in the terminal and Retry, Start the agent anyway and Open a
// shell in the header; a key typed meanwhile starts nothing.
import assert from 'node:assert/strict';
import {
  uiTest, sel, tabById, tabByName, waitFor, waitForLine, initGitRepo, git, terminalPane,
} from './harness.mjs';

const SETUP = 'echo "installing the dependencies"; sleep 1.5; test -e "$AGENTMUX_ROOT_PATH/ok" || { echo "npm ERR! missing ok"; exit 1; }; echo ready';
const AGENT = ['sh', '-c', 'echo agent-started; exec sleep 60'];

async function setupWorkspace(dir) {
  await initGitRepo(dir);
  await git(dir, 'config', 'user.name', 'Setup Tester');
  await git(dir, 'config', 'user.email', 'setup@example.test');
}

const setupOf = async (server, id) => (await server.api(`api/sessions/${id}`)).body.session.setup;

uiTest('a worktree\'s setup runs before its agent, says how long, and on failure offers retry, start and a shell', {
  setupWorkspace, flags: ['--setup-script', SETUP], viewport: { width: 1440, height: 900 }, timeout: 90_000,
}, async ({ page, server, screenshot }) => {
  const s = await server.createSession({ name: 'feature', worktree: { branch: 'feature' }, command: AGENT });
  await tabById(page, s.id).click();
  const note = page.locator(sel('setup-note'));
  await note.waitFor({ state: 'visible' });
  assert.match(await note.textContent(), /^Setting up · \d+ s: echo "installing the dependencies"; /);
  await waitForLine(page, s.id, 'installing the dependencies');
  await screenshot('52-setup-running');

  // It fails: the agent has not started, and the header says what can be done.
  const bar = page.locator(sel('setup-bar'));
  await bar.waitFor({ state: 'visible', timeout: 15_000 });
  assert.equal(await page.locator('#setup-text').textContent(), 'Setup failed (exit 1)');
  assert.equal(await page.locator(sel('resume-bar')).isVisible(), false, 'no Resume beside it');
  await waitForLine(page, s.id, 'npm ERR! missing ok');
  await screenshot('52-setup-failed');

  // A key starts nothing: the bar is pointed at.
  await terminalPane(page).click();
  await page.keyboard.type('x');
  await waitFor(async () => (await bar.getAttribute('class')).includes('nudge'), { message: 'the setup bar nudged' });
  assert.equal((await setupOf(server, s.id)).agentStarted, false, 'the agent did not start');

  // A shell in the worktree, to look.
  await page.locator(sel('setup-shell')).click();
  const shellTab = tabByName(page, 'feature shell');
  await shellTab.waitFor();
  const shellId = await shellTab.getAttribute('data-session-id');
  await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, shellId), { message: 'the shell on screen' });
  // Whatever its prompt looks like: once it drew one, it reads.
  await waitForLine(page, shellId, (l) => l.trim() !== '', { message: 'the shell drew its prompt' });
  await page.keyboard.type('pwd\n');
  await waitForLine(page, shellId, (l) => l.endsWith('/.worktrees/feature'), { message: 'the shell in the worktree' });

  // Retry, once the cause is fixed: the agent starts after it.
  await tabById(page, s.id).click();
  await server.writeFile('ok', '');
  await page.locator(sel('setup-retry')).click();
  await note.waitFor({ state: 'visible' });
  await waitForLine(page, s.id, 'agent-started', { timeout: 15_000 });
  await bar.waitFor({ state: 'hidden' });
  await note.waitFor({ state: 'hidden' });
  const passed = await setupOf(server, s.id);
  assert.equal(passed.status, 'passed');
  assert.equal(passed.agentStarted, true);
  await screenshot('52-setup-retried');
});

uiTest('a failed setup can be skipped: the agent starts anyway, and says so', {
  setupWorkspace, flags: ['--setup-script', 'echo "no network"; exit 3'], viewport: { width: 1280, height: 800 },
}, async ({ page, server }) => {
  const s = await server.createSession({ name: 'skip', worktree: { branch: 'skip' }, command: AGENT });
  await tabById(page, s.id).click();
  const bar = page.locator(sel('setup-bar'));
  await bar.waitFor({ state: 'visible' });
  assert.equal(await page.locator('#setup-text').textContent(), 'Setup failed (exit 3)');
  await page.locator(sel('setup-start')).click();
  await waitForLine(page, s.id, 'agent-started');
  await waitForLine(page, s.id, (l) => l.includes('Starting the agent without the setup (it failed with exit code 3).'), { message: 'the note' });
  await bar.waitFor({ state: 'hidden' });
});

// On a phone the header is narrow: the failed setup's actions stay on
// screen and can be tapped.
uiTest('on a phone, a failed setup\'s Retry, Start anyway and Shell are on screen', {
  setupWorkspace, flags: ['--setup-script', 'echo "no network"; exit 3'],
  viewport: { width: 390, height: 844 }, contextOptions: { isMobile: true, hasTouch: true, deviceScaleFactor: 2 },
}, async ({ page, server, screenshot }) => {
  const s = await server.createSession({ name: 'phone', worktree: { branch: 'phone' }, command: AGENT });
  await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, s.id), { message: 'the session on screen' });
  const bar = page.locator(sel('setup-bar'));
  await bar.waitFor({ state: 'visible' });
  for (const b of ['setup-retry', 'setup-start', 'setup-shell']) {
    const box = await page.locator(sel(b)).boundingBox();
    assert.ok(box && box.x >= 0 && box.x + box.width <= 390 && box.width >= 24, `${b} on screen: ${JSON.stringify(box)}`);
  }
  await screenshot('52-setup-failed-phone');
  await page.locator(sel('setup-start')).tap();
  await waitForLine(page, s.id, 'agent-started');
});
