// Issue 42 with the real Codex CLI against the stand-in Responses API
// (fake-openai.mjs): a `codex` session starts with agentmux's MCP server
// registered for its run alone (the -c overrides on its command line; its
// CODEX_HOME says nothing of it), connects to it at start-up, and offers
// the model its tools; the stand-in then calls list_sessions, which Codex
// runs without asking (agentmux marks it read-only), and the output Codex
// sends back lists the session itself.
//
// What Codex 0.171.0 sends (seen in the stand-in's requests): an MCP
// server's tools are one entry of the request's tools, a namespace
//   { type: 'namespace', name: 'mcp__agentmux', tools: [{ type: 'function',
//     name: 'list_sessions', ... }, ...] }
// beside Codex's own functions (exec_command, ...); the model calls one
// with a function_call item naming it and its namespace ({ name:
// 'list_sessions', namespace: 'mcp__agentmux' }), which Codex shows as
// "Calling agentmux.list_sessions". Codex asks its user before it runs a
// tool without a read-only hint ("Allow the agentmux MCP server to run
// tool ...?"), and hands the model the tool's structuredContent as JSON,
// after a "Wall time" line.
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { sel, tabById, waitFor, waitForLine, terminalLines, terminalPane, showLines } from './harness.mjs';
import { codexUiTest } from './codex-cli.mjs';

const NAME = "the real Codex CLI: agentmux's MCP tools are offered to the model, and a call to list_sessions, read-only and so not asked about, lists the session";

const SESSION = 'codex-mcp';
const PROMPT = 'Which sessions does agentmux run';
const NAMESPACE = 'mcp__agentmux';
const TOOLS = ['get_diff', 'list_sessions', 'read_screen', 'send_prompt', 'start_session', 'stop_session', 'wait_for'];
const REPORT = 'agentmux runs one session: this one.';


/** The items of a Responses request's input of this type. */
const items = (body, type) => (Array.isArray(body?.input) ? body.input : []).filter((i) => i?.type === type);

/** The requests of the turn that asked PROMPT, as the stand-in got them. */
const turn = [];

/**
 * The model: asked PROMPT, it calls list_sessions; given the call's
 * output, it answers. Anything else (none seen in 0.171.0, but a title,
 * say) gets plain text.
 */
function model(body) {
  if (!JSON.stringify(body?.input ?? '').includes(PROMPT)) return 'A title';
  turn.push(body);
  const output = items(body, 'function_call_output').at(-1);
  if (!output) return { functionCall: { name: 'list_sessions', namespace: NAMESPACE, arguments: {} } };
  return String(output.output).includes(`"name":"${SESSION}"`) ? REPORT : `list_sessions gave: ${output.output}`;
}

await codexUiTest(
  NAME,
  { reply: model },
  async ({ t, page, server, frames, screenshot, onCleanup, api, codexHome }) => {
    let id;
    onCleanup(async () => {
      t.diagnostic(`the stand-in saw: ${JSON.stringify(api.requests.map((r) => `${r.method} ${r.path} ${JSON.stringify(r.prompt.slice(0, 60))}`))}`);
      if (id) t.diagnostic(`Codex's screen:\n${showLines((await terminalLines(page, id).catch(() => null)) ?? [])}`);
    });

    const s = await server.createSession({ name: SESSION, agent: 'codex' });
    id = s.id;
    const overrides = s.command.filter((a, i) => s.command[i - 1] === '-c' && a.startsWith('mcp_servers.'));
    assert.equal(overrides.length, 3, `the start command registers agentmux: ${JSON.stringify(s.command)}`);
    assert.match(overrides[0], /^mcp_servers\.agentmux\.url="http:\/\/127\.0\.0\.1:\d+\/mcp"$/);
    assert.deepEqual(overrides.slice(1), ['mcp_servers.agentmux.bearer_token_env_var="AGENTMUX_MCP_SECRET"', 'mcp_servers.agentmux.tool_timeout_sec=660']);
    assert.ok(!(await fs.readFile(path.join(codexHome, 'config.toml'), 'utf8')).includes('mcp_servers'), "Codex's own configuration is left as it was");

    await tabById(page, id).click();
    await waitFor(() => page.evaluate((i) => !!window.__agentmux.terminals.get(i), id), { message: `a terminal for ${id}` });
    await waitFor(async () => ((await terminalLines(page, id)) ?? []).some((l) => /^\s*›/.test(l)), {
      timeout: 60_000, message: `Codex's composer ("›") in ${id}`,
    });
    await terminalPane(page).click();
    await page.keyboard.type(PROMPT);
    await waitForLine(page, id, (l) => l.includes(PROMPT), { message: `"${PROMPT}" in Codex's composer` });
    await page.keyboard.press('Enter');

    // The turn's first request offers agentmux's tools, all of them, as one namespace.
    const first = await waitFor(() => turn[0], { timeout: 60_000, message: 'the model asked with the prompt' });
    const namespaces = first.tools.filter((x) => x.type === 'namespace').map((x) => x.name);
    const ours = first.tools.find((x) => x.type === 'namespace' && x.name === NAMESPACE);
    assert.ok(ours, `agentmux's tools in the request, as the namespace ${NAMESPACE}; the namespaces: ${JSON.stringify(namespaces)}`);
    assert.deepEqual(ours.tools.map((x) => x.name).sort(), TOOLS, `the namespace's tools: ${JSON.stringify(ours.tools.map((x) => x.name))}`);
    assert.ok(ours.tools.every((x) => x.type === 'function' && x.description), 'each a function with its description');
    const startSession = ours.tools.find((x) => x.name === 'start_session');
    assert.deepEqual(Object.keys(startSession.parameters.properties).sort(), ['agent', 'base', 'branch', 'name', 'prompt'], 'with its input schema');
    t.diagnostic(`the request's tools: ${JSON.stringify(first.tools.map((x) => (x.type === 'namespace' ? `${x.name}: [${x.tools.map((f) => f.name).join(', ')}]` : x.name ?? x.type)))}`);

    // The tool is marked read-only, so Codex runs it without asking: its
    // output goes back to the model with no key pressed, and lists this
    // session as the caller.
    const ro = ours.tools.find((x) => x.name === 'list_sessions');
    const called = await waitFor(() => turn.find((b) => items(b, 'function_call_output').length), { timeout: 30_000, message: "list_sessions' output sent to the model" });
    const asked = ((await terminalLines(page, id)) ?? []).filter((l) => l.includes('Allow the agentmux MCP server'));
    assert.deepEqual(asked, [], `Codex asked about a read-only tool (${JSON.stringify(ro)})`);
    const call = items(called, 'function_call').at(-1);
    assert.deepEqual([call.name, call.namespace], ['list_sessions', NAMESPACE]);
    const output = String(items(called, 'function_call_output').at(-1).output);
    const json = output.slice(output.indexOf('{'));
    const listed = JSON.parse(json).sessions;
    assert.deepEqual(listed.map((x) => [x.id, x.name, x.agent, x.you]), [[id, SESSION, 'codex', true]], `the output lists the session, marked as the caller: ${output}`);
    await waitForLine(page, id, (l) => l.includes(REPORT), { timeout: 30_000, message: "the model's answer on Codex's screen" });

    // The feed has a line for the call.
    const line = page.locator(`${sel('activity-item')}[data-event="agent"][data-tool="list_sessions"]`);
    await line.waitFor({ state: 'visible' });
    assert.equal(await line.locator(sel('activity-agent-text')).textContent(), `${SESSION} listed the sessions`);
    const frame = frames.find((f) => f.type === 'agent.call' && f.tool === 'list_sessions');
    assert.equal(frame?.sessionId, id, `agent.call names Codex's session as the caller: ${JSON.stringify(frame)}`);
    await screenshot('codex-mcp-2-listed');
  },
);
