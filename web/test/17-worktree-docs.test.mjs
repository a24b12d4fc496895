// Worktrees: documents and workflows from a session's worktree carry its
// sessionId. A document from a session in the background is listed but
// does not take the screen; one from the session on screen is shown as the
// workspace's are. The workflow panel shows the active session's workflow
// when it has one, else the workspace's.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { uiTest, sel, createSession, tabById, waitFor, initGitRepo } from './harness.mjs';

const stepNames = (page) => page.locator(sel('workflow-step')).evaluateAll((els) => els.map((e) => e.getAttribute('data-name')));

async function writeIn(dir, rel, content) {
  const p = path.join(dir, rel);
  await fs.mkdir(path.dirname(p), { recursive: true });
  await fs.writeFile(p, content);
}

uiTest('worktree documents and workflows follow their session', { setupWorkspace: initGitRepo }, async ({ page, server, frames }) => {
  await server.writeFile('docs/bmm-workflow-status.yaml', 'workflow_status:\n  ws-one: docs/one.md\n  ws-two: in-progress\n  ws-three: required\n');
  await waitFor(async () => (await stepNames(page)).join() === 'ws-one,ws-two,ws-three', { message: 'the workspace\'s workflow' });

  const front = await createSession(page, 'front');
  const wt = await server.createSession({ name: 'wt', worktree: { branch: 'feat-docs' } });
  const wtTab = tabById(page, wt.id);
  await wtTab.waitFor({ state: 'visible' });
  const wtDir = wt.worktree.path;
  const wtRel = path.relative(server.workspace, wtDir);
  assert.match(wtRel, /^\.worktrees\/[^/]+$/, `worktree at ${wtDir}`);

  // Everything the artifact pane and the layout show, from now on.
  await page.evaluate((s) => {
    const seen = (window.__shown = []);
    const record = () => {
      const state = `${document.getElementById('app').dataset.layout}|${document.querySelector(s).textContent}`;
      if (seen[seen.length - 1] !== state) seen.push(state);
    };
    record();
    new MutationObserver(record).observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
  }, sel('artifact-path'));

  // A document from the session in the background: listed only.
  await writeIn(wtDir, 'docs/prd.md', '# PRD from the worktree\n');
  const prdRel = `${wtRel}/docs/prd.md`;
  await waitFor(() => frames.some((f) => f.type === 'layout.shift' && f.sessionId === wt.id && f.path === prdRel), {
    message: `a layout.shift for ${prdRel} with the worktree session's id`,
  });
  await page.locator(`${sel('recent-doc')}[data-path="${prdRel}"]`).waitFor({ state: 'attached' });

  // One from the workspace still takes the screen.
  await server.writeFile('docs/ws.md', '# From the workspace\n');
  await waitFor(async () => (await page.locator(sel('artifact-path')).textContent()) === 'docs/ws.md', { message: 'docs/ws.md shown' });
  const shown = await page.evaluate(() => window.__shown.slice());
  assert.ok(!shown.some((s) => s.includes(prdRel)), `the background session's document was never shown: ${shown.join(' > ')}`);
  assert.notEqual(await page.locator('#app').getAttribute('data-layout'), 'terminal', 'the workspace\'s document changed the layout');

  // The worktree's workflow: shown only while its session is.
  await writeIn(wtDir, 'docs/bmm-workflow-status.yaml', 'workflow_status:\n  wt-one: docs/one.md\n  wt-two: in-progress\n');
  await waitFor(() => frames.some((f) => f.type === 'workflow.updated' && f.sessionId === wt.id), {
    message: 'a workflow.updated with the worktree session\'s id',
  });
  const panel = page.locator(sel('workflow'));
  assert.equal((await stepNames(page)).join(), 'ws-one,ws-two,ws-three', 'the workspace\'s workflow while "front" is shown');
  assert.equal(await panel.getAttribute('data-session-id'), null);

  await wtTab.click();
  await waitFor(async () => (await stepNames(page)).join() === 'wt-one,wt-two', { message: 'the worktree\'s workflow with its session shown' });
  assert.equal(await panel.getAttribute('data-session-id'), wt.id);

  // A document from the session on screen is shown.
  await writeIn(wtDir, 'docs/arch.md', '# Architecture in the worktree\n');
  const archRel = `${wtRel}/docs/arch.md`;
  await waitFor(async () => (await page.locator(sel('artifact-path')).textContent()) === archRel, { message: `${archRel} shown` });
  await waitFor(async () => /Architecture in the worktree/.test(await page.locator(sel('artifact-content')).textContent()), {
    message: 'the worktree document\'s content',
  });

  await tabById(page, front).click();
  await waitFor(async () => (await stepNames(page)).join() === 'ws-one,ws-two,ws-three', { message: 'the workspace\'s workflow again' });
  assert.equal(await panel.getAttribute('data-session-id'), null);
});
