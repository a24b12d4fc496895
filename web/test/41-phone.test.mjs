// Issue 31, parts 1, 2 and 6: a phone (390 x 844, touch, device pixel
// ratio 3) reaches every session through the "Sessions" switcher, opens
// the panels as full-screen sheets, shows a session at the size the person
// typing gave it (watching never resizes) until "Fit to this screen", and
// scrolls the scrollback and selects text with a finger. At 1024 px the
// tabs keep their names readable and an overflowing strip says so.
import assert from 'node:assert/strict';
import {
  uiTest, sel, browser, openApp, createSession, waitFor, waitForPrompt, waitForLine, typeCommand, termSize, screenshot,
} from './harness.mjs';

const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true };
const NAMES = ['main-refactor', 'api-tests', 'frontend-polish', 'docs-update'];

/** A phone's page on the server, with the page's console errors failing the test as the fixture's do. */
async function phonePage(server, errors, extra = {}) {
  const context = await (await browser()).newContext({ ...PHONE, ...extra });
  const page = await context.newPage();
  page.setDefaultTimeout(10_000);
  page.on('console', (m) => m.type() === 'error' && errors.push({ kind: 'console', text: `phone: ${m.text()}` }));
  page.on('pageerror', (e) => errors.push({ kind: 'pageerror', text: `phone: ${e}` }));
  await openApp(page, server.url);
  return { context, page };
}

/** The session's size as the server has it (GET /api/sessions). */
async function apiSize(server, id) {
  const s = (await server.sessions()).find((x) => x.id === id);
  assert.ok(s, `session ${id} is listed`);
  return { cols: s.cols, rows: s.rows };
}

/** Where an element lies against the viewport. */
const boxOf = (page, selector) => page.evaluate((s) => {
  const el = document.querySelector(s);
  if (!el) return null;
  const r = el.getBoundingClientRect();
  return { left: r.left, top: r.top, right: r.right, bottom: r.bottom, vw: window.innerWidth, vh: window.innerHeight };
}, selector);

/** A panel covers the screen under the top bar (once it has slid in): the whole width, down to the bottom. */
async function assertSheet(page, selector, what) {
  const top = (await boxOf(page, '.topbar')).bottom;
  await waitFor(async () => {
    const b = await boxOf(page, selector);
    return b && Math.abs(b.left) < 1 && Math.abs(b.right - b.vw) < 1 && Math.abs(b.bottom - b.vh) < 1 && b.top <= top + 1;
  }, { message: `${what} covering the screen under the top bar (${top}px): ${JSON.stringify(await boxOf(page, selector))}` });
}

uiTest('phone: the switcher lists every session with its status, and the panels open as sheets', {
  timeout: 120_000,
  // The Changes view of a workspace that is no git repository: GET .../diff answers 409, as it should.
  allowConsole: [/phone: Failed to load resource: the server responded with a status of 409/],
}, async ({ server, errors }) => {
  const ids = [];
  for (const name of NAMES) ids.push((await server.createSession({ name })).id);
  const { context, page } = await phonePage(server, errors);
  try {
    await waitFor(() => page.evaluate(() => window.__agentmux.activeSessionId() !== null), { message: 'a session on screen' });
    // No clipped tabs: the strip gives way to the switcher, which names the session on screen.
    assert.equal(await page.locator(sel('tabs')).isVisible(), false, 'the tab strip is hidden on a phone');
    const button = page.getByRole('button', { name: 'Sessions', exact: true });
    await button.waitFor({ state: 'visible' });
    const active = await page.evaluate(() => window.__agentmux.activeSessionId());
    const activeName = NAMES[ids.indexOf(active)];
    await waitFor(async () => (await page.locator(sel('switcher-current')).textContent()) === activeName, { message: `the switcher names ${activeName}` });
    assert.ok(await page.locator(sel('switcher-current-status')).isVisible(), 'and shows its status');
    const bb = await button.boundingBox();
    assert.ok(bb.x >= 0 && bb.x + bb.width <= 390, `the switcher lies within the screen: ${JSON.stringify(bb)}`);
    const m = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(m <= 390, `no sideways scroll of the page: ${m}`);
    await screenshot(page, 'phone-terminal');

    // A tap opens the list: every session, its whole name and its status, in creation order.
    await button.tap();
    const sheet = page.locator(sel('switcher-sheet'));
    await sheet.waitFor({ state: 'visible' });
    assert.equal(await button.getAttribute('aria-expanded'), 'true');
    const listed = await sheet.locator(sel('switcher-item')).evaluateAll((items) => items.map((el) => {
      const name = el.querySelector('[data-testid=switcher-name]');
      const status = el.querySelector('[data-testid=switcher-status]');
      const r = el.getBoundingClientRect();
      return {
        id: el.dataset.sessionId,
        name: name.textContent,
        whole: name.scrollWidth <= name.clientWidth,
        status: status.textContent,
        dataStatus: el.dataset.status,
        inside: r.left >= 0 && r.right <= window.innerWidth && r.top >= 0 && r.bottom <= window.innerHeight,
        tall: r.height >= 44,
        current: el.getAttribute('aria-current') === 'true',
      };
    }));
    const statuses = Object.fromEntries((await server.sessions()).map((s) => [s.id, s.status]));
    assert.deepEqual(listed.map((l) => l.id), ids, 'all four sessions, in order');
    for (const l of listed) {
      assert.equal(l.name, NAMES[ids.indexOf(l.id)], 'the name');
      assert.ok(l.whole, `${l.name} shows whole`);
      assert.equal(l.status, statuses[l.id], `${l.name}'s status`);
      assert.equal(l.dataStatus, statuses[l.id]);
      assert.ok(l.inside && l.tall, `${l.name} lies on screen, a thumb high: ${JSON.stringify(l)}`);
      assert.equal(l.current, l.id === active, `${l.name} marked as on screen or not`);
    }
    await screenshot(page, 'phone-switcher');

    // A tap on another session shows it and closes the list.
    const pick = ids[2];
    await sheet.locator(`${sel('switcher-item')}[data-session-id="${pick}"]`).tap();
    await sheet.waitFor({ state: 'hidden' });
    await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, pick), { message: 'the picked session on screen' });
    await waitFor(async () => (await page.locator(sel('switcher-current')).textContent()) === NAMES[2], { message: 'the switcher names it' });
    assert.equal(await button.getAttribute('aria-expanded'), 'false');

    // From the keyboard: Enter opens it on the session shown, Down moves, Enter picks, Escape closes.
    await button.focus();
    await page.keyboard.press('Enter');
    await sheet.waitFor({ state: 'visible' });
    assert.equal(await page.evaluate(() => document.activeElement?.closest('[data-testid=switcher-item]')?.dataset.sessionId), pick, 'the focus on the session shown');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('Enter');
    await sheet.waitFor({ state: 'hidden' });
    await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, ids[3]), { message: 'the next session, from the keyboard' });
    await button.focus();
    await page.keyboard.press('Enter');
    await sheet.waitFor({ state: 'visible' });
    await page.keyboard.press('Escape');
    await sheet.waitFor({ state: 'hidden' });
    assert.equal(await page.evaluate(() => window.__agentmux.activeSessionId()), ids[3], 'Escape changes nothing');

    // The panels: each takes the screen under the top bar and has a Close.
    await page.locator('#sidebar-toggle').tap();
    await page.locator('#sidebar').waitFor({ state: 'visible' });
    await assertSheet(page, '#sidebar', 'the documents panel');
    await screenshot(page, 'phone-documents');
    await page.getByRole('button', { name: 'Close the side panel' }).tap();
    await page.locator('#sidebar').waitFor({ state: 'hidden' });

    await page.locator(sel('queue-toggle')).tap();
    await page.locator(sel('queue')).waitFor({ state: 'visible' });
    await assertSheet(page, sel('queue'), 'the queue');
    await screenshot(page, 'phone-queue');
    await page.getByRole('button', { name: 'Hide the prompt queue' }).tap();
    await page.locator(sel('queue')).waitFor({ state: 'hidden' });

    await page.locator(sel('layout-changes')).tap();
    await page.locator(sel('changes')).waitFor({ state: 'visible' });
    await assertSheet(page, sel('changes'), 'the Changes view');
    await screenshot(page, 'phone-changes');
    await page.locator(sel('changes-close')).tap();
    await waitFor(async () => (await page.locator('#app').getAttribute('data-layout')) === 'terminal', { message: 'back to the terminal' });
    assert.ok(await page.locator(sel('terminal')).isVisible());

    // A session is closed from the list too.
    await button.tap();
    await sheet.locator(".switcher-row").first().waitFor();
    await page.getByRole('button', { name: `Close ${NAMES[1]}` }).tap();
    const confirm = page.locator(sel('confirm-close'));
    await confirm.waitFor({ state: 'visible' });
    await confirm.locator(sel('confirm-yes')).tap();
    await waitFor(async () => !(await server.sessions()).some((s) => s.id === ids[1]), { message: 'the session closed from the list' });
  } finally {
    await context.close();
  }
});

uiTest('phone: watching keeps the size, "Fit to this screen" takes it, a finger scrolls and selects', { timeout: 150_000 }, async ({ page, server, errors }) => {
  // The desktop page creates the session and types: the session has its size.
  const id = await createSession(page, 'wide');
  await waitForPrompt(page, id);
  await typeCommand(page, 'for i in $(seq 1 300); do echo "line-$i the quick brown fox jumps over the lazy dog"; done');
  await waitForLine(page, id, /^line-300 /);
  const desk = await termSize(page, id);
  const size = await waitFor(async () => {
    const s = await apiSize(server, id);
    return s.cols === desk.cols && s.rows === desk.rows && s;
  }, { message: `the session at the desktop page's size ${JSON.stringify(desk)}` });

  const { context, page: phone } = await phonePage(server, errors);
  await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: new URL(server.url).origin });
  const sent = [];
  const received = [];
  phone.on('websocket', (ws) => {
    ws.on('framesent', ({ payload }) => { try { sent.push(JSON.parse(String(payload))); } catch {} });
    ws.on('framereceived', ({ payload }) => { try { received.push(JSON.parse(String(payload))); } catch {} });
  });
  try {
    await phone.reload();
    await phone.waitForFunction(() => window.__agentmux && window.__agentmux.terminals.size > 0);
    await waitFor(() => phone.evaluate((id) => window.__agentmux.activeSessionId() === id, id), { message: 'the session on the phone' });
    const asked = await waitFor(() => sent.find((m) => m.type === 'terminal.resize' && m.sessionId === id), { message: 'the phone\'s terminal.resize' });
    assert.ok(asked.cols < size.cols, `the phone told its own, narrower size (${asked.cols} cols)`);
    assert.notEqual(asked.take, true, 'without taking the size');
    // A round trip after the resize: a client.hello (the phone's page going
    // to the background and back) is answered in order.
    const hellos = () => sent.filter((m) => m.type === 'client.hello').length;
    const welcomes = () => received.filter((m) => m.type === 'client.welcome').length;
    const before = hellos();
    await phone.evaluate(() => {
      Object.defineProperty(document, 'visibilityState', { configurable: true, get: () => 'hidden' });
      document.dispatchEvent(new Event('visibilitychange'));
      delete document.visibilityState;
      document.dispatchEvent(new Event('visibilitychange'));
    });
    await waitFor(() => hellos() > before && welcomes() >= hellos(), { message: 'the welcome after the resize' });
    assert.deepEqual(await apiSize(server, id), size, 'the 390 px page leaves the session\'s size unchanged');

    // Drawn at the session's size, scaled to the width down to a readable font, then sideways.
    await waitFor(async () => {
      const t = await termSize(phone, id);
      return t.cols === size.cols && t.rows === size.rows;
    }, { message: `xterm on the phone at the session's ${size.cols}x${size.rows}` });
    const fit = await phone.evaluate((id) => {
      const host = document.querySelector(`.term-host[data-session-id="${id}"]`);
      return { font: window.__agentmux.terminals.get(id).options.fontSize, scroll: host.scrollWidth, client: host.clientWidth };
    }, id);
    assert.ok(fit.font >= 8 && fit.font < 13, `scaled down, to 8 px at least (${fit.font}px)`);
    assert.ok(fit.scroll > fit.client, `past that the pane scrolls sideways (${fit.scroll} > ${fit.client})`);

    // A one-finger swipe down goes back through the scrollback, up comes back.
    const cdp = await context.newCDPSession(phone);
    const host = await boxOf(phone, `.term-host[data-session-id="${id}"]`);
    const x = Math.round((host.left + host.right) / 2);
    const view = () => phone.evaluate((id) => {
      const b = window.__agentmux.terminals.get(id).buffer.active;
      return { y: b.viewportY, base: b.baseY };
    }, id);
    const swipe = async (fromY, toY) => {
      await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [{ x, y: fromY }] });
      const steps = 12;
      for (let i = 1; i <= steps; i++) {
        await cdp.send('Input.dispatchTouchEvent', { type: 'touchMove', touchPoints: [{ x, y: Math.round(fromY + ((toY - fromY) * i) / steps) }] });
      }
      await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
    };
    const start = await view();
    assert.ok(start.base > 0 && start.y === start.base, `at the bottom of a scrollback: ${JSON.stringify(start)}`);
    await swipe(host.top + 150, host.top + 550);
    const up = await waitFor(async () => {
      const v = await view();
      return v.y < start.y - 10 && v;
    }, { message: `the scrollback moved back: ${JSON.stringify(await view())}` });
    // As far as the finger went, a row per row's height: not flung to the top.
    const rowPx = await phone.evaluate((id) => {
      const t = window.__agentmux.terminals.get(id);
      return t.element.querySelector('.xterm-screen').getBoundingClientRect().height / t.rows;
    }, id);
    const moved = start.y - up.y;
    const expected = (400 - 8) / rowPx;
    assert.ok(moved > expected * 0.7 && moved < expected * 1.3, `a 400 px swipe moved ${moved} rows, about ${Math.round(expected)}`);
    await screenshot(phone, 'phone-scrolled');
    assert.equal(await phone.evaluate(() => document.scrollingElement.scrollTop), 0, 'the page itself did not move');
    await swipe(host.top + 550, host.top + 350);
    await waitFor(async () => (await view()).y > up.y, { message: `a swipe up comes forward again: ${JSON.stringify(await view())}` });

    // A long press selects the word under the finger; Copy puts it on the clipboard.
    const target = await phone.evaluate((id) => {
      const t = window.__agentmux.terminals.get(id);
      const b = t.buffer.active;
      for (let r = 0; r < t.rows; r++) {
        const text = b.getLine(b.viewportY + r)?.translateToString(true) ?? '';
        const m = /^line-(\d+) /.exec(text);
        if (m) return { row: r, word: `line-${m[1]}` };
      }
      return null;
    }, id);
    assert.ok(target, 'a line-N row on screen');
    const cell = await phone.evaluate(({ id, row }) => {
      const t = window.__agentmux.terminals.get(id);
      const r = t.element.querySelector('.xterm-screen').getBoundingClientRect();
      const ch = r.height / t.rows;
      const cw = r.width / t.cols;
      return { x: Math.round(r.left + cw * 2.5), y: Math.round(r.top + ch * (row + 0.5)) };
    }, { id, row: target.row });
    await cdp.send('Input.dispatchTouchEvent', { type: 'touchStart', touchPoints: [cell] });
    await waitFor(() => phone.evaluate((id) => window.__agentmux.terminals.get(id).hasSelection(), id), { message: 'a selection while the finger rests' });
    await cdp.send('Input.dispatchTouchEvent', { type: 'touchEnd', touchPoints: [] });
    assert.equal(await phone.evaluate((id) => window.__agentmux.terminals.get(id).getSelection(), id), target.word, 'the word under the finger');
    const copy = phone.locator(sel('copy-selection'));
    await copy.waitFor({ state: 'visible' });
    await screenshot(phone, 'phone-selected');
    await copy.tap();
    await waitFor(async () => (await phone.evaluate(() => navigator.clipboard.readText())) === target.word, { message: 'the word on the clipboard' });
    assert.deepEqual(await apiSize(server, id), size, 'scrolling and selecting resize nothing');

    // "Fit to this screen" resizes on purpose, to the phone's own size.
    const fitBtn = phone.getByRole('button', { name: 'Fit to this screen', exact: true });
    assert.ok(await fitBtn.isVisible(), '"Fit to this screen" is offered');
    await fitBtn.tap();
    const fitted = await waitFor(async () => {
      const s = await apiSize(server, id);
      const t = await termSize(phone, id);
      return s.cols < size.cols && s.cols === t.cols && s.rows === t.rows && s;
    }, { message: 'the session at the phone\'s size' });
    assert.ok(sent.some((m) => m.type === 'terminal.resize' && m.sessionId === id && m.take === true), 'a terminal.resize with take');
    assert.equal(await phone.evaluate((id) => window.__agentmux.terminals.get(id).options.fontSize, id), 13, 'drawn at its own font size');
    const after = await phone.evaluate((id) => {
      const host = document.querySelector(`.term-host[data-session-id="${id}"]`);
      return { scroll: host.scrollWidth, client: host.clientWidth };
    }, id);
    assert.ok(after.scroll <= after.client + 1, `nothing to scroll sideways once fitted: ${JSON.stringify(after)} at ${JSON.stringify(fitted)}`);
    assert.equal(await fitBtn.isVisible(), false, 'no "Fit" while the phone has the size');
    await screenshot(phone, 'phone-fitted');

    // Who is here: the header's avatars open the list, a row each, the phone's marked as you.
    await phone.locator(sel('session-people')).tap();
    const people = phone.locator(sel('people-sheet'));
    await people.waitFor({ state: 'visible' });
    await waitFor(async () => (await people.locator(sel('people-row')).count()) === 2, { message: 'the desktop page and the phone in the list' });
    const rows = await people.locator(sel('people-row')).allTextContents();
    assert.equal(rows.filter((r) => r.includes('(you)')).length, 1, `one of them is you: ${JSON.stringify(rows)}`);
    assert.ok(rows.some((r) => /typing now|typed/.test(r)), `and what they did: ${JSON.stringify(rows)}`);
    await screenshot(phone, 'phone-people');
    await people.locator(sel('people-close')).tap();
    await people.waitFor({ state: 'hidden' });
  } finally {
    await context.close();
  }
});

/** Each tab's name: how much of it shows, against its length. */
const tabNames = (page) => page.evaluate(() => [...document.querySelectorAll('[data-testid=tab]')].map((t) => {
  const name = t.querySelector('[data-testid=tab-name]');
  const text = name.textContent;
  const perChar = name.scrollWidth / text.length;
  return { text, shown: Math.floor(name.clientWidth / perChar), whole: name.scrollWidth <= name.clientWidth };
}));

uiTest('1024 px: four tabs keep their names readable; an overflowing strip shows it scrolls', {
  viewport: { width: 1024, height: 768 },
  flags: ['--max-sessions', '8'],
  timeout: 120_000,
}, async ({ page, server }) => {
  for (const name of NAMES) await server.createSession({ name });
  await waitFor(async () => (await page.locator(sel('tab')).count()) === 4, { message: 'four tabs' });
  const names = await waitFor(async () => {
    const n = await tabNames(page);
    return n.length === 4 && n.every((t) => t.shown >= Math.min(t.text.length, 10)) && n;
  }, { message: `four names with ten characters or all of theirs showing: ${JSON.stringify(await tabNames(page))}` });
  assert.ok(names.filter((t) => t.whole).length >= 3, `most names whole: ${JSON.stringify(names)}`);
  assert.equal(await page.locator(sel('tabs-scroll-right')).isVisible(), false, 'no scroll button while the tabs fit');
  await screenshot(page, 'tabs-1024-four');

  // Four more: the strip overflows, and says so with a button at the hidden end.
  for (let i = 5; i <= 8; i++) await server.createSession({ name: `more-session-${i}` });
  await waitFor(async () => (await page.locator(sel('tab')).count()) === 8, { message: 'eight tabs' });
  await page.locator(sel('tab')).first().click();
  const right = page.locator(sel('tabs-scroll-right'));
  const left = page.locator(sel('tabs-scroll-left'));
  await right.waitFor({ state: 'visible' });
  assert.equal(await left.isVisible(), false, 'nothing hidden to the left yet');
  for (const t of await tabNames(page)) assert.ok(t.shown >= Math.min(t.text.length, 8), `a scrolled tab keeps its name readable: ${JSON.stringify(t)}`);
  await screenshot(page, 'tabs-1024-overflow');
  const scrollLeft = () => page.locator(sel('tabs')).evaluate((el) => el.scrollLeft);
  await right.click();
  await waitFor(async () => (await scrollLeft()) > 50, { message: 'the strip scrolled right' });
  await left.waitFor({ state: 'visible' });
  await left.click();
  await waitFor(async () => (await scrollLeft()) === 0, { message: 'and back' });
});
