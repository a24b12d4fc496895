// Issue 46: pull requests on the user's behalf, against a stand-in for
// GitHub (web/test/fakegithub, driven through its /_control/ API). The
// workspace's origin names github.com/octo/demo while pushes go to a bare
// repository beside it (remote.origin.pushurl); the server asks the
// stand-in (--github-api) with the token in its environment (GITHUB_TOKEN)
// and follows the pull request every second (--pull-request-refresh).
//
// In a worktree session running a shell, a commit is made by typed
// commands; the pull request is opened from the ship bar's dialog, which
// the server prefills and which says which token it uses; the stand-in has
// it with the title typed. Its checks go pending, then failing, and the bar
// follows without a reload (a notification says so, since the page is
// "hidden"); Fix failing checks queues the prompt, which the shell's read
// loop (our agent: it rings the bell when it waits, and only echoes what it
// reads, so nothing runs) receives. A reviewer's unresolved thread and
// changes requested: Address review fills the review draft, shown in the
// Changes view, which is sent as any review, and the loop receives it. On
// a phone (390x844) the pull request's summary fits the bar.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import {
  uiTest, sel, tabById, tempDir, waitFor, waitForLine, waitForPrompt, typeCommand, git, initGitRepo, browser, openApp,
  selectSession, screenshot as shoot, recordNotifications, terminalLines as readTerminalLines, REPO_DIR,
} from './harness.mjs';

const TOKEN = 'ghs-uitest-68-4b1d0e';
const OWNER = 'octo';
const REPO = 'demo';
const BRANCH = 'feat-widget';
const TITLE = 'Add the widget, as typed in the dialog';
const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true };

let standInBinary;
/** Builds the stand-in once per run (go's build cache makes it quick). */
function buildStandIn() {
  standInBinary ??= (async () => {
    const out = path.join(await tempDir('fakegithub'), 'fakegithub');
    await new Promise((resolve, reject) => {
      execFile('go', ['build', '-o', out, './web/test/fakegithub'], { cwd: REPO_DIR, timeout: 180_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`go build ./web/test/fakegithub: ${err.message}\n${stderr}`)) : resolve());
    });
    return out;
  })();
  return standInBinary;
}

/** Starts the stand-in, stopped with the test: { url, control(path, body), log }. */
async function startStandIn(fx) {
  const bin = await buildStandIn();
  const proc = spawn(bin, ['-addr', '127.0.0.1:0', '-token', TOKEN], { stdio: ['ignore', 'pipe', 'pipe'] });
  const gh = { log: '', url: null };
  let exited = false;
  proc.on('exit', () => { exited = true; });
  fx.onCleanup(() => proc.kill('SIGTERM'));
  proc.stdout.on('data', (buf) => { gh.log += buf; });
  proc.stderr.on('data', (buf) => { gh.log += buf; });
  gh.url = await waitFor(() => {
    if (exited) throw new Error(`fakegithub exited: ${gh.log}`);
    return /listening (http:\/\/\S+)/.exec(gh.log)?.[1];
  }, { timeout: 15_000, message: 'fakegithub listening' });
  /** A control call: POST with a JSON body, or GET without one; the answer's JSON (or null). */
  gh.control = async (p, body) => {
    const res = await fetch(new URL(`/_control/${p}`, gh.url), body === undefined ? {} : { method: 'POST', body: JSON.stringify(body) });
    const text = await res.text();
    assert.ok(res.ok, `/_control/${p} ${JSON.stringify(body ?? '')}: ${res.status} ${text}`);
    return text ? JSON.parse(text) : null;
  };
  return gh;
}

const text = async (loc) => ((await loc.textContent()) ?? '').replace(/\s+/g, ' ').trim();

/** The Changes view of the session on screen (a clean tree: the commit took it all). */
async function showChanges(page, tap = false) {
  const btn = page.locator(sel('layout-changes'));
  if (tap) await btn.tap();
  else await btn.click();
  await waitFor(async () => (await page.locator('#app').getAttribute('data-layout')) === 'changes', { message: 'the Changes view' });
  await page.locator(sel('ship')).waitFor({ state: 'visible', timeout: 15_000 });
}

/** What the notifications recorded (recordNotifications) say. */
const notified = (page) => page.evaluate(async () => {
  await window.__agentmux.notificationsSettled();
  return window.__notifications.map((n) => `${n.title} | ${n.body}`);
});

uiTest('pull request: open it from the ship bar, follow its checks and review, and send them back to the agent', { server: false, timeout: 180_000 }, async (fx) => {
  const { page } = fx;
  const gh = await startStandIn(fx);
  await gh.control('repos', { owner: OWNER, name: REPO, defaultBranch: 'main' });

  // Pushes go to a bare repository; the remote's URL is GitHub's, for GitHub's sake.
  const bare = path.join(await tempDir('remote'), 'demo.git');
  await git(path.dirname(bare), 'init', '-q', '--bare', bare);
  const server = await fx.startServer({
    flags: ['--github-api', gh.url, '--pull-request-refresh', '1s'],
    env: { GITHUB_TOKEN: TOKEN },
    setupWorkspace: async (dir) => {
      await initGitRepo(dir);
      // The session commits: an identity of the repository's own (the server's HOME has none).
      await git(dir, 'config', 'user.name', 'PR Tester');
      await git(dir, 'config', 'user.email', 'pr@example.test');
      await git(dir, 'remote', 'add', 'origin', `https://github.com/${OWNER}/${REPO}.git`);
      await git(dir, 'config', 'remote.origin.pushurl', bare);
      await git(dir, 'push', '-q', bare, 'main');
    },
  });
  fx.server = server; // its log joins a failure's message
  await fx.open(server);

  const s = await server.createSession({ name: 'feature', worktree: { branch: BRANCH } });
  await tabById(page, s.id).click();
  await waitForPrompt(page, s.id);
  // The commit, typed as a person (or an agent) would.
  await typeCommand(page, "printf 'the widget\\n' > widget.txt && git add widget.txt && git commit -q -m 'Add the widget' && echo committed-ok");
  await waitForLine(page, s.id, 'committed-ok', { timeout: 15_000 });
  assert.equal((await git(s.worktree.path, 'log', '-1', '--format=%s')).trim(), 'Add the widget');
  // From here the shell is our agent: it rings the bell when it waits, and
  // echoes each line it reads, so a prompt typed into it runs nothing.
  await typeCommand(page, "printf 'ready\\a'; while IFS= read -r l; do echo \"got:$l\"; printf '\\a'; done");
  await waitForLine(page, s.id, 'ready');

  // ---- open the pull request ------------------------------------------------
  await showChanges(page);
  const open = page.locator(sel('ship-pull-open'));
  await open.waitFor({ state: 'visible' });
  await waitFor(async () => (await open.getAttribute('data-ready')) === 'true', { message: 'the forge ready (GET /pull-request)' });
  assert.equal(await open.getAttribute('aria-disabled'), 'false');
  await open.click();
  const dialog = page.locator(sel('pr-dialog'));
  await dialog.waitFor({ state: 'visible' });
  const title = dialog.locator(sel('pr-title'));
  await waitFor(async () => !(await title.isDisabled()), { message: 'the suggestion in the dialog' });
  const { body: draft } = await server.api(`api/sessions/${s.id}/pull-request/draft`);
  assert.equal(await title.inputValue(), draft.title, 'the title the server suggests');
  assert.match(draft.title, /Add the widget/, 'from the single commit\'s subject');
  assert.equal(await dialog.locator(sel('pr-body')).inputValue(), draft.body);
  assert.equal(await text(dialog.locator(sel('pr-forge'))), 'Using GITHUB_TOKEN for github.com.');
  assert.match(await text(dialog.locator(sel('pr-where'))), new RegExp(`^${BRANCH} into main:`));
  assert.equal(await dialog.locator(sel('pr-draft')).isChecked(), false);
  assert.equal(await page.evaluate(() => document.activeElement?.dataset.testid), 'pr-title', 'the title has the focus');
  await title.fill(TITLE);
  await fx.screenshot('pr-dialog');
  await dialog.locator(sel('pr-submit')).click();
  await dialog.waitFor({ state: 'hidden', timeout: 20_000 });
  await page.locator(`${sel('toast')}[data-kind="info"]`, { hasText: /^Opened pull request #1\./ }).waitFor();

  // The stand-in has it, with the title typed; the bare remote has the branch.
  const pulls = await gh.control(`pulls?owner=${OWNER}&name=${REPO}`);
  assert.equal(pulls.length, 1, JSON.stringify(pulls));
  assert.equal(pulls[0].title, TITLE);
  assert.equal(pulls[0].head, BRANCH);
  assert.equal(pulls[0].base, 'main');
  assert.equal(pulls[0].draft, false);
  assert.equal((await git(bare, 'rev-parse', BRANCH)).trim(), (await git(s.worktree.path, 'rev-parse', 'HEAD')).trim(), 'pushed first');
  const pr = page.locator(sel('ship-pull'));
  await pr.waitFor({ state: 'visible' });
  const link = pr.locator(sel('ship-pull-link'));
  assert.equal(await text(link), '#1');
  assert.equal(await link.getAttribute('href'), `https://github.com/${OWNER}/${REPO}/pull/1`);
  assert.equal(await link.getAttribute('target'), '_blank');
  assert.equal(await open.isVisible(), false, 'no second Open once linked');
  await waitFor(async () => (await pr.getAttribute('data-state')) === 'open', { message: 'the state from the server' });
  assert.equal(await text(pr.locator(sel('ship-pull-state'))), 'open');

  // ---- checks: pending, then failing, live --------------------------------
  // The page is "hidden" from here (another browser tab): the turns are notified.
  await recordNotifications(page, { hidden: true });
  await gh.control('checks', { owner: OWNER, name: REPO, pull: 1, runs: [
    { id: 41, name: 'lint', status: 'in_progress' },
    { id: 42, name: 'test', status: 'queued' },
  ] });
  const checks = pr.locator(sel('ship-pull-checks'));
  await waitFor(async () => (await pr.getAttribute('data-checks')) === 'pending', { timeout: 15_000, message: 'the checks pending, without a reload' });
  assert.deepEqual(await checks.locator('[data-kind]').allTextContents(), ['\u2026 2 pending']);
  assert.equal(await pr.locator(sel('ship-pull-fix')).isVisible(), false, 'nothing to fix yet');
  await fx.screenshot('pr-bar-pending');

  await gh.control('joblog', { jobId: 41, text: 'lint: widget.txt:1: say what the widget is for\n' });
  await gh.control('checks', { owner: OWNER, name: REPO, pull: 1, runs: [
    { id: 41, name: 'lint', conclusion: 'failure', title: '1 problem' },
    { id: 42, name: 'test', conclusion: 'success' },
  ] });
  await waitFor(async () => (await pr.getAttribute('data-checks')) === 'failing', { timeout: 15_000, message: 'the checks failing, without a reload' });
  assert.deepEqual(await checks.locator('[data-kind]').allTextContents(), ['\u2717 lint failing', '\u2713 1 passing']);
  const fix = pr.locator(sel('ship-pull-fix'));
  await fix.waitFor({ state: 'visible' });
  await waitFor(async () => (await notified(page)).some((n) => n.startsWith('feature: checks failing on #1 | lint failed')),
    { message: 'the notification of the checks that turned to failing' });
  await fx.screenshot('pr-bar-failing');

  // Fix failing checks: the prompt is queued, and the waiting loop reads it.
  await fix.click();
  await page.locator(`${sel('toast')}[data-kind="info"]`, { hasText: /^Asked the agent to fix lint/ }).waitFor();
  await waitForLine(page, s.id, /^got:.*lint/, { timeout: 20_000, message: 'the fix-checks prompt at the shell' });
  await waitForLine(page, s.id, /^got:.*say what the widget is for/, { timeout: 10_000, message: 'with the end of the failing check\'s log' });

  // ---- a review: unresolved thread, changes requested ------------------------
  await gh.control('threads', { owner: OWNER, name: REPO, pull: 1, resolved: false, path: 'widget.txt', line: 1,
    comments: [{ author: 'reviewer', body: 'Name what the widget does.' }, { author: 'octo', body: 'Agreed.' }] });
  await gh.control('threads', { owner: OWNER, name: REPO, pull: 1, resolved: true, path: 'widget.txt', line: 1,
    comments: [{ author: 'reviewer', body: 'This one is resolved.' }] });
  await gh.control('reviews', { owner: OWNER, name: REPO, pull: 1, user: 'reviewer', state: 'CHANGES_REQUESTED', body: 'A few things.' });
  await waitFor(async () => (await pr.getAttribute('data-review')) === 'changes_requested', { timeout: 15_000, message: 'changes requested, without a reload' });
  assert.equal(await pr.getAttribute('data-unresolved'), '1');
  assert.equal(await text(pr.locator(sel('ship-pull-review'))), 'changes requested');
  await waitFor(async () => (await notified(page)).some((n) => n.startsWith('feature: changes requested on #1 | 1 unresolved comment')),
    { message: 'the notification of the changes requested' });
  // (The loop's bells are notified too: "feature needs input".)
  const notes = (await notified(page)).filter((n) => / on #1 \|/.test(n));
  assert.equal(notes.length, 2, `one notification per turn: ${JSON.stringify(notes)}`);
  await page.evaluate(() => delete document.hidden);

  await pr.locator(sel('ship-pull-address')).click();
  await page.locator(`${sel('toast')}[data-kind="info"]`, { hasText: /^1 review comment of #1 added to the review draft/ }).waitFor();
  const review = page.locator(sel('review'));
  await waitFor(async () => (await review.getAttribute('data-count')) === '1', { message: 'the review draft with the comment' });
  assert.equal(await page.locator('#app').getAttribute('data-layout'), 'changes');
  const comment = review.locator(sel('review-comment'));
  assert.equal(await comment.getAttribute('data-path'), 'widget.txt');
  assert.equal(await comment.getAttribute('data-line'), '1');
  assert.match(await text(comment.locator(sel('review-text'))), /^@reviewer: Name what the widget does\..*octo: Agreed\./);
  assert.ok(await review.isVisible(), 'the draft in view');
  await fx.screenshot('pr-address-review');

  // Sent as any review: a shell is asked first; sent as a prompt, the loop reads it.
  await review.locator(sel('review-send')).click();
  await page.locator(sel('review-shell-confirm')).waitFor({ state: 'visible' });
  await page.locator(sel('review-shell-prompt')).click();
  await waitForLine(page, s.id, /^got:.*Name what the widget does/, { timeout: 20_000, message: 'the review at the shell' });
  await waitFor(async () => (await review.getAttribute('data-count')) === '0', { message: 'the draft sent' });

  // ---- the notifications' buttons, as the service worker does them --------------
  // (No script can click a notification: the worker's handler is called
  // with one of the shape the page shows, as test 43 does.)
  const worker = fx.context.serviceWorkers()[0] ?? (await fx.context.waitForEvent('serviceworker'));
  const data = { sessionId: s.id, name: 'feature', pullRequest: 1, by: 'notified-person' };
  const asked = async () => (await readTerminalLines(page, s.id)).filter((l) => l.includes('got:The checks of pull request #1 ')).length;
  assert.equal(await asked(), 1, `the first prompt once on screen:\n${(await readTerminalLines(page, s.id)).filter((l) => l.trim()).join('\n')}`);
  await worker.evaluate((data) => self.agentmuxNotificationClick({ data, close() {} }, 'fix-checks'), data);
  await waitFor(async () => (await asked()) === 2, { timeout: 20_000, message: 'Fix checks from the notification: the prompt again' });
  await page.locator(sel('layout-terminal')).click();
  await worker.evaluate((data) => self.agentmuxNotificationClick({ data, close() {} }, 'address-review'), data);
  await waitFor(async () => (await page.locator('#app').getAttribute('data-layout')) === 'changes', { message: 'Address review from the notification shows the Changes view' });
  await waitFor(async () => (await review.getAttribute('data-count')) === '1', { message: 'with the review draft filled again' });
  assert.equal(await text(review.locator(sel('review-author'))), 'notified-person', 'brought by the name the page went by');

  // ---- a phone ------------------------------------------------------------------
  const phone = await (await browser()).newContext(PHONE);
  fx.onCleanup(() => phone.close());
  const pp = await phone.newPage();
  pp.on('pageerror', (err) => fx.errors.push({ kind: 'pageerror', text: String(err) }));
  await openApp(pp, server.url);
  await selectSession(pp, s.id);
  await showChanges(pp, true);
  const ppr = pp.locator(sel('ship-pull'));
  await waitFor(async () => (await ppr.getAttribute('data-checks')) === 'failing' && ppr.isVisible(), { message: 'the pull request on the phone' });
  const fits = await pp.evaluate(() => {
    const bar = document.querySelector('[data-testid=ship]');
    const parts = [...document.querySelectorAll('[data-testid=ship] [data-testid^=ship-pull]')].filter((el) => el.offsetParent !== null);
    return {
      width: window.innerWidth,
      barOverflows: bar.scrollWidth > bar.clientWidth + 1,
      out: parts.filter((el) => { const r = el.getBoundingClientRect(); return r.left < 0 || r.right > window.innerWidth + 0.5; }).map((el) => el.dataset.testid),
      cut: parts.filter((el) => el.scrollWidth > el.clientWidth + 1 && el.dataset.testid !== 'ship-pull').map((el) => el.dataset.testid),
    };
  });
  assert.deepEqual(fits, { width: 390, barOverflows: false, out: [], cut: [] }, 'the summary fits the phone\'s bar');
  // The review draft the review filled: its buttons on the screen, not past its edge.
  const send = await pp.locator(sel('review-send')).boundingBox();
  assert.ok(send && send.x >= 0 && send.x + send.width <= 390.5, `the draft's Send on the screen: ${JSON.stringify(send)}`);
  await shoot(pp, 'pr-phone');
});
