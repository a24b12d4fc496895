// A small local stand-in for the OpenAI Responses API, enough for the real
// Codex CLI to answer a prompt. Codex is pointed at it with a model provider
// of its own in a throwaway CODEX_HOME (see codexConfig). It runs in the
// test's own process.
//
//   const api = await startFakeOpenAI({ reply: 'Hello' });
//   CODEX_HOME/config.toml: codexConfig(api.url, { trusted: [dir] })
//   env: { [FAKE_OPENAI_KEY_ENV]: FAKE_OPENAI_KEY }
//   api.requests   every request seen: { method, path, model, stream, prompt,
//                  endedAt (Date.now() when its answer was sent) }, and for
//                  .../responses also status (200 or 429), usage (the usage
//                  the answer reported) and limited (true for a usage-limit
//                  429)
//   api.limitReached(resetsAt)  from now on .../responses answers 429
//                  usage_limit_reached, resetting at resetsAt (unix seconds)
//   api.limitLifted()           back to answering
//   api.setLimits(limits)       change the windows reported (see limits)
//   await api.close()
//
// Routes (under any prefix, so /v1/responses and /responses alike):
//   POST .../responses   an assistant message with one output_text part, the
//                        reply, streamed as server-sent events: created,
//                        output_item.added, output_text.delta,
//                        output_item.done, completed (the events Codex reads);
//                        or, when the reply is { functionCall: { name,
//                        namespace?, arguments } }, one function_call item
//                        (Codex runs the tool and sends its output in the
//                        next request's input, as a function_call_output)
//   GET  .../models      an empty model list
//   anything else        404 with an OpenAI-shaped error body

import http from 'node:http';
import { lastUserIn } from './fake-anthropic.mjs';

/** The environment variable the provider reads its key from, and the key. */
export const FAKE_OPENAI_KEY_ENV = 'AGENTMUX_FAKE_OPENAI_KEY';
export const FAKE_OPENAI_KEY = 'sk-agentmux-test-fakekey0123456789';

/** The text of the last user message of a Responses request ('' if none). */
export function lastUserText(body) {
  const input = typeof body?.input === 'string' ? [{ role: 'user', content: body.input }] : Array.isArray(body?.input) ? body.input : [];
  return lastUserIn(input, 'input_text');
}

/** Codex's config.toml for a throwaway CODEX_HOME: the stand-in as its only provider, nothing else phoned. */
export function codexConfig(url, { trusted = [] } = {}) {
  const q = JSON.stringify; // a JSON string is a TOML basic string
  const lines = [
    'model = "gpt-5-codex"',
    'model_provider = "agentmux-fake"',
    'check_for_update_on_startup = false',
    '[analytics]',
    'enabled = false',
    '[model_providers.agentmux-fake]',
    'name = "agentmux stand-in"',
    `base_url = ${q(url + '/v1')}`,
    `env_key = ${q(FAKE_OPENAI_KEY_ENV)}`,
    'wire_api = "responses"',
    'request_max_retries = 0',
    'stream_max_retries = 0',
  ];
  for (const dir of trusted) lines.push(`[projects.${q(dir)}]`, 'trust_level = "trusted"');
  return lines.join('\n') + '\n';
}

function json(res, status, obj, headers = {}) {
  res.writeHead(status, { ...headers, 'content-type': 'application/json' });
  res.end(JSON.stringify(obj));
}

/** The usage of a Responses answer from the flat numbers a test gives. */
function responsesUsage({ input_tokens = 42, cached_tokens = 0, output_tokens = 12, reasoning_tokens = 0 } = {}) {
  return {
    input_tokens,
    input_tokens_details: { cached_tokens },
    output_tokens,
    output_tokens_details: { reasoning_tokens },
    total_tokens: input_tokens + output_tokens,
  };
}

/** Codex's rate-limit headers for limits ({ primary, secondary }, see startFakeOpenAI). */
function limitHeaders(limits) {
  const h = {};
  for (const name of ['primary', 'secondary']) {
    const w = limits?.[name];
    if (!w) continue;
    h[`x-codex-${name}-used-percent`] = String(w.usedPercent);
    if (w.windowMinutes != null) h[`x-codex-${name}-window-minutes`] = String(w.windowMinutes);
    if (w.resetAt != null) h[`x-codex-${name}-reset-at`] = String(w.resetAt);
  }
  return h;
}

/**
 * Starts the stand-in on 127.0.0.1 (a free port unless `port` is given).
 *   reply   the assistant's text, or a function (body) => text; either may
 *           instead be { functionCall: { name, namespace, arguments } }
 *           (arguments an object; namespace, when given, the tool's
 *           namespace, as Codex groups an MCP server's tools): the
 *           assistant then calls that function
 *   usage   what each answer says it used: { input_tokens, cached_tokens,
 *           output_tokens, reasoning_tokens } (defaults 42, 0, 12, 0), or
 *           a function (n, body) => that for the n-th answer (1-based)
 *   limits  the account's windows, sent as headers on every answer:
 *           { primary: { usedPercent, windowMinutes, resetAt }, secondary:
 *           { ... } }, either optional; resetAt unix seconds (Codex's
 *           primary is its 5-hour window, 300 minutes, secondary its
 *           weekly one, 10080)
 *   log     called with each request record, e.g. for debugging
 */
export async function startFakeOpenAI({ reply = 'Hello from the stand-in.', port = 0, log, usage: usageOpt, limits = null } = {}) {
  const requests = [];
  let counter = 0;
  let limitedUntil = null; // unix seconds while limitReached

  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString('utf8');
    let body = null;
    try {
      body = raw ? JSON.parse(raw) : null;
    } catch {
      /* not JSON: kept as null */
    }
    const path = new URL(req.url, 'http://x').pathname;
    const record = { method: req.method, path, model: body?.model, stream: body?.stream === true, prompt: lastUserText(body) };
    requests.push(record);
    log?.(record);

    if (req.method === 'POST' && path.endsWith('/responses') && limitedUntil !== null) {
      // The ChatGPT backend's answer to an account over its limit; Codex
      // reads error.type, plan_type and resets_at, and does not retry it.
      Object.assign(record, { status: 429, limited: true });
      const resetsIn = Math.max(0, limitedUntil - Math.floor(Date.now() / 1000));
      const error = { type: 'usage_limit_reached', message: 'The usage limit has been reached', plan_type: 'plus', resets_at: limitedUntil, resets_in_seconds: resetsIn };
      // Its headers show the window that ran out full until the reset.
      const full = { ...limits, primary: { windowMinutes: 300, ...limits?.primary, usedPercent: 100, resetAt: limitedUntil } };
      json(res, 429, { error }, { ...limitHeaders(full), 'x-codex-rate-limit-reached-type': 'rate_limit_reached' });
      record.endedAt = Date.now();
      return;
    }
    if (req.method === 'POST' && path.endsWith('/responses')) {
      const usage = responsesUsage(typeof usageOpt === 'function' ? usageOpt(counter + 1, body) : usageOpt);
      Object.assign(record, { status: 200, usage });
      const answer = typeof reply === 'function' ? reply(body) : reply;
      const id = `resp_fake_${++counter}`;
      const msgId = `msg_fake_${counter}`;
      const fn = typeof answer === 'object' && answer?.functionCall;
      let output;
      if (fn) {
        const item = {
          type: 'function_call', id: `fc_fake_${counter}`, call_id: `call_fake_${counter}`, status: 'completed',
          name: fn.name, ...(fn.namespace ? { namespace: fn.namespace } : {}), arguments: JSON.stringify(fn.arguments ?? {}),
        };
        output = [
          { type: 'response.output_item.added', output_index: 0, item: { ...item, arguments: '' } },
          { type: 'response.output_item.done', output_index: 0, item },
        ];
      } else {
        const message = (content) => ({ type: 'message', id: msgId, role: 'assistant', status: 'completed', content });
        output = [
          { type: 'response.output_item.added', output_index: 0, item: message([]) },
          { type: 'response.output_text.delta', output_index: 0, content_index: 0, item_id: msgId, delta: answer },
          { type: 'response.output_item.done', output_index: 0, item: message([{ type: 'output_text', text: answer, annotations: [] }]) },
        ];
      }
      const events = [
        { type: 'response.created', response: { id, status: 'in_progress' } },
        ...output,
        {
          type: 'response.completed',
          response: { id, status: 'completed', usage },
        },
      ];
      res.writeHead(200, { ...limitHeaders(limits), 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      for (const e of events) res.write(`event: ${e.type}\ndata: ${JSON.stringify(e)}\n\n`);
      res.end(() => (record.endedAt = Date.now()));
      return;
    }
    if (req.method === 'GET' && path.endsWith('/models')) return json(res, 200, { object: 'list', data: [], models: [] });
    json(res, 404, { error: { type: 'invalid_request_error', code: 'not_found', message: `the stand-in has no ${req.method} ${path}` } });
  });

  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    requests,
    limitReached: (resetsAt) => void (limitedUntil = resetsAt),
    limitLifted: () => void (limitedUntil = null),
    setLimits: (l) => void (limits = l),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
