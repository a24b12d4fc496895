// A small local stand-in for the Anthropic Messages API, enough for the real
// Claude Code CLI (pointed at it with ANTHROPIC_BASE_URL) to start, answer a
// prompt and save its conversation. It runs in the test's own process.
//
//   const api = await startFakeAnthropic({ reply: 'Hello' });
//   env: { ANTHROPIC_BASE_URL: api.url, ANTHROPIC_API_KEY: FAKE_API_KEY }
//   api.requests   every request seen: { method, path, model, stream, prompt,
//                  userText } (prompt: the first 200 characters of userText,
//                  the last user message's text), images (the last
//                  user message's image blocks: { mediaType, data },
//                  data base64, as Claude sent them); for /v1/messages also
//                  status (200 or 429), usage (what the answer said it used)
//                  and limited (true for a usage-limit 429)
//   api.limitReached(reset, window = 'fiveHour')  from now on /v1/messages
//                  answers 429: that window ('fiveHour' or 'sevenDay') is
//                  used up until reset (unix seconds)
//   api.limitLifted()        back to answering
//   api.setLimits(limits)    change the windows reported (see limits below)
//   await api.close()
//
// Claude Code says a limit is reached ("You've hit your session limit ·
// resets 2:01am (UTC)") and reads the windows only when signed in to
// claude.ai; with an API key the same 429 is "API Error: Request rejected
// (429) · ...", after 10 retries over about 3 minutes unless
// CLAUDE_CODE_MAX_RETRIES=0. SUBSCRIBER_ENV, laid over claudeEnv's, signs
// it in; it then asks the stand-in nothing more.
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

/** A claude.ai OAuth token of the shape Claude expects, for SUBSCRIBER_ENV. */
export const FAKE_OAUTH_TOKEN = 'sk-ant-oat01-agentmux-test-0000000000000000000000000000-fakekey0123456789';

/**
 * The environment that makes Claude a claude.ai (Max) subscriber rather than
 * an API-key user: the token, and the key emptied (Claude prefers a key it
 * finds, and an empty one counts as none).
 */
export const SUBSCRIBER_ENV = {
  ANTHROPIC_API_KEY: '',
  CLAUDE_CODE_OAUTH_TOKEN: FAKE_OAUTH_TOKEN,
  CLAUDE_CODE_SUBSCRIPTION_TYPE: 'max',
};

/** What every answer says it used unless `usage` says otherwise. */
const USAGE = { input_tokens: 10, output_tokens: 5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 };

/** The unified rate-limit header names of each window in `limits`, and the limit each is. */
const WINDOWS = { fiveHour: '5h', sevenDay: '7d' };
const CLAIMS = { fiveHour: 'five_hour', sevenDay: 'seven_day' };

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

/**
 * The image blocks of the last user message of a Messages request, as
 * { mediaType, data } (data base64); a pasted image reaches the model so.
 */
export function lastUserImages(body) {
  const msgs = Array.isArray(body?.messages) ? body.messages : [];
  for (let i = msgs.length - 1; i >= 0; i--) {
    const m = msgs[i];
    if (m?.role !== 'user') continue;
    if (!Array.isArray(m.content)) return [];
    return m.content
      .filter((c) => c?.type === 'image' && c.source?.type === 'base64')
      .map((c) => ({ mediaType: c.source.media_type, data: c.source.data }));
  }
  return [];
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
 *   usage   what each answer says it used: an object, or a function (n, body)
 *           => object for the n-th /v1/messages request (1-based); its
 *           fields override the default { input_tokens: 10, output_tokens:
 *           5, cache_creation_input_tokens: 0, cache_read_input_tokens: 0 }
 *   limits  the account's windows, sent as headers on every answer:
 *           { fiveHour: { utilization, reset }, sevenDay: { ... } }, either
 *           window optional; utilization a fraction (0.42 is 42%), reset
 *           unix seconds
 *   log     called with each request record, e.g. for debugging
 */
export async function startFakeAnthropic({ reply = 'Hello from the stand-in.', port = 0, log, usage: usageOpt, limits = null } = {}) {
  const requests = [];
  let counter = 0;
  let limitedUntil = null; // { reset, window } while limitReached

  function limitHeaders() {
    const h = {};
    for (const [key, name] of Object.entries(WINDOWS)) {
      const w = limits?.[key];
      if (!w) continue;
      h[`anthropic-ratelimit-unified-${name}-utilization`] = String(w.utilization);
      h[`anthropic-ratelimit-unified-${name}-reset`] = String(w.reset);
    }
    if (Object.keys(h).length) h['anthropic-ratelimit-unified-status'] = 'allowed';
    return h;
  }

  // The answer of a subscriber over a limit, as the real API gives it:
  // Claude reads the headers, not the body, to say which limit and when it
  // resets.
  function limited(res, rec) {
    rec.limited = true;
    rec.status = 429;
    const { reset, window } = limitedUntil;
    const name = WINDOWS[window];
    res.writeHead(429, {
      ...limitHeaders(),
      'content-type': 'application/json',
      'request-id': `req_fake_${Date.now()}`,
      'anthropic-ratelimit-unified-status': 'rejected',
      'anthropic-ratelimit-unified-reset': String(reset),
      'anthropic-ratelimit-unified-representative-claim': CLAIMS[window],
      [`anthropic-ratelimit-unified-${name}-status`]: 'rejected',
      [`anthropic-ratelimit-unified-${name}-utilization`]: '1.0',
      [`anthropic-ratelimit-unified-${name}-reset`]: String(reset),
    });
    res.end(JSON.stringify({ type: 'error', error: { type: 'rate_limit_error', message: "This request would exceed your account's rate limit. Please try again later." } }));
  }

  function messages(res, body, rec) {
    if (limitedUntil !== null) return limited(res, rec);
    const n = ++counter;
    const id = `msg_fake_${n}`;
    const model = body.model ?? 'claude-sonnet-4-5';
    const answer = typeof reply === 'function' ? reply(body) : reply;
    const tool = typeof answer === 'object' && answer?.toolUse;
    const text = tool ? '' : answer;
    const block = tool ? { type: 'tool_use', id: `toolu_fake_${n}`, name: tool.name, input: tool.input } : { type: 'text', text };
    const stopReason = tool ? 'tool_use' : 'end_turn';
    const usage = { ...USAGE, ...(typeof usageOpt === 'function' ? usageOpt(n, body) : usageOpt) };
    rec.usage = usage;
    rec.status = 200;
    if (!body.stream) {
      res.writeHead(200, { ...limitHeaders(), 'content-type': 'application/json', 'request-id': `req_fake_${n}` });
      return res.end(JSON.stringify({
        id, type: 'message', role: 'assistant', model,
        content: [block],
        stop_reason: stopReason, stop_sequence: null, usage,
      }));
    }
    res.writeHead(200, { ...limitHeaders(), 'content-type': 'text/event-stream', 'cache-control': 'no-cache', 'request-id': `req_fake_${n}` });
    const event = (type, data) => res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);
    // As the real API does: message_start carries the input side (and an
    // output of 1), message_delta the final output_tokens.
    event('message_start', {
      message: { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { ...usage, output_tokens: 1 } },
    });
    event('content_block_start', { index: 0, content_block: tool ? { ...block, input: {} } : { type: 'text', text: '' } });
    event('ping', {});
    const delta = tool ? { type: 'input_json_delta', partial_json: JSON.stringify(tool.input) } : { type: 'text_delta', text };
    event('content_block_delta', { index: 0, delta });
    event('content_block_stop', { index: 0 });
    event('message_delta', { delta: { stop_reason: stopReason, stop_sequence: null }, usage: { output_tokens: usage.output_tokens } });
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
      const rec = { method: req.method, path: p, model: body.model, stream: body.stream, prompt: userText.slice(0, 200), userText, images: lastUserImages(body) };
      requests.push(rec);
      log?.(rec);
      if (req.method === 'POST' && p === '/v1/messages') return messages(res, body, rec);
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
    limitReached: (reset, window = 'fiveHour') => void (limitedUntil = { reset, window }),
    limitLifted: () => void (limitedUntil = null),
    setLimits: (l) => void (limits = l),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(() => resolve());
      }),
  };
}
