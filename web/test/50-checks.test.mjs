// Issue 41, point 7: a check at the end of every turn. The workspace's
// check script (here from --check-script: the server's own, so no
// approval) runs on each turn's checkpoint: the session's tab shows the
// last turn's result, the Changes view's timeline each turn's, with the
// end of the output under a failure, and the panel turns sending failed
// checks to the agent on, which then gets the failure as a prompt and
// fixes it.
import assert from 'node:assert/strict';
import { uiTest, sel, tabById, waitFor, waitForLine, initGitRepo, git } from './harness.mjs';

// The check: turn.txt must say "good"; it prints a test runner's report,
// colours and all.
const CHECK = `if [ "$(cat turn.txt 2>/dev/null)" = good ]; then printf 'ok 1 - turn is good\\n# pass 1\\n'; else printf '\\033[31mnot ok 1 - turn is good\\033[0m\\n# fail 1\\n'; exit 1; fi`;

// Rings at its start; echoes each line it reads, and ends a turn on the
// user's words (written to turn.txt) or on the line of a prompt that asks
// for a fix (which writes "good"), as an agent reads a whole prompt.
const AGENT = ['sh', '-c', `printf 'ready\\a'; while IFS= read -r l; do echo "got:$l"; case "$l" in *"Please fix"*) l=good;; bad|good|worse) ;; *) continue;; esac; printf '%s\\n' "$l" > turn.txt; printf '\\a'; done`];

/** Types a line into the session, as its user would, while the Changes view stays on screen. */
async function say(server, id, line) {
  const { status, body } = await server.api(`api/sessions/${id}/input`, { method: 'POST', body: JSON.stringify({ data: `${line}\r` }) });
  assert.equal(status, 204, `input: ${status} ${JSON.stringify(body)}`);
}

async function setupWorkspace(dir) {
  await initGitRepo(dir);
  await git(dir, 'config', 'user.name', 'Check Tester');
  await git(dir, 'config', 'user.email', 'checks@example.test');
}

const tabCheck = (page, id) => tabById(page, id).locator(sel('tab-check'));

/** The timeline's checks, top to bottom, as "#id:status". */
function checks(page) {
  return page.locator(`${sel('checkpoint-list')} li`).evaluateAll((items) => items
    .map((li) => {
      const cp = li.querySelector('[data-testid=checkpoint]');
      const c = li.querySelector('[data-testid=checkpoint-check]');
      return cp ? `#${cp.dataset.id}:${c ? c.dataset.status : 'none'}` : null;
    })
    .filter(Boolean));
}

async function waitChecks(page, want, message) {
  await waitFor(async () => JSON.stringify(await checks(page)) === JSON.stringify(want), {
    timeout: 20_000, message: `${message}: the timeline's checks ${JSON.stringify(want)} (now ${JSON.stringify(await checks(page))})`,
  });
}

uiTest('the check of every turn: on the tab, in the timeline with its output, and sent to the agent when asked', {
  setupWorkspace, flags: ['--check-script', CHECK], viewport: { width: 1440, height: 900 }, timeout: 90_000,
}, async ({ page, server, screenshot }) => {
  const s = await server.createSession({ name: 'checked', command: AGENT });
  await tabById(page, s.id).click();
  await waitForLine(page, s.id, 'ready');

  // The first turn (nothing written yet) fails: the tab says so.
  await waitFor(async () => (await tabCheck(page, s.id).getAttribute('data-status')) === 'failed', { timeout: 20_000, message: 'the tab showing a failed check' });
  const mark = tabCheck(page, s.id);
  assert.equal(await mark.textContent(), '✗');
  assert.match(await mark.getAttribute('title'), /^Turn 1: check failed \(exit 1\)\n# fail 1$/);

  // The timeline: #1 failed, with the output's end, colours gone.
  await page.locator(sel('layout-changes')).click();
  await page.locator(sel('ship-checkpoints')).click();
  await waitChecks(page, ['#1:failed'], 'the first turn');
  const line = page.locator(`${sel('checkpoint-check')}[data-status=failed]`).first();
  assert.match(await line.textContent(), /✗ check failed \(exit 1\) · # fail 1/);
  await line.click();
  const output = page.locator(`${sel('checkpoint-check-output')} pre`).first();
  await output.waitFor({ state: 'visible' });
  assert.equal(await output.textContent(), 'not ok 1 - turn is good\n# fail 1\n');
  await screenshot('50-check-failed-timeline');

  // A turn that writes something else fails again; "good" passes.
  await say(server, s.id, 'bad');
  await waitChecks(page, ['#2:failed', '#1:failed'], 'a second failing turn');
  await say(server, s.id, 'good');
  await waitChecks(page, ['#3:passed', '#2:failed', '#1:failed'], 'a passing turn');
  await waitFor(async () => (await tabCheck(page, s.id).getAttribute('data-status')) === 'passed', { message: 'the tab showing the pass' });
  assert.equal(await tabCheck(page, s.id).textContent(), '✓');

  // Sending failures on: the next failure goes to the agent, whose
  // answer to it (a fix) passes.
  const send = page.locator(sel('check-send-failures'));
  assert.equal(await send.isChecked(), false, 'sending failures is off by default');
  await send.check();
  await waitFor(async () => (await server.api(`api/sessions/${s.id}`)).body.session.sendFailures, { message: 'the server has sending on' });
  await say(server, s.id, 'worse');
  await waitChecks(page, ['#5:passed', '#4:failed', '#3:passed', '#2:failed', '#1:failed'], 'the failure sent, and the fix');
  // The prompt held the check's output, which the agent read line by line.
  await waitForLine(page, s.id, 'got:not ok 1 - turn is good');
  await waitForLine(page, s.id, 'got:good');
  await screenshot('50-check-sent-and-fixed');
});

/** The service worker's notifications, read once no page shows one (see 43-notify). */
async function notifications(page) {
  return page.evaluate(async () => {
    const reg = await navigator.serviceWorker.ready;
    await window.__agentmux.notificationsSettled();
    return (await reg.getNotifications()).map((n) => ({ title: n.title, body: n.body, tag: n.tag }));
  });
}

uiTest('a failed check is added to the notification of the wait its turn ended in', {
  setupWorkspace, flags: ['--check-script', CHECK], timeout: 60_000,
}, async ({ page, server, context }) => {
  await context.grantPermissions(['notifications'], { origin: new URL(server.url).origin });
  const front = await server.createSession({ name: 'front', command: ['sh', '-c', 'exec sleep 60'] });
  await tabById(page, front.id).click();
  assert.ok(await page.evaluate(async () => !!(await navigator.serviceWorker.ready).active), 'the service worker is active');
  // In the background: its first turn ends (a bell), and its check fails.
  const s = await server.createSession({ name: 'checked', command: AGENT });
  const note = await waitFor(async () => (await notifications(page)).find((n) => n.tag === `agentmux-${s.id}-waiting` && n.body.includes('check failed')), {
    timeout: 20_000, message: 'the waiting notification with the check\'s failure',
  });
  assert.equal(note.title, 'checked needs input');
  assert.match(note.body, /\ncheck failed \(exit 1\): # fail 1$/);
  assert.equal((await notifications(page)).filter((n) => n.tag === note.tag).length, 1, 'the same notification, updated');
});
