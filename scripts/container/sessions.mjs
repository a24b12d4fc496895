// The HTTP and WebSocket half of scripts/container/test.sh: creates
// sessions in a running agentmux, and after a restart checks that they
// are listed as idle, replay their saved screens, and resume.
//
//   node sessions.mjs create  <base-url> <name> <marker>      prints the id
//   node sessions.mjs restored <base-url> <id>=<marker> ...
//   node sessions.mjs resume  <base-url> <id>=<marker> ...
//   node sessions.mjs git     <base-url> <changed-file> <branch>
//
// Needs a global WebSocket: Node 22 or later, or Node 20 with
// --experimental-websocket (test.sh adds the flag when it is needed).
// Requests carry no Origin header, as from any script: the server refuses
// requests from other origins, not requests without one.

const DEADLINE_MS = 15000;

function fail(msg) {
  console.error(`sessions.mjs: ${msg}`);
  process.exit(1);
}

async function api(base, method, path, body) {
  const init = { method, headers: {} };
  if (body !== undefined) {
    init.headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(base + path, { ...init, signal: AbortSignal.timeout(DEADLINE_MS) });
  } catch (err) {
    fail(`${method} ${path}: ${err.cause?.message || err.message}`);
  }
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {
    fail(`${method} ${path}: ${res.status}, not JSON: ${text.slice(0, 200)}`);
  }
  return { status: res.status, json, text };
}

// attach connects, attaches to a session and collects its output until
// want(output) holds; then it runs then(ws) (to type something) if given,
// and waits for want2. It fails at the deadline, quoting the output.
function attach(base, id, want, what) {
  return new Promise((resolve) => {
    const ws = new WebSocket(base.replace(/^http/, 'ws') + '/ws');
    let output = '';
    let attached = null;
    const timer = setTimeout(() => {
      ws.close();
      fail(`session ${id}: no ${what} within ${DEADLINE_MS / 1000}s; ` +
        (attached ? `output was ${JSON.stringify(output.slice(-400))}` : 'never attached'));
    }, DEADLINE_MS);
    ws.onerror = (ev) => fail(`WebSocket to ${base}/ws: ${ev.message || 'error'}`);
    ws.onopen = () => ws.send(JSON.stringify({ type: 'session.attach', sessionId: id, lines: 200 }));
    ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.sessionId !== id) return;
      if (msg.type === 'error') fail(`session ${id}: ${msg.code}: ${msg.message}`);
      if (msg.type === 'session.attached') {
        attached = msg;
        if (msg.reset) output = '';
      }
      if (msg.type === 'terminal.output') output += msg.data;
      if (attached && want(output)) {
        clearTimeout(timer);
        resolve({ ws, output, attached });
      }
    };
  });
}

function pairs(args) {
  if (args.length === 0) fail('no <id>=<marker> given');
  return args.map((a) => {
    const i = a.indexOf('=');
    if (i < 1) fail(`not <id>=<marker>: ${a}`);
    return { id: a.slice(0, i), marker: a.slice(i + 1) };
  });
}

async function create(base, name, marker) {
  const command = ['bash', '-c', `echo ${marker}; exec bash -i`];
  const r = await api(base, 'POST', '/api/sessions', { name, command });
  if (r.status !== 201) fail(`POST /api/sessions: ${r.status} ${r.text}`);
  const id = r.json.session.id;
  // Wait for the marker on its screen, so there is a screen to save.
  const { ws } = await attach(base, id, (out) => out.includes(marker), `"${marker}" on the screen`);
  ws.close();
  console.log(id);
}

async function restored(base, list) {
  const r = await api(base, 'GET', '/api/sessions');
  if (r.status !== 200) fail(`GET /api/sessions: ${r.status} ${r.text}`);
  for (const { id, marker } of list) {
    const s = r.json.sessions.find((x) => x.id === id);
    if (!s) fail(`session ${id} is not listed after the restart; listed: ${r.text}`);
    if (s.status !== 'idle' || s.running !== false) {
      fail(`session ${id} (${s.name}) is ${s.status}, running: ${s.running}; want idle, running: false`);
    }
    const { ws, output } = await attach(base, id, (out) => out.includes(marker), `saved screen with "${marker}"`);
    ws.close();
    console.log(`   ${s.name} (${id}): listed as ${s.status}, running: ${s.running}; ` +
      `its saved screen, replayed over /ws (${output.length} characters), shows "${marker}"`);
  }
}

async function resume(base, list) {
  for (const { id, marker } of list) {
    const r = await api(base, 'POST', `/api/sessions/${id}/resume`);
    if (r.status !== 200) fail(`POST /api/sessions/${id}/resume: ${r.status} ${r.text}`);
    if (r.json.session.running !== true) fail(`session ${id} resumed but not running: ${r.text}`);
    // The new run is a new shell: type into it and read its answer. The
    // answer, 42, differs from the typed text, so the echo of the input
    // does not count.
    const probe = `${marker}-resumed-`;
    const { ws } = await attach(base, id, () => true, 'attachment');
    const seen = new Promise((resolve) => {
      let out = '';
      const timer = setTimeout(() => fail(`session ${id}: the resumed shell did not answer within ` +
        `${DEADLINE_MS / 1000}s; output was ${JSON.stringify(out.slice(-400))}`), DEADLINE_MS);
      ws.onmessage = (ev) => {
        const msg = JSON.parse(ev.data);
        if (msg.sessionId !== id || msg.type !== 'terminal.output') return;
        out += msg.data;
        if (out.includes(`${probe}42`)) {
          clearTimeout(timer);
          resolve();
        }
      };
    });
    ws.send(JSON.stringify({ type: 'terminal.input', sessionId: id, data: `echo ${probe}$((6*7))\r` }));
    await seen;
    ws.close();
    const g = await api(base, 'GET', `/api/sessions/${id}`);
    const s = g.json.session;
    if (g.status !== 200 || s.running !== true) fail(`GET /api/sessions/${id} after resume: ${g.status} ${g.text}`);
    console.log(`   ${s.name} (${id}): resume answered 200; ${s.status}, running: ${s.running}; ` +
      `its new shell answered "${probe}42"`);
  }
}

// git checks agentmux's git features in a workspace that is a repository
// with <changed-file> modified: a session there has a diff that names the
// file (GET /api/sessions/<id>/diff: 200), and a session in a worktree on
// a new <branch> starts (POST /api/sessions with worktree: 201). Each
// failure quotes the server's answer.
async function git(base, file, branch) {
  const c = await api(base, 'GET', '/api/config');
  if (c.status !== 200) fail(`GET /api/config: ${c.status} ${c.text}`);
  if (c.json.gitRepository !== true) fail(`GET /api/config: the workspace is not seen as a git repository: ${c.text}`);
  const command = ['bash', '-c', 'exec bash -i'];
  const r = await api(base, 'POST', '/api/sessions', { name: 'git', command });
  if (r.status !== 201) fail(`POST /api/sessions: ${r.status} ${r.text}`);
  const id = r.json.session.id;
  const d = await api(base, 'GET', `/api/sessions/${id}/diff`);
  if (d.status !== 200) fail(`GET /api/sessions/${id}/diff: ${d.status} ${d.text}`);
  if (!d.text.includes(file)) fail(`GET /api/sessions/${id}/diff: 200, but the diff does not name ${file}: ${d.text.slice(0, 400)}`);
  console.log(`   GET /api/sessions/${id}/diff: 200, names ${file}`);
  const w = await api(base, 'POST', '/api/sessions', { name: branch, command, worktree: { branch } });
  if (w.status !== 201) fail(`POST /api/sessions with worktree ${branch}: ${w.status} ${w.text}`);
  const wt = w.json.session.worktree;
  console.log(`   POST /api/sessions with worktree ${branch}: 201, ${JSON.stringify(wt)}`);
}

const [cmd, base, ...rest] = process.argv.slice(2);
if (!base || !/^https?:\/\//.test(base)) fail('usage: sessions.mjs create|restored|resume|git <base-url> ...');
if (typeof WebSocket !== 'function') fail('this Node has no WebSocket: use Node 22+, or Node 20 with --experimental-websocket');
switch (cmd) {
  case 'create':
    if (rest.length !== 2) fail('usage: sessions.mjs create <base-url> <name> <marker>');
    await create(base, rest[0], rest[1]);
    break;
  case 'restored':
    await restored(base, pairs(rest));
    break;
  case 'resume':
    await resume(base, pairs(rest));
    break;
  case 'git':
    if (rest.length !== 2) fail('usage: sessions.mjs git <base-url> <changed-file> <branch>');
    await git(base, rest[0], rest[1]);
    break;
  default:
    fail(`unknown command ${cmd}`);
}
process.exit(0);
