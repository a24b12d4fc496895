// Issue 5, test 7: the server restarts under the page. The UI shows the
// shutdown and the reconnection, re-attaches without duplicating output,
// and the idle session can be resumed.
import assert from 'node:assert/strict';
import {
  uiTest, sel, createSession, tabById, waitFor, waitForPrompt, waitForLine, typeCommand, terminalLines, SERVER_DOWN_CONSOLE,
} from './harness.mjs';

const count = (lines, want) => lines.filter((l) => l.trim() === want).length;

uiTest(
  'server restart: banners, reconnect, replay without duplicates, resume',
  { allowConsole: SERVER_DOWN_CONSOLE },
  async ({ t, page, server, screenshot }) => {
    const id = await createSession(page, 'keep');
    await waitForPrompt(page, id);
    await typeCommand(page, 'for i in $(seq 1 3); do echo before-$i; done');
    await waitForLine(page, id, 'before-3');

    // Record what the banners do from before the SIGTERM on: on every DOM
    // mutation, and every 20 ms besides (style changes from CSS alone).
    await page.evaluate((s) => {
      const seen = (window.__bannerLog = []);
      const vis = (el) => !!el && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
      const record = () => {
        const sh = document.querySelector(s.shutdown);
        const co = document.querySelector(s.connection);
        const state = `${vis(sh) ? 'shutdown' : '-'}|${vis(co) ? `connection:${co.getAttribute('data-state')}` : '-'}`;
        if (seen[seen.length - 1] !== state) seen.push(state);
      };
      record();
      window.__bannerObserver = new MutationObserver(record);
      window.__bannerObserver.observe(document.body, { subtree: true, childList: true, attributes: true, characterData: true });
      window.__bannerTimer = setInterval(record, 20);
    }, { shutdown: sel('banner-shutdown'), connection: sel('banner-connection') });

    const code = await server.stop();
    assert.equal(code, 0, 'the server exits 0 on SIGTERM');

    const shutdownBanner = page.locator(sel('banner-shutdown'));
    const connBanner = page.locator(sel('banner-connection'));
    await waitFor(
      async () =>
        (await shutdownBanner.isVisible()) ||
        ((await connBanner.isVisible()) && ['reconnecting', 'connecting'].includes(await connBanner.getAttribute('data-state'))),
      { message: 'banner-shutdown, or banner-connection reconnecting, while the server is down' },
    );
    // While the server stays down the connection banner must say so.
    await waitFor(
      async () => (await connBanner.isVisible()) && ['reconnecting', 'connecting'].includes(await connBanner.getAttribute('data-state')),
      { message: 'banner-connection visible with data-state reconnecting while the server is down' },
    );
    assert.match(await connBanner.innerText(), /\S/, 'banner-connection has text');
    await screenshot('shutdown');
    const downLog = await page.evaluate(() => window.__bannerLog.slice());
    t.diagnostic(`banner states while stopping: ${downLog.join(' > ')}`);
    assert.ok(
      downLog.some((s) => s.startsWith('shutdown')),
      `banner-shutdown was never shown after server.shutdown (states seen: ${downLog.join(' > ')})`,
    );

    await server.restart();
    await waitFor(async () => !(await connBanner.isVisible()), { timeout: 20_000, message: 'banner-connection hidden after the restart' });
    await waitFor(async () => !(await shutdownBanner.isVisible()), { message: 'banner-shutdown hidden after the restart' });
    await page.evaluate(() => {
      clearInterval(window.__bannerTimer);
      window.__bannerObserver.disconnect();
    });

    const tab = tabById(page, id);
    await tab.waitFor({ state: 'visible' });
    await waitFor(async () => (await tab.getAttribute('data-status')) === 'idle', { message: 'the tab shows the session idle' });
    await waitFor(async () => count(await terminalLines(page, id), 'before-3') >= 1, { message: 'before-3 still in the terminal' });
    const lines = await terminalLines(page, id);
    assert.equal(count(lines, 'before-3'), 1, `before-3 exactly once after the reconnect:\n${lines.filter(Boolean).join('\n')}`);
    assert.equal(count(lines, 'before-1'), 1, 'before-1 exactly once after the reconnect');
    await screenshot('reconnected');

    const resume = page.locator(`${sel('resume')} >> visible=true`).first();
    await resume.click();
    await waitFor(async () => (await tab.getAttribute('data-status')) === 'active', { message: 'active after resume' });
    await waitFor(async () => (await page.locator(`${sel('resume')} >> visible=true`).count()) === 0, {
      message: 'the resume button goes away once the session is active',
    });
    await waitForPrompt(page, id);
    await typeCommand(page, 'echo after');
    await waitForLine(page, id, 'after');
    const end = await terminalLines(page, id);
    assert.equal(count(end, 'before-3'), 1, 'before-3 still exactly once after the resume');
    assert.equal((await server.sessions()).find((s) => s.id === id).status, 'active');
  },
);

uiTest(
  'a WebGL chunk that fails to load (the server away) is no page error, and the terminal asks for it again',
  { allowConsole: SERVER_DOWN_CONSOLE, timeout: 60_000 },
  async ({ page }) => {
    // The first request for the chunk fails as it does while the server
    // restarts; later ones reach the server.
    const asked = [];
    await page.route('**/addon-webgl-*.js', (route) => {
      asked.push(Date.now());
      return asked.length === 1 ? route.abort('connectionrefused') : route.continue();
    });
    const id = await createSession(page, 'gl');
    await waitForPrompt(page, id);
    await waitFor(() => asked.length >= 2, {
      timeout: 20_000,
      message: 'the terminal to ask for the WebGL chunk again after its first request failed',
    });
    assert.ok(asked[1] - asked[0] >= 4_000, `the second request waited for the retry delay (${asked[1] - asked[0]} ms after the first)`);
    // The terminal drew on all along (the DOM renderer) and still works.
    await typeCommand(page, 'echo gl-$((6*7))');
    await waitForLine(page, id, 'gl-42');
  },
);
