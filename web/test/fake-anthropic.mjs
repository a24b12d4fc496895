// A small local stand-in for the Anthropic Messages API, enough for the real
// Claude Code CLI (pointed at it with ANTHROPIC_BASE_URL) to start, answer a
// prompt and save its conversation. It runs in the test's own process.
//
//   const api = await startFakeAnthropic({ reply: 'Hello' });
//   env: { ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: FAKE_API_KEY }
//   api.requests   every request seen: { method, path, model, stream, prompt,
//                  userText } (prompt: the first 200 characters of userText,
//                  the last user message's text)
//   await api.close()
//
// Routes:
//   POST /v1/messages               an assistant message with one text block,
//                                   the reply, or one tool_use block when the
//                                   reply is { toolUse: { name, input } };
//                                   streamed as server-sent events when the
//                                   body has stream: true, else JSON
//   POST /v1/messages/count_tokens  { input_tokens: 42 }
//   GET  /v1/models                 a short model list
//   HEAD or GET /                   200 (Claude probes whether the API is up)
//   anything else                   404 with an Anthropic-shaped error body

import http from 'node:http';

/** A key of the shape Claude expects; never sent anywhere but the stand-in. */
export const FAKE_API_KEY = 'sk-ant-api03-agentmux-test-0000000000000000000000000000-fakekey0123456789';

const MODELS = {
  data: [
    { type: 'model', id: 'claude-sonnet-4-5', display_name: 'Claude Sonnet 4.5', created_at: '2025-01-01T00:00:00Z' },
    { type: 'model', id: 'claude-haiku-4-5', display_name: 'Claude Haiku 4.5', created_at: '2025-01-01T00:00:00Z' },
  ],
  has_more: false,
  first_id: 'claude-sonnet-4-5',
  last_id: 'claude-haiku-4-5',
};

/**
 * The text of the last user message in msgs ('' if none): its content as
 * a string, or its parts of type textType joined. Both stand-ins' APIs
 * shape messages so.
 */
export function lastUserIn(msgs, textType) {
  for (let i = msgs.length - 1; i >= 0; i--) {
    const m = msgs[i];
    if (m?.role !== 'user') continue;
    if (typeof m.content === 'string') return m.content;
    if (!Array.isArray(m.content)) return '';
    return m.content.filter((c) => c?.type === textType).map((c) => c.text).join('\n');
  }
  return '';
}

/** The text of the last user message of a Messages request ('' if none). */
export function lastUserText(body) {
  return lastUserIn(Array.isArray(body?.messages) ? body.messages : [], 'text');
}

function json(res, status, obj) {
  res.writeHead(status, { 'content-type': 'application/json', 'request-id': `req_fake_${Date.now()}` });
  res.end(JSON.stringify(obj));
}

/**
 * Starts the stand-in on 127.0.0.1 (a free port unless `port` is given).
 *   reply   the assistant's text, or a function (body) => text; either may
 *           instead be { toolUse: { name, input } }: the assistant then asks
 *           to use that tool (stop_reason tool_use), and Claude's next
 *           request carries the tool_result
 *   log     called with each request record, e.g. for debugging
 */
export async function startFakeAnthropic({ reply = 'Hello from the stand-in.', port = 0, log } = {}) {
  const requests = [];
  let counter = 0;

  function messages(res, body) {
    const n = ++counter;
    const id = `msg_fake_${n}`;
    const model = body.model ?? 'claude-sonnet-4-5';
    const answer = typeof reply === 'function' ? reply(body) : reply;
    const tool = typeof answer === 'object' && answer?.toolUse;
    const text = tool ? '' : answer;
    const block = tool ? { type: 'tool_use', id: `toolu_fake_${n}`, name: tool.name, input: tool.input } : { type: 'text', text };
    const stopReason = tool ? 'tool_use' : 'end_turn';
    const usage = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };
    if (!body.stream) {
      return json(res, 200, {
        id, type: 'message', role: 'assistant', model,
        content: [block],
        stop_reason: stopReason, stop_sequence: null, usage,
      });
    }
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': `req_fake_${n}` });
    const event = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    event('message_start', {
      message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
    });
    event('content_block_start', { index: 0, content_block: tool ? { ...block, input: {} } : { type: 'text', text: '' } });
    event('ping', {});
    const delta = tool ? { type: 'input_json_delta', partial_json: JSON.stringify(tool.input) } : { type: 'text_delta', text };
    event('content_block_delta', { index: 0, delta });
    event('content_block_stop', { index: 0 });
    event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: 5 } });
    event('message_stop', {});
    res.end();
  }

  const server = http.createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body = {};
      try {
        body = raw ? JSON.parse(raw) : {};
      } catch {
        body = {};
      }
      const p = new URL(req.url, 'http://x').pathname;
      const userText = lastUserText(body);
      const rec = { method: req.method, path: p, model: body.model, stream: body.stream, prompt: userText.slice(0, 200), userText };
      requests.push(rec);
      log?.(rec);
      if (req.method === 'POST' && p === '/v1/messages') return messages(res, body);
      if (req.method === 'POST' && p === '/v1/messages/count_tokens') return json(res, 200, { input_tokens: 42 });
      if (req.method === 'GET' && p === '/v1/models') return json(res, 200, MODELS);
      if ((req.method === 'HEAD' || req.method === 'GET') && p === '/') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        return res.end(req.method === 'HEAD' ? undefined : 'fake-anthropic\n');
      }
      json(res, 404, { type: 'error', error: { type: 'not_found_error', message: `fake-anthropic: no route ${req.method} ${p}` } });
    });
  });
  await new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const url = `http://127.0.0.1:${server.address().port}`;
  return {
    url,
    requests,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
