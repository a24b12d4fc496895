// Issue 5, test 6: the memory banner at critical, and new sessions blocked.
// The thresholds are set below what this machine uses (about 2 %).
import assert from 'node:assert/strict';
import { uiTest, sel, waitFor } from './harness.mjs';

uiTest('memory critical: banner shown, new sessions disabled', { server: false }, async ({ t, page, startServer, open, screenshot }) => {
  const probe = await startServer();
  const { status, body } = await probe.api('api/resources');
  assert.equal(status, 200, `GET /api/resources: ${status}`);
  await probe.stop();
  if (!(body.percent > 1)) {
    t.skip(`memory use is ${body.percent}%, not above the 1% critical threshold this test needs`);
    return;
  }

  const server = await startServer({ flags: ['--mem-warn', '0.5', '--mem-critical', '1', '--mem-interval', '200ms'] });
  await waitFor(async () => (await server.api('api/resources')).body.level === 'critical', {
    message: 'GET /api/resources level critical',
  });
  await open(server);

  const banner = page.locator(sel('banner-resource'));
  await banner.waitFor({ state: 'visible' });
  assert.equal(await banner.getAttribute('data-level'), 'critical', 'banner-resource data-level');
  const text = await banner.innerText();
  assert.match(text, /\d+(\.\d+)?\s*%/, `banner text shows the percentage: ${JSON.stringify(text)}`);

  const button = page.locator(sel('new-session'));
  await waitFor(() => button.isDisabled(), { message: 'new-session disabled while memory is critical' });
  const title = await button.getAttribute('title');
  assert.ok(title && title.trim().length > 0, `new-session has a reason in its title: ${JSON.stringify(title)}`);

  // The status bar's gauge reads GET /api/resources.
  const gauge = page.locator(sel('memory-gauge'));
  await waitFor(async () => Number(await gauge.getAttribute('data-percent')) > 0, { message: 'memory-gauge data-percent > 0' });
  await screenshot('memory-critical');
});
