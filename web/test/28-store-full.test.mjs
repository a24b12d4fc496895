// The server keeps a bounded number of sessions, running or ended
// (--keep-sessions), and deletes none by itself. When a create is refused
// for that (409 SESSION_STORE_FULL), the new-session dialog offers to
// delete the ended sessions in one click, asks in place, deletes only
// sessions that do not run, and then creates the session asked for.
import assert from 'node:assert/strict';
import { uiTest, sel, tabById, tabByName, waitFor } from './harness.mjs';

// The refused create is provoked on purpose.
const REFUSALS = [/Failed to load resource: the server responded with a status of 409 \(Conflict\)/];

uiTest(
  'a full session store offers to delete the ended sessions, keeps the running one, and creates',
  { flags: ['--keep-sessions', '4', '--max-sessions', '2'], allowConsole: REFUSALS },
  async ({ page, server, screenshot }) => {
    const cfg = await server.api('api/config');
    assert.equal(cfg.body.keepSessions, 4, 'GET /api/config says how many sessions are kept');

    // One running session (the harness's interactive bash) and three that
    // end at once. One at a time: at --max-sessions 2 each must have ended
    // before the next starts.
    const keeper = await server.createSession({ name: 'keeper' });
    const ended = [];
    for (let i = 1; i <= 3; i++) {
      const s = await server.createSession({ name: `done-${i}`, command: ['true'] });
      ended.push(s.id);
      await waitFor(async () => (await server.sessions()).some((x) => x.id === s.id && !x.running), {
        message: `session done-${i} to end`,
      });
    }
    await waitFor(async () => (await page.locator(sel('tab')).count()) === 4, { message: 'four tabs' });
    for (const id of ended) {
      await waitFor(async () => (await tabById(page, id).getAttribute('data-status')) !== 'active', {
        message: `the tab of ${id} to show it ended`,
      });
    }

    // "+" stays usable (the way out is in its dialog) and says why a create may be refused.
    const plus = page.locator(sel('new-session'));
    await waitFor(async () => /keeps at most 4 sessions/.test((await plus.getAttribute('title')) ?? ''), {
      message: 'the reason in the title of new-session',
    });
    assert.ok(!(await plus.isDisabled()), 'new-session stays enabled at the bound on kept sessions');

    // The refused create, and the offer.
    await plus.click();
    const dialog = page.locator(sel('new-session-dialog'));
    await dialog.waitFor({ state: 'visible' });
    await dialog.locator('input[name=name]').fill('fresh');
    await dialog.locator(sel('create-session')).click();
    const error = dialog.locator(sel('new-session-error'));
    await error.waitFor({ state: 'visible' });
    assert.match(await error.textContent(), /4 sessions are kept/, 'the server\'s message is shown');
    const offer = dialog.getByRole('button', { name: 'Delete 3 ended sessions', exact: true });
    await offer.waitFor({ state: 'visible' });
    assert.equal(await offer.getAttribute('data-testid'), 'delete-ended');
    await screenshot('28-store-full-offer');

    // The first click asks, in place, naming the sessions; nothing is deleted yet.
    await offer.click();
    const confirm = dialog.locator(sel('delete-ended-confirm'));
    await confirm.waitFor({ state: 'visible' });
    const question = await confirm.textContent();
    for (const n of ['done-1', 'done-2', 'done-3']) assert.ok(question.includes(n), `the question names ${n}: ${question}`);
    assert.ok(!question.includes('keeper'), 'the running session is not among those to delete');
    assert.ok(
      await page.evaluate((s) => document.activeElement === document.querySelector(s), sel('delete-ended-no')),
      'Cancel has the focus: Enter does not delete',
    );
    assert.equal((await server.sessions()).length, 4, 'nothing deleted before the confirmation');
    await screenshot('28-store-full-confirm');

    // Cancel goes back to the offer; then confirm for real.
    await dialog.locator(sel('delete-ended-no')).click();
    await confirm.waitFor({ state: 'hidden' });
    await offer.click();
    await confirm.waitFor({ state: 'visible' });
    await dialog.getByRole('button', { name: 'Delete 3 ended sessions and create the new session' }).click();

    // The create is retried: the dialog closes on the new tab.
    const fresh = tabByName(page, 'fresh');
    await fresh.waitFor({ state: 'visible' });
    await dialog.waitFor({ state: 'hidden' });

    const left = await server.sessions();
    assert.deepEqual(left.map((s) => s.name).sort(), ['fresh', 'keeper'], 'the ended sessions are gone from the server');
    const kept = left.find((s) => s.name === 'keeper');
    assert.equal(kept.id, keeper.id, 'the running session was not deleted');
    assert.equal(kept.running, true, 'and it still runs');
    for (const id of ended) assert.equal(await tabById(page, id).count(), 0, `no tab left for ${id}`);
    assert.equal(await page.locator(sel('tab')).count(), 2, 'two tabs: keeper and fresh');
    await waitFor(async () => !/keeps at most/.test((await plus.getAttribute('title')) ?? ''), {
      message: 'the note gone from new-session below the bound',
    });
  },
);
