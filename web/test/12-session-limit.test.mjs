// Issue 5: "+" is disabled, with the reason shown, at the session limit,
// and comes back when a session ends.
import assert from 'node:assert/strict';
import { uiTest, sel, createSession, waitFor } from './harness.mjs';

uiTest('new sessions are disabled with the reason at the session limit', { flags: ['--max-sessions', '1'] }, async ({ page, server }) => {
  const button = page.locator(sel('new-session'));
  assert.ok(!(await button.isDisabled()), 'new-session enabled below the limit');

  await createSession(page, 'only');
  await waitFor(() => button.isDisabled(), { message: 'new-session disabled at the limit of 1' });
  const title = (await button.getAttribute('title')) ?? '';
  assert.match(title, /limit|1 of 1|running/i, `the reason is shown: ${JSON.stringify(title)}`);

  // The server agrees: a second create is refused.
  const res = await server.api('api/sessions', { method: 'POST', body: '{}' });
  assert.equal(res.status, 409, 'POST /api/sessions at the limit');

  // Ending the session frees the slot.
  const [only] = await server.sessions();
  const del = await server.api(`api/sessions/${only.id}`, { method: 'DELETE' });
  assert.equal(del.status, 204, 'DELETE the session');
  await waitFor(async () => !(await button.isDisabled()), { message: 'new-session enabled again after the delete' });
});
