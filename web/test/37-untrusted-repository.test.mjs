// Issue 28: git refuses a repository that belongs to another user. The
// workspace agentmux is given is trusted for its own git (the Go tests
// cover that); a repository it was not given, here one the workspace is
// a subdirectory of, which belongs to another uid, is still refused, and
// the UI says so in words, with what to do: in the Changes view and in
// the new-session dialog's worktree field, instead of an internal error
// or "not a git repository".
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { uiTest, sel, waitFor, waitForPrompt, createSession, initGitRepo } from './harness.mjs';

const FOREIGN_UID = 65534; // nobody

/** Makes the workspace's parent a repository that belongs to FOREIGN_UID. */
async function insideForeignRepo(workspace) {
  const repo = path.dirname(workspace);
  await initGitRepo(repo);
  // Git looks at the owner of the work tree's top and of its .git.
  await fs.chown(repo, FOREIGN_UID, FOREIGN_UID);
  for (const entry of await fs.readdir(path.join(repo, '.git'), { recursive: true })) {
    await fs.lchown(path.join(repo, '.git', entry), FOREIGN_UID, FOREIGN_UID);
  }
  await fs.chown(path.join(repo, '.git'), FOREIGN_UID, FOREIGN_UID);
}

const text = async (loc) => ((await loc.textContent()) ?? '').replace(/\s+/g, ' ').trim();
const isRoot = process.getuid?.() === 0;

(isRoot ? uiTest : test.skip)(
  'a repository of another user\'s that agentmux was not given is explained, not broken',
  { setupWorkspace: insideForeignRepo, allowConsole: [/status of 409 \(Conflict\)/] },
  async ({ page, server, screenshot }) => {
    const repo = path.dirname(server.workspace);
    const refusal = new RegExp(`git refuses to work in ${repo.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: it belongs to another user \\(uid ${FOREIGN_UID}`, 'i');

    // The dialog offers no worktree and gives git's reason in words.
    const dialog = page.locator(sel('new-session-dialog'));
    const why = dialog.locator(sel('worktree-unavailable'));
    await page.locator(sel('new-session')).click();
    await dialog.waitFor({ state: 'visible' });
    await waitFor(async () => !(await dialog.locator(sel('worktree-field')).isVisible()) && (await why.isVisible()), {
      message: 'the worktree field hidden and the reason shown',
    });
    assert.equal(await why.getAttribute('data-kind'), 'untrusted-repository');
    const whyText = await text(why);
    assert.match(whyText, /^Worktrees cannot be made here: /);
    assert.match(whyText, refusal);
    assert.match(whyText, /--workspace /, 'says what to do');
    await screenshot('worktree-untrusted-repository');
    await page.keyboard.press('Escape');
    await dialog.waitFor({ state: 'hidden' });

    // The Changes view says the same, not "Cannot show the changes".
    const id = await createSession(page, 'plain');
    await waitForPrompt(page, id);
    await page.keyboard.press('Alt+4');
    const changes = page.locator(sel('changes'));
    await waitFor(async () => (await changes.getAttribute('data-state')) === 'untrusted-repository', {
      message: `[data-testid=changes][data-state=untrusted-repository] (now ${await changes.getAttribute('data-state')})`,
    });
    const message = page.locator(sel('changes-message'));
    assert.ok(await message.isVisible());
    assert.equal(await message.getAttribute('data-kind'), 'untrusted-repository');
    const m = await text(message);
    assert.match(m, /^Git refuses this repository/);
    assert.match(m, refusal);
    assert.match(m, /git config --global --add safe\.directory /, 'says what to do');
    assert.equal(await page.locator(sel('changes-file')).count(), 0);
    await screenshot('changes-untrusted-repository');
  },
);
