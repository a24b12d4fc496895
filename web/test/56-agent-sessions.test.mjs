// Issue 42: an agent running in one session (the planner) drives others
// through agentmux's MCP tools, and the people watching see it. The test
// is the planner's agent: its session writes the MCP address and secret
// it was given to a file, and the test calls the real endpoint with them.
// A session it started is marked, on its tab and in the phone's switcher,
// with whose agent started it; its queued prompts show an agent as their
// author; every call, done or refused, is a line of the activity feed
// that leads to the session it was about.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import { uiTest, sel, tabById, tempDir, waitFor, browser, openApp, screenshot as shoot, readableTabNames } from './harness.mjs';

const PHONE = { viewport: { width: 390, height: 844 }, deviceScaleFactor: 3, isMobile: true, hasTouch: true };

/**
 * An MCP client as an agent on this machine is one: JSON-RPC over HTTP
 * POST with the session's secret. Node's http, not fetch: fetch (undici)
 * sends Sec-Fetch-Mode, and the endpoint refuses what looks like a
 * browser's request.
 */
class McpClient {
  constructor(url, secret) {
    Object.assign(this, { url, secret, id: 0 });
  }

  post(method, params) {
    const body = JSON.stringify({ jsonrpc: '2.0', id: ++this.id, method, params });
    return new Promise((resolve, reject) => {
      const req = http.request(this.url, {
        method: 'POST',
        headers: {
          Authorization: `Bearer ${this.secret}`,
          'Content-Type': 'application/json',
          Accept: 'application/json, text/event-stream',
        },
        timeout: 15_000,
      }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c) => { text += c; });
        res.on('end', () => {
          assert.equal(res.statusCode, 200, `MCP ${method}: ${res.statusCode} ${text}`);
          // The server answers with JSON; an answer as a stream carries it as the last data line.
          const json = /event-stream/.test(res.headers['content-type'] ?? '')
            ? text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5)).at(-1)
            : text;
          resolve(JSON.parse(json));
        });
      });
      req.on('timeout', () => req.destroy(new Error(`MCP ${method}: no answer within 15 s`)));
      req.on('error', reject);
      req.end(body);
    });
  }

  async initialize() {
    const r = await this.post('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'agentmux-uitest', version: '1' } });
    assert.ok(r.result?.serverInfo, `initialize: ${JSON.stringify(r)}`);
  }

  /** tools/call: the result, whose isError says a refusal (or a JSON-RPC error's message as one). */
  async call(name, args) {
    const r = await this.post('tools/call', { name, arguments: args });
    if (r.error) return { isError: true, content: [{ type: 'text', text: r.error.message }] };
    return r.result;
  }
}

const agentLines = (page) => page.locator(`${sel('activity-item')}[data-event="agent"]`);

/** The agent.call the page received for a call of tool (about target, when given), once it has come. */
function agentCallFrame(frames, tool, target) {
  return waitFor(() => frames.find((f) => f.type === 'agent.call' && f.tool === tool && (!target || f.targetId === target)), {
    message: `agent.call for ${tool} (the server broadcasts one after each tool call)`,
  });
}

uiTest('an agent starts a session, queues it a prompt and is refused a stop: the tab, the queue and the feed say so', {
  // Room for the crowded strip's sessions besides the three.
  flags: ['--max-sessions', '8'],
  timeout: 120_000,
}, async ({ page, server, frames, screenshot }) => {
  // A session a person started: not the planner's to stop.
  const other = await server.createSession({ name: 'other', command: ['sh', '-c', 'exec cat'] });
  const envFile = path.join(await tempDir('mcp'), 'planner-env');
  const planner = await server.createSession({
    name: 'planner',
    command: ['sh', '-c', 'printf "%s\\n%s\\n" "$AGENTMUX_MCP_URL" "$AGENTMUX_MCP_SECRET" > "$0"; exec cat', envFile],
  });
  const [url, secret] = await waitFor(async () => {
    const lines = (await fs.readFile(envFile, 'utf8').catch(() => '')).split('\n');
    return lines[0] && lines[1] && lines;
  }, { message: "the planner's MCP address and secret in its environment" });
  assert.match(url, /^http:\/\/127\.0\.0\.1:\d+\/mcp$/, 'a loopback address');
  const mcp = new McpClient(url, secret);
  await mcp.initialize();

  const started = await mcp.call('start_session', { agent: 'shell', name: 'tests-helper', prompt: 'echo hi' });
  assert.ok(!started.isError, `start_session: ${JSON.stringify(started)}`);
  const helperId = started.structuredContent?.sessionId;
  assert.ok(helperId, `start_session gives the new session's id: ${JSON.stringify(started)}`);
  assert.equal((await server.sessions()).find((s) => s.id === helperId)?.startedBy, planner.id, "the Session JSON's startedBy");
  const queued = await mcp.call('send_prompt', { sessionId: helperId, text: 'Then run the tests and say how many pass.' });
  assert.ok(!queued.isError, `send_prompt: ${JSON.stringify(queued)}`);
  const refused = await mcp.call('stop_session', { sessionId: other.id });
  assert.equal(refused.isError, true, `stop_session of a session the planner did not start is refused: ${JSON.stringify(refused)}`);
  const listed = await mcp.call('list_sessions', {});
  assert.ok(!listed.isError, `list_sessions: ${JSON.stringify(listed)}`);

  // The tab of the started session: the mark, naming the planner, and the name whole beside it.
  const helperTab = tabById(page, helperId);
  const mark = helperTab.locator(sel('tab-started-by'));
  await mark.waitFor({ state: 'visible' });
  assert.equal(await mark.getAttribute('data-started-by'), planner.id);
  assert.equal(await mark.getAttribute('title'), "Started by planner's agent");
  assert.equal(await mark.getAttribute('aria-label'), "Started by planner's agent");
  assert.match(await helperTab.getAttribute('title'), /^tests-helper · \w+.*\nStarted by planner's agent\n/, "the tab's tooltip has it too");
  const geometry = await helperTab.evaluate((tab) => {
    const m = tab.querySelector('[data-testid=tab-started-by]').getBoundingClientRect();
    const n = tab.querySelector('[data-testid=tab-name]');
    const t = tab.getBoundingClientRect();
    return { markRight: m.right, nameLeft: n.getBoundingClientRect().left, tabLeft: t.left, nameWhole: n.scrollWidth <= n.clientWidth };
  });
  assert.ok(geometry.markRight <= geometry.nameLeft && geometry.tabLeft < geometry.markRight, `the mark lies in the tab, before the name: ${JSON.stringify(geometry)}`);
  assert.ok(geometry.nameWhole, 'the name keeps its room');
  for (const id of [planner.id, other.id]) {
    assert.equal(await tabById(page, id).locator(sel('tab-started-by')).isVisible(), false, 'no mark on a session a person started');
  }

  // The feed: a line per call, newest first, in the server's words.
  const calls = [
    await agentCallFrame(frames, 'list_sessions'),
    await agentCallFrame(frames, 'stop_session', other.id),
    await agentCallFrame(frames, 'send_prompt', helperId),
    await agentCallFrame(frames, 'start_session', helperId),
  ];
  for (const c of calls) {
    assert.equal(c.sessionId, planner.id, `${c.tool}: the caller is the planner`);
    assert.match(c.text, /planner/, `${c.tool}: the text names the caller: ${c.text}`);
  }
  assert.ok(calls[1].error, `the refused call says why: ${JSON.stringify(calls[1])}`);
  assert.ok(!calls[0].error && !calls[2].error && !calls[3].error, 'the others were done');
  await waitFor(async () => (await agentLines(page).count()) === 4, { message: 'four agent lines in the feed' });
  const shown = await agentLines(page).evaluateAll((els) => els.map((el) => ({
    tool: el.dataset.tool,
    caller: el.dataset.sessionId,
    target: el.dataset.targetId ?? null,
    refused: el.dataset.refused === 'true',
    text: el.querySelector('[data-testid=activity-agent-text]').textContent,
    error: el.querySelector('[data-testid=activity-agent-error]')?.textContent ?? null,
    errorColor: (() => {
      const e = el.querySelector('[data-testid=activity-agent-error]');
      return e ? getComputedStyle(e).color : null;
    })(),
    age: el.querySelector('time.ago')?.textContent ?? '',
  })));
  assert.deepEqual(shown.map((l) => [l.tool, l.caller, l.target, l.text, l.refused]), calls.map((c) => [c.tool, c.sessionId, c.targetId ?? null, c.text, !!c.error]),
    `the calls, newest first: ${JSON.stringify(shown)}`);
  assert.equal(shown[1].error, calls[1].error, "the refused call's reason under it");
  assert.equal(shown[1].errorColor, 'rgb(242, 112, 106)', 'in red');
  assert.ok(shown.every((l, i) => i === 1 || l.error === null), 'no reason under a call that was done');
  assert.ok(shown.every((l) => l.age !== ''), 'each line has its age');

  // The queue of the started session: the prompt sent to it, by the
  // planner's agent. (start_session's own prompt goes in as the agent's
  // first input, not through the queue.) A shell never waits for a prompt
  // as an agent does (protocol.md, prompt.queue): it stays queued.
  await helperTab.click();
  if (!(await page.locator(sel('queue')).isVisible())) await page.locator(sel('queue-toggle')).click();
  await page.locator(sel('queue')).waitFor({ state: 'visible' });
  const items = page.locator(`${sel('queue')} ${sel('queue-item')}`);
  await waitFor(async () => (await items.count()) === 1, { message: "the helper's queued prompt" });
  const prompts = await items.evaluateAll((els) => els.map((el) => ({
    author: el.querySelector('[data-testid=queue-author]').textContent,
    authorId: el.dataset.authorId,
    byAgent: el.dataset.byAgent,
    mine: el.dataset.mine,
    text: el.querySelector('[data-testid=queue-text]').textContent,
    // A robot's head, where a person's initials would read "AP".
    avatar: { agent: !!el.querySelector('.queue-who .avatar-agent svg'), letters: el.querySelector('.queue-who .avatar')?.textContent ?? '' },
  })));
  assert.deepEqual(prompts, [
    { author: 'agent planner', authorId: `agent:${planner.id}`, byAgent: 'true', mine: 'false', text: 'Then run the tests and say how many pass.', avatar: { agent: true, letters: '' } },
  ]);
  assert.ok(!frames.some((f) => f.type === 'prompt.delivered' && f.sessionId === helperId), 'nothing was delivered meanwhile');
  await screenshot('agent-sessions-desktop');

  // A click on a line shows the session the call was about, or the caller for a call about none.
  const line = (tool) => page.locator(`${sel('activity-item')}[data-event="agent"][data-tool="${tool}"]`);
  await line('stop_session').click();
  await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, other.id), { message: 'the refused stop shows its target' });
  await line('list_sessions').click();
  await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, planner.id), { message: 'a call about no session shows its caller' });

  // A crowded strip at 900 px: the tabs at their narrowest, the mark
  // beside the name still leaves it the room 48-layout asks of every tab.
  await page.setViewportSize({ width: 900, height: 700 });
  for (const name of ['release-notes', 'payments-webhook', 'search-indexer', 'login-form']) {
    await server.createSession({ name, command: ['sh', '-c', 'exec cat'] });
  }
  await waitFor(async () => (await page.locator(sel('tab')).count()) === 7, { message: 'seven tabs' });
  await helperTab.click();
  const crowded = await waitFor(() => helperTab.evaluate((tab) => {
    const t = tab.getBoundingClientRect();
    const strip = document.querySelector('[data-testid=tabs]').getBoundingClientRect();
    const m = tab.querySelector('[data-testid=tab-started-by]').getBoundingClientRect();
    const n = tab.querySelector('[data-testid=tab-name]').getBoundingClientRect();
    const close = tab.querySelector('[data-testid=tab-close]').getBoundingClientRect();
    return {
      width: Math.round(t.width),
      scrolls: document.querySelector('[data-testid=tabs]').scrollWidth > strip.width + 1,
      inView: t.left >= strip.left - 0.5 && t.right <= strip.right + 0.5,
      markBeforeName: t.left < m.left && m.right <= n.left,
      closeWhole: close.left >= n.right && close.right <= t.right + 0.5,
    };
  }).then((g) => g.inView && g), { message: 'the selected tab scrolled into view' });
  // Characters whole before the ellipsis (as 48-layout counts them).
  crowded.shown = (await readableTabNames(page)).find((x) => x.id === helperId)?.shown;
  assert.ok(crowded.scrolls && crowded.width <= 160, `the tabs at their narrowest, the strip scrolling: ${JSON.stringify(crowded)}`);
  assert.ok(crowded.markBeforeName && crowded.closeWhole, `the mark, the name and the close button in the tab: ${JSON.stringify(crowded)}`);
  assert.ok(crowded.shown >= 8, `eight characters of the name readable beside the mark: ${JSON.stringify(crowded)}`);
  await screenshot('agent-sessions-crowded');
  await page.setViewportSize({ width: 1280, height: 800 });

  // On a phone the switcher says who started the session; a call made
  // while it watches is a line of its feed, and a tap on it shows the session.
  const context = await (await browser()).newContext(PHONE);
  try {
    const phone = await context.newPage();
    phone.setDefaultTimeout(10_000);
    await openApp(phone, server.url);
    await phone.getByRole('button', { name: 'Sessions', exact: true }).tap();
    const sheet = phone.locator(sel('switcher-sheet'));
    await sheet.waitFor({ state: 'visible' });
    const rows = await sheet.locator(sel('switcher-item')).evaluateAll((els) => els.map((el) => {
      const by = el.querySelector('[data-testid=switcher-started-by]');
      const r = by?.getBoundingClientRect();
      return {
        id: el.dataset.sessionId,
        by: by ? { text: by.textContent, starter: by.dataset.startedBy, title: by.title, inside: r.left >= 0 && r.right <= innerWidth } : null,
      };
    }));
    assert.deepEqual(rows.filter((r) => r.by), [
      { id: helperId, by: { text: 'started by planner', starter: planner.id, title: "Started by planner's agent", inside: true } },
    ], 'only the session the agent started says so');
    assert.equal(rows.length, 7, 'every session listed');
    await shoot(phone, 'agent-sessions-phone-switcher');
    await phone.locator(sel('switcher-close')).tap();
    await sheet.waitFor({ state: 'hidden' });

    await phone.locator('#sidebar-toggle').tap();
    await phone.locator('#sidebar').waitFor({ state: 'visible' });
    assert.ok(!(await mcp.call('send_prompt', { sessionId: helperId, text: 'And then the linter.' })).isError);
    const phoneLine = agentLines(phone).first();
    await phoneLine.waitFor({ state: 'visible' });
    assert.equal(await agentLines(phone).count(), 1, 'a page that connects later gets no calls made before (agent.call is not replayed)');
    assert.equal(await phoneLine.getAttribute('data-target-id'), helperId);
    await shoot(phone, 'agent-sessions-phone-feed');
    await phoneLine.tap();
    await phone.locator('#sidebar').waitFor({ state: 'hidden' });
    await waitFor(() => phone.evaluate((id) => window.__agentmux.activeSessionId() === id, helperId), { message: 'the tapped line shows its session on the phone' });
  } finally {
    await context.close();
  }

  // The starter deleted: its name is gone with it, the mark stays.
  const del = await server.api(`api/sessions/${planner.id}`, { method: 'DELETE' });
  assert.equal(del.status, 204, `DELETE the planner: ${del.status} ${JSON.stringify(del.body)}`);
  await tabById(page, planner.id).waitFor({ state: 'detached' });
  await waitFor(async () => (await mark.getAttribute('title')) === 'Started by an agent in a deleted session', {
    message: `the mark says the starter is gone: ${await mark.getAttribute('title')}`,
  });
  // Its lines stay, as the calls happened; one that leads to it leads nowhere now.
  await line('list_sessions').click();
  await waitFor(async () => (await line('list_sessions').getAttribute('data-gone')) === 'true', { message: 'the line to a deleted session marked' });
  assert.notEqual(await page.evaluate(() => window.__agentmux.activeSessionId()), planner.id);
  await screenshot('agent-sessions-deleted-starter');
});
