// Test harness for the agentmux UI tests: builds the real server (with the
// UI build embedded), starts it per test on a free port with a temporary
// workspace, data dir and HOME, drives Debian's /usr/bin/chromium with
// playwright-core, and offers the helpers the tests share.
//
// Tests talk to the UI only through the contract in web/README.md
// (data-testid attributes, window.__agentmux, document.title,
// #app[data-layout]).
//
// Environment:
//   AGENTMUX_BIN       use this server binary instead of building one
//   CHROMIUM           browser executable (default /usr/bin/chromium)
//   AGENTMUX_TEST_KEEP keep temp dirs (workspace, data, logs) after the run

import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const TEST_DIR = here;
export const WEB_DIR = path.resolve(here, '..');
export const REPO_DIR = path.resolve(here, '../..');
export const SCREENSHOT_DIR = path.join(here, 'screenshots');
const DIST_INDEX = path.join(WEB_DIR, 'dist', 'index.html');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';

export const sel = (testid) => `[data-testid="${testid}"]`;

// ---------------------------------------------------------------------------
// Waiting

/**
 * Polls fn until it returns a truthy value (which is returned) or the
 * deadline passes (then throws, with the last value or error seen).
 */
export async function waitFor(fn, { timeout = 10_000, interval = 50, message = 'condition' } = {}) {
  const deadline = Date.now() + timeout;
  let last;
  let lastErr;
  for (;;) {
    try {
      last = await fn();
      lastErr = undefined;
      if (last) return last;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() >= deadline) {
      const detail = lastErr ? `last error: ${lastErr.message}` : `last value: ${JSON.stringify(last)}`;
      throw new Error(`timed out after ${timeout} ms waiting for ${message} (${detail})`);
    }
    await new Promise((r) => setTimeout(r, interval));
  }
}

function withTimeout(promise, ms, what) {
  let timer;
  return Promise.race([
    promise,
    new Promise((_, reject) => {
      timer = setTimeout(() => reject(new Error(`${what}: no result within ${ms} ms`)), ms);
    }),
  ]).finally(() => clearTimeout(timer));
}

// ---------------------------------------------------------------------------
// Building the server

function run(cmd, args, opts) {
  return new Promise((resolve, reject) => {
    execFile(cmd, args, { maxBuffer: 16 << 20, ...opts }, (err, stdout, stderr) => {
      if (err) {
        err.message += `\n${stdout}${stderr}`;
        reject(err);
      } else resolve({ stdout, stderr });
    });
  });
}

async function walk(dir, skip, out) {
  let entries;
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) {
      if (!skip(p, e.name)) await walk(p, skip, out);
    } else if (e.isFile()) {
      out.push(p);
    }
  }
}

// sourceHash identifies a server build: the Go sources, go.mod/go.sum, and
// everything the binary embeds (web/dist and web/static).
async function sourceHash() {
  const files = [];
  const skipDir = (p, name) =>
    name === '.git' || name === 'node_modules' || p === path.join(REPO_DIR, 'web');
  await walk(REPO_DIR, skipDir, files);
  const goFiles = files.filter((f) => f.endsWith('.go') || /\/go\.(mod|sum)$/.test(f));
  const embedded = [];
  await walk(path.join(WEB_DIR, 'dist'), () => false, embedded);
  await walk(path.join(WEB_DIR, 'static'), () => false, embedded);
  goFiles.push(path.join(WEB_DIR, 'web.go'));
  const all = [...new Set([...goFiles, ...embedded])].sort();
  const h = createHash('sha256');
  const { stdout: goVersion } = await run('go', ['version'], { cwd: REPO_DIR });
  h.update(goVersion);
  for (const f of all) {
    h.update(path.relative(REPO_DIR, f));
    h.update('\0');
    h.update(await fs.readFile(f));
    h.update('\0');
  }
  return h.digest('hex').slice(0, 16);
}

let binaryPromise;

/**
 * Returns the path of a server binary carrying the current UI build. Built
 * with `go build ./cmd/server` once per test run: node --test runs each file
 * in its own process, so the binary is cached under the OS temp dir, keyed
 * by a hash of the Go sources and the embedded files.
 */
export function serverBinary() {
  binaryPromise ??= (async () => {
    if (process.env.AGENTMUX_BIN) return process.env.AGENTMUX_BIN;
    if (!existsSync(DIST_INDEX)) {
      throw new Error(
        `the UI is not built: ${DIST_INDEX} does not exist.\n` +
          `Build it first:  cd ${WEB_DIR} && npm ci && npm run build\n` +
          `(the server embeds web/dist at go build time; without it the page says "without its UI").`,
      );
    }
    const key = await sourceHash();
    const cacheRoot = path.join(os.tmpdir(), 'agentmux-uitest-bin');
    const dir = path.join(cacheRoot, key);
    const bin = path.join(dir, 'agentmux');
    if (existsSync(bin)) return bin;
    await fs.mkdir(dir, { recursive: true });
    const tmp = `${bin}.${process.pid}.tmp`;
    await run('go', ['build', '-o', tmp, './cmd/server'], { cwd: REPO_DIR, timeout: 300_000 });
    await fs.rename(tmp, bin); // atomic: concurrent test files may race here
    // Drop builds of older sources (kept an hour, in case another run uses one).
    for (const name of await fs.readdir(cacheRoot)) {
      if (name === key) continue;
      const p = path.join(cacheRoot, name);
      const st = await fs.stat(p).catch(() => null);
      if (st && Date.now() - st.mtimeMs > 3600_000) await fs.rm(p, { recursive: true, force: true });
    }
    return bin;
  })();
  return binaryPromise;
}

// ---------------------------------------------------------------------------
// Servers

const liveServers = new Set();
process.on('exit', () => {
  for (const s of liveServers) {
    try {
      s.proc.kill('SIGKILL');
    } catch {}
  }
});

const tempDirs = [];
export async function tempDir(prefix) {
  const d = await fs.mkdtemp(path.join(os.tmpdir(), `agentmux-uitest-${prefix}-`));
  tempDirs.push(d);
  return d;
}
after(async () => {
  if (process.env.AGENTMUX_TEST_KEEP) return;
  await Promise.all(tempDirs.map((d) => fs.rm(d, { recursive: true, force: true }).catch(() => {})));
});

const LISTEN_RE = /msg="agentmux listening" url=(http:\/\/\S+?\/)(\s|$)/;

/**
 * Starts cmd for owner (a Server or a Hub): its output collects in
 * owner.log, owner.proc and owner.exited follow the process, which is
 * killed when the tests end if still running, and the URL its "listening"
 * log line (listenRe) gives is returned. A process that exits first, or
 * says nothing within 15 s, fails with its log.
 */
async function spawnListening(owner, cmd, args, env, listenRe, what) {
  const proc = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  owner.proc = proc;
  liveServers.add(owner);
  owner.exited = new Promise((resolve) => {
    proc.on('exit', (code, signal) => {
      owner.exitCode = code ?? signal;
      liveServers.delete(owner);
      resolve(owner.exitCode);
    });
  });
  const onData = (buf) => {
    owner.log += buf.toString();
  };
  proc.stdout.on('data', onData);
  proc.stderr.on('data', onData);
  return waitFor(
    () => {
      if (owner.exitCode !== undefined) throw new Error(`the ${what} exited (${owner.exitCode}) during start-up:\n${owner.log}`);
      const m = listenRe.exec(owner.log);
      return m && m[1];
    },
    { timeout: 15_000, interval: 20, message: `the ${what}'s listening line` },
  ).catch((err) => {
    proc.kill('SIGKILL');
    throw new Error(`${err.message}\n${what} log:\n${owner.log}`);
  });
}

/**
 * A running agentmux. `url` ends with '/'. `stop()` sends SIGTERM and waits
 * for the exit; `restart()` stops it and starts a new one on the same port
 * with the same workspace, data dir and flags.
 */
class Server {
  constructor({ bin, workspace, dataDir, home, flags, addr, env, wrap, token }) {
    Object.assign(this, { bin, workspace, dataDir, home, flags, addr, env, wrap, token });
    this.log = '';
    this.url = null;
    this.exitCode = undefined;
  }

  get port() {
    return Number(new URL(this.url).port);
  }

  async start() {
    const args = [
      '--addr', this.addr,
      '--workspace', this.workspace,
      '--data-dir', this.dataDir,
      '--agent-cmd', 'bash --norc --noprofile -i',
      ...(this.token ? ['--token', this.token] : []),
      ...this.flags,
    ];
    const env = {
      PATH: process.env.PATH,
      HOME: this.home,
      PS1: '$ ',
      LANG: process.env.LANG || 'C.UTF-8',
    };
    if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
    Object.assign(env, this.env);
    this.log = '';
    this.exitCode = undefined;
    // wrap runs the binary inside something, such as a mount namespace;
    // it must exec the server in the end, so signals reach it.
    const [cmd, cmdArgs] = this.wrap ? this.wrap(this.bin, args, this) : [this.bin, args];
    const url = await spawnListening(this, cmd, cmdArgs, env, LISTEN_RE, 'server');
    this.url = url;
    // A binary without the UI serves a fallback page; say so plainly.
    const page = await (await fetch(url)).text();
    if (/without its UI/.test(page) && !process.env.AGENTMUX_TEST_ALLOW_FALLBACK) {
      await this.stop();
      throw new Error(`the server binary ${this.bin} has no UI build (it serves the fallback page); rebuild web/dist`);
    }
    return this;
  }

  /** SIGTERM, then wait for the exit (SIGKILL after `timeout`). Returns the exit code. */
  async stop({ timeout = 10_000 } = {}) {
    if (!this.proc || this.exitCode !== undefined) return this.exitCode;
    this.proc.kill('SIGTERM');
    let timer;
    const killed = new Promise((resolve) => {
      timer = setTimeout(() => {
        this.proc.kill('SIGKILL');
        resolve('killed');
      }, timeout);
    });
    const r = await Promise.race([this.exited, killed]);
    clearTimeout(timer);
    if (r === 'killed') {
      await this.exited;
      throw new Error(`server did not exit within ${timeout} ms of SIGTERM; killed. log:\n${this.log}`);
    }
    return this.exitCode;
  }

  /** Stops (if running) and starts a new server on the same port and dirs. */
  async restart() {
    const port = this.port;
    await this.stop();
    this.addr = `127.0.0.1:${port}`;
    // The port was ours a moment ago; Go's listener uses SO_REUSEADDR, so
    // only a stranger grabbing it in between could make this fail: retry.
    await waitFor(
      async () => {
        try {
          await this.start();
          return true;
        } catch (err) {
          if (/address already in use/.test(err.message)) return false;
          throw err;
        }
      },
      { timeout: 10_000, interval: 200, message: `a restart on port ${port}` },
    );
    return this;
  }

  /** A request as a script sends it: a body goes as JSON, which the server requires; with the server's token, if it has one. */
  async api(p, init = {}) {
    const auth = this.token ? { Authorization: `Bearer ${this.token}` } : {};
    const headers = init.body === undefined ? { ...auth, ...init.headers } : { 'Content-Type': 'application/json', ...auth, ...init.headers };
    const res = await fetch(new URL(p, this.url), { ...init, headers });
    const text = await res.text();
    let body;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = text;
    }
    return { status: res.status, body };
  }

  async sessions() {
    const { status, body } = await this.api('api/sessions');
    assert.equal(status, 200, `GET /api/sessions: ${status} ${JSON.stringify(body)}`);
    return body.sessions;
  }

  /** POST /api/sessions with this body (e.g. { name, command: [...] }); returns the Session JSON. */
  async createSession(req = {}) {
    const { status, body } = await this.api('api/sessions', { method: 'POST', body: JSON.stringify(req) });
    assert.equal(status, 201, `POST /api/sessions ${JSON.stringify(req)}: ${status} ${JSON.stringify(body)}`);
    return body.session;
  }

  /** Writes a file under the workspace, creating directories. */
  async writeFile(rel, content) {
    const p = path.join(this.workspace, rel);
    await fs.mkdir(path.dirname(p), { recursive: true });
    await fs.writeFile(p, content);
    return p;
  }

  logTail(lines = 40) {
    return this.log.split('\n').slice(-lines).join('\n');
  }
}

/**
 * Starts a server with a fresh temp workspace, data dir and HOME.
 *   flags            extra server flags, e.g. ['--idle-after', '500ms']
 *   setupWorkspace   async (dir) => {}, run on the empty workspace before
 *                    the server starts (to make it a git repository, say)
 *   env              extra environment for the server, and so for its
 *                    sessions: merged over PATH, HOME, PS1, LANG (and
 *                    TMPDIR); kept across restart()
 *   wrap             (bin, args, server) => [command, args] that runs the
 *                    server inside something (a mount namespace, say) and
 *                    execs it; kept across restart()
 *   token            the server's token (--token): server.api() sends it
 */
export async function startServer({ flags = [], addr = '127.0.0.1:0', setupWorkspace, env = {}, wrap, token } = {}) {
  const bin = await serverBinary();
  const root = await tempDir('srv');
  const workspace = path.join(root, 'ws');
  const dataDir = path.join(root, 'data');
  const home = path.join(root, 'home');
  await Promise.all([workspace, dataDir, home].map((d) => fs.mkdir(d, { recursive: true })));
  if (setupWorkspace) await setupWorkspace(workspace);
  const s = new Server({ bin, workspace, dataDir, home, flags, addr, env: { ...env }, wrap, token });
  await s.start();
  return s;
}

const HUB_LISTEN_RE = /msg="agentmux hub listening".*? url=(http:\/\/\S+?\/)(\s|$)/;

/**
 * A running agentmux hub (agentmux hub, issue 44) over the workspaces it
 * was given. `url` ends with '/'; `stop()` sends SIGTERM and waits.
 */
class Hub {
  constructor({ bin, args, home }) {
    Object.assign(this, { bin, args, home });
    this.log = '';
    this.url = null;
    this.exitCode = undefined;
  }

  async start() {
    const env = { PATH: process.env.PATH, HOME: this.home, LANG: process.env.LANG || 'C.UTF-8' };
    if (process.env.TMPDIR) env.TMPDIR = process.env.TMPDIR;
    this.url = await spawnListening(this, this.bin, ['hub', ...this.args], env, HUB_LISTEN_RE, 'hub');
    return this;
  }

  stop(opts) {
    return Server.prototype.stop.call(this, opts);
  }

  /** Stops the hub (if running) and starts it again on the same port. */
  async restart() {
    const port = Number(new URL(this.url).port);
    await this.stop();
    const at = this.args.indexOf('--addr');
    this.args[at + 1] = `127.0.0.1:${port}`;
    this.log = '';
    this.exitCode = undefined;
    // As Server.restart: only a stranger taking the port in between fails it.
    await waitFor(async () => {
      try {
        await this.start();
        return true;
      } catch (err) {
        if (/address already in use/.test(err.message)) return false;
        throw err;
      }
    }, { timeout: 10_000, interval: 200, message: `the hub's restart on port ${port}` });
    return this;
  }

  api(p, init) {
    return Server.prototype.api.call(this, p, init);
  }

  logTail(lines = 40) {
    return this.log.split('\n').slice(-lines).join('\n');
  }
}

/**
 * Starts `agentmux hub` on a free port of 127.0.0.1 over peers, each
 * `{ url, token, openUrl }` (a workspace, its token if it has one, where
 * a browser reaches its UI), written to a --peers file with a token file
 * each; flags are more of the hub's.
 */
export async function startHub({ peers = [], flags = [] } = {}) {
  const bin = await serverBinary();
  const dir = await tempDir('hub');
  const lines = [];
  for (const [i, p] of peers.entries()) {
    let tokenFile = '-';
    if (p.token) {
      tokenFile = path.join(dir, `token-${i}`);
      await fs.writeFile(tokenFile, `${p.token}\n`, { mode: 0o600 });
    }
    lines.push([p.url, tokenFile, p.openUrl].filter(Boolean).join(' '));
  }
  const peersFile = path.join(dir, 'peers');
  await fs.writeFile(peersFile, `# workspaces of the test\n${lines.join('\n')}\n`);
  const hub = new Hub({ bin, args: ['--addr', '127.0.0.1:0', '--peers', peersFile, ...flags], home: dir });
  return hub.start();
}

/** Runs git in dir, with a fixed identity and no user or system config; returns stdout. */
export async function git(dir, ...args) {
  const env = {
    PATH: process.env.PATH,
    HOME: dir,
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@t',
    GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@t',
  };
  const { stdout } = await run('git', ['-C', dir, ...args], { env });
  return stdout;
}

/** Makes dir a git repository on branch main with one commit (a README). */
export async function initGitRepo(dir) {
  await git(dir, 'init', '-q', '-b', 'main');
  await fs.writeFile(path.join(dir, 'README.md'), '# test workspace\n');
  await git(dir, 'add', 'README.md');
  await git(dir, '-c', 'user.name=t', '-c', 'user.email=t@t', 'commit', '-q', '-m', 'initial');
}

// ---------------------------------------------------------------------------
// Browser

let browserPromise;
export function browser() {
  browserPromise ??= chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-dev-shm-usage',
      '--disable-background-networking',
      '--disable-component-update',
      '--no-first-run',
      '--disable-sync',
      '--disable-quic',
    ],
  });
  return browserPromise;
}
after(async () => {
  if (browserPromise) await (await browserPromise).close().catch(() => {});
});

/**
 * Console messages that do not fail a test, wherever they appear.
 * - none at present: a request the page makes that fails is a finding.
 * Tests that provoke errors on purpose (a server restart, a hostile
 * document with a broken image) pass their own patterns in `allowConsole`.
 */
export const BENIGN_CONSOLE = [];

/** Console errors a browser logs for network failures while the server is down or stopping. */
export const SERVER_DOWN_CONSOLE = [
  /WebSocket connection to 'ws:\/\/127\.0\.0\.1:\d+\/ws' failed/,
  /Failed to load resource: net::ERR_CONNECTION_REFUSED/,
  /Failed to load resource: net::ERR_EMPTY_RESPONSE/,
  /Failed to load resource: net::ERR_CONNECTION_RESET/,
  /Failed to load resource: the server responded with a status of 503/,
  /net::ERR_CONNECTION_REFUSED/,
];

/**
 * Defines a UI test. `body` gets a fixture:
 *   { t, server, page, context, errors, frames, screenshot(name),
 *     allowConsole(re), onCleanup(fn), startServer(opts), startHub(opts),
 *     open(server) }
 * The server starts with `opts.flags`, `opts.setupWorkspace`, `opts.env`
 * and `opts.wrap` (see startServer; skip it with opts.server === false);
 * `opts.skip`, a reason, skips the test as node:test does. The page opens the
 * server's URL in a fresh context with a 1280x800 viewport (opts.viewport)
 * and waits for window.__agentmux.
 * `frames` records the JSON messages the page's WebSockets receive (all
 * but terminal.output and heartbeat), each with `at` (ms since the test
 * started).
 * After the body, any console error or uncaught page error not allowed
 * fails the test. On failure a screenshot `fail-<name>` is saved and the
 * server log tail, the last WebSocket messages and page errors are added
 * to the error.
 */
export function uiTest(name, opts, body) {
  if (typeof opts === 'function') [body, opts] = [opts, {}];
  const timeout = opts.timeout ?? 60_000;
  const failShot = `fail-${name.replace(/[^\w-]+/g, '_').slice(0, 60)}`;
  test(name, { timeout, skip: opts.skip }, async (t) => {
    await fs.rm(path.join(SCREENSHOT_DIR, `${failShot}.png`), { force: true });
    const started = Date.now();
    const fx = { t, errors: [], frames: [], allowed: [...BENIGN_CONSOLE, ...(opts.allowConsole ?? [])] };
    fx.allowConsole = (re) => fx.allowed.push(re);
    const cleanups = [];
    fx.onCleanup = (fn) => cleanups.push(fn);
    /** Starts another server, stopped at the end of the test. */
    fx.startServer = async (o) => {
      const s = await startServer(o);
      cleanups.push(() => s.stop());
      return s;
    };
    /** Starts a hub (startHub), stopped at the end of the test. */
    const hubs = [];
    fx.startHub = async (o) => {
      const h = await startHub(o);
      hubs.push(h);
      cleanups.push(() => h.stop());
      return h;
    };
    fx.open = (server) => openApp(fx.page, server.url);
    try {
      if (opts.server !== false) {
        fx.server = await startServer({ flags: opts.flags ?? [], setupWorkspace: opts.setupWorkspace, env: opts.env, wrap: opts.wrap });
        cleanups.push(() => fx.server.stop());
      }
      const b = await browser();
      // opts.contextOptions: more of the browser context, e.g. a phone's (isMobile, hasTouch, deviceScaleFactor).
      fx.context = await b.newContext({ viewport: opts.viewport ?? { width: 1280, height: 800 }, ...opts.contextOptions });
      cleanups.push(() => fx.context.close());
      fx.page = await fx.context.newPage();
      fx.page.setDefaultTimeout(10_000);
      fx.page.on('console', (msg) => {
        if (msg.type() !== 'error') return;
        const loc = msg.location();
        fx.errors.push({ kind: 'console', text: msg.text(), url: loc && loc.url });
      });
      fx.page.on('pageerror', (err) => {
        fx.errors.push({ kind: 'pageerror', text: String(err && err.stack ? err.stack : err) });
      });
      fx.page.on('websocket', (sock) => {
        sock.on('framereceived', ({ payload }) => {
          let m;
          try {
            m = JSON.parse(String(payload));
          } catch {
            return;
          }
          if (m.type === 'terminal.output' || m.type === 'heartbeat') return;
          fx.frames.push({ at: Date.now() - started, ...m });
        });
      });
      fx.screenshot = (n) => screenshot(fx.page, n);
      if (fx.server) await openApp(fx.page, fx.server.url);
      await body(fx);
      const bad = fx.errors.filter((e) => !fx.allowed.some((re) => re.test(e.text)));
      const tolerated = fx.errors.filter((e) => !bad.includes(e));
      // Said as what they are: errors the test provokes on purpose and
      // allows (allowConsole), not failures.
      if (tolerated.length) t.diagnostic(`${tolerated.length} page error${tolerated.length === 1 ? '' : 's'} this test expects (allowed, not a failure): ${tolerated.map((e) => e.text.slice(0, 100)).join(' | ')}`);
      assert.deepEqual(bad, [], `the page logged errors:\n${bad.map((e) => `  ${e.kind}: ${e.text} ${e.url ?? ''}`).join('\n')}`);
    } catch (err) {
      if (fx.page) {
        await screenshot(fx.page, failShot).catch(() => {});
      }
      const extra = [];
      if (fx.errors.length) extra.push(`page errors:\n${fx.errors.map((e) => `  ${e.kind}: ${e.text}`).join('\n')}`);
      if (fx.frames.length) {
        extra.push(`WebSocket messages (last 30, no output or heartbeats):\n${fx.frames.slice(-30).map((f) => `  ${JSON.stringify(f)}`).join('\n')}`);
      }
      if (fx.server) extra.push(`server log (tail):\n${fx.server.logTail()}`);
      for (const h of hubs) extra.push(`hub log (tail):\n${h.logTail()}`);
      if (extra.length) err.message += `\n\n${extra.join('\n\n')}`;
      throw err;
    } finally {
      for (const c of cleanups.reverse()) {
        await withTimeout(Promise.resolve().then(c), 15_000, 'cleanup').catch((e) => {
          console.error(`cleanup of "${name}": ${e.message}`);
        });
      }
    }
  });
}

/** Opens the UI and waits for its test hook. */
export async function openApp(page, url) {
  await page.goto(url);
  await page.waitForFunction(() => window.__agentmux && window.__agentmux.terminals, null, { timeout: 10_000 });
}

// ---------------------------------------------------------------------------
// UI helpers (through the contract only)

export async function screenshot(page, name) {
  await fs.mkdir(SCREENSHOT_DIR, { recursive: true });
  const file = path.join(SCREENSHOT_DIR, `${name}.png`);
  await page.screenshot({ path: file });
  return file;
}

/** The text of a session's active xterm buffer, one line per buffer line. */
export async function readTerminal(page, sessionId) {
  return page.evaluate((id) => {
    const term = window.__agentmux.terminals.get(id);
    if (!term) return null;
    const buf = term.buffer.active;
    const lines = [];
    for (let i = 0; i < buf.length; i++) {
      const line = buf.getLine(i);
      lines.push(line ? line.translateToString(true) : '');
    }
    return lines.join('\n');
  }, sessionId);
}

/** Lines of the terminal buffer, right-trimmed. */
export async function terminalLines(page, sessionId) {
  const text = await readTerminal(page, sessionId);
  return text == null ? null : text.split('\n').map((l) => l.trimEnd());
}

/** Waits until the terminal buffer has a line for which pred(line) holds; returns the line. */
export async function waitForLine(page, sessionId, pred, { timeout = 10_000, message } = {}) {
  const test = typeof pred === 'string' ? (l) => l.trim() === pred : pred instanceof RegExp ? (l) => pred.test(l) : pred;
  return waitFor(
    async () => {
      const lines = await terminalLines(page, sessionId);
      return lines && lines.find(test);
    },
    { timeout, message: message ?? `a terminal line matching ${pred} in session ${sessionId}` },
  );
}

export const tabById = (page, id) => page.locator(`${sel('tab')}[data-session-id="${id}"]`);
export const tabByName = (page, name) =>
  page.locator(sel('tab')).filter({ has: page.locator(sel('tab-name'), { hasText: new RegExp(`^\\s*${escapeRe(name)}\\s*$`) }) });

/**
 * Selects a session as a user can at the page's width: its tab, or, where
 * the switcher takes the tab strip's place (800 px and below), the
 * switcher's list.
 */
export async function selectSession(page, id) {
  const tab = tabById(page, id);
  if (await tab.isVisible()) {
    await tab.click();
  } else {
    await page.getByRole('button', { name: 'Sessions', exact: true }).click();
    const sheet = page.locator(sel('switcher-sheet'));
    await sheet.waitFor({ state: 'visible' });
    await sheet.locator(`${sel('switcher-item')}[data-session-id="${id}"]`).click();
    await sheet.waitFor({ state: 'hidden' });
  }
  await waitFor(() => page.evaluate((id) => window.__agentmux.activeSessionId() === id, id), { message: `session ${id} selected` });
}

export function escapeRe(s) {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Creates a session through the UI (new-session, name, optionally a
 * worktree branch, create) and returns its id, taken from the new tab's
 * data-session-id.
 */
export async function createSession(page, name, { branch } = {}) {
  await page.locator(sel('new-session')).click();
  const dialog = page.locator(sel('new-session-dialog'));
  await dialog.waitFor({ state: 'visible' });
  await dialog.locator('input[name=name]').fill(name);
  if (branch !== undefined) await dialog.locator('input[name=branch]').fill(branch);
  await dialog.locator(sel('create-session')).click();
  const tab = tabByName(page, name);
  const refusal = dialog.locator(sel('new-session-error'));
  // In the DOM, not necessarily visible: at 800 px and below the switcher takes the tab strip's place.
  await waitFor(async () => (await tab.count()) > 0 || (await refusal.isVisible()), { message: `the tab of "${name}" or a refusal` });
  if (await refusal.isVisible()) {
    throw new Error(`creating the session "${name}" was refused: ${await refusal.textContent()}`);
  }
  const id = await tab.getAttribute('data-session-id');
  assert.ok(id, `the tab "${name}" has no data-session-id`);
  await dialog.waitFor({ state: 'hidden' });
  return id;
}

/** Waits for the shell's "$ " prompt in a session's buffer. */
export async function waitForPrompt(page, sessionId, opts) {
  return waitForLine(page, sessionId, (l) => /^\$( |$)/.test(l), { message: `the shell prompt in ${sessionId}`, ...opts });
}

/** The visible terminal pane (the first, should the app mark more than one). */
export const terminalPane = (page) => page.locator(`${sel('terminal')} >> visible=true`).first();

/** Focuses the terminal pane and types a command line, then Enter. */
export async function typeCommand(page, command) {
  await terminalPane(page).click();
  await page.keyboard.type(command);
  await page.keyboard.press('Enter');
}

/** The terminal's size as xterm.js has it. */
export async function termSize(page, sessionId) {
  return page.evaluate((id) => {
    const t = window.__agentmux.terminals.get(id);
    return t ? { cols: t.cols, rows: t.rows } : null;
  }, sessionId);
}

/** True when document.activeElement is inside the terminal pane. */
export async function terminalHasFocus(page) {
  return page.evaluate((s) => {
    const pane = document.querySelector(s);
    return !!(pane && document.activeElement && pane.contains(document.activeElement));
  }, sel('terminal'));
}

/** The last non-empty lines of a screen, indented, for a failure message. */
export function showLines(lines) {
  return lines.filter((l) => l.trim()).slice(-30).map((l) => `    |${l}`).join('\n');
}

/** Reloads the page and waits for the app's test hook. */
export async function reloadApp(page) {
  await page.reload();
  await page.waitForFunction(() => window.__agentmux && window.__agentmux.terminals, null, { timeout: 20_000 });
}

/** Waits until the session's terminal buffer satisfies pred(lines); returns the lines. */
export async function waitForScreen(page, id, pred, message, timeout = 20_000) {
  let last = null;
  try {
    return await waitFor(
      async () => {
        last = await terminalLines(page, id);
        return last && pred(last) ? last : null;
      },
      { timeout, message },
    );
  } catch (err) {
    if (last) err.message += `\nthe terminal shows:\n${showLines(last)}`;
    throw err;
  }
}

/**
 * Another participant, on a WebSocket of its own opened in the page: it
 * says hello as queue-bot, queues texts into session id (returning the
 * acks once all have come) and then sends data as typed keys, if given.
 */
export async function asParticipant(page, { id, texts = [], data }) {
  return page.evaluate(
    async ({ id, texts, data }) => {
      const url = new URL('ws', document.baseURI);
      url.protocol = url.protocol === 'https:' ? 'wss:' : 'ws:';
      const ws = new WebSocket(url);
      const acks = [];
      const done = new Promise((resolve, reject) => {
        ws.onmessage = (e) => {
          const m = JSON.parse(e.data);
          if (m.type === 'error') reject(new Error(m.message));
          if (m.type === 'prompt.queued.ack') acks.push(m) === texts.length && resolve();
        };
      });
      await new Promise((resolve) => (ws.onopen = resolve));
      ws.send(JSON.stringify({ type: 'client.hello', name: 'queue-bot', key: 'queue-bot-key-0123456789' }));
      for (const text of texts) ws.send(JSON.stringify({ type: 'prompt.queue', sessionId: id, text }));
      if (data !== undefined) ws.send(JSON.stringify({ type: 'terminal.input', sessionId: id, data }));
      if (texts.length) await done;
      ws.close();
      return acks;
    },
    { id, texts, data },
  );
}

/**
 * Notifications as if the user had allowed them, recorded in
 * window.__notifications; with hidden, the page also says it is hidden,
 * as when the user has gone to another browser tab (the notifier stays
 * quiet about the session on screen of a visible page).
 */
export async function recordNotifications(page, { hidden = false } = {}) {
  await page.evaluate((hidden) => {
    window.__notifications = [];
    window.Notification = class {
      static permission = 'granted';
      static requestPermission = async () => 'granted';
      constructor(title, options) {
        window.__notifications.push({ title, body: options?.body });
      }
      close() {}
    };
    if (hidden) Object.defineProperty(document, 'hidden', { configurable: true, get: () => true });
  }, hidden);
}

/**
 * Each tab's name as a person sees it: how many characters show whole,
 * before the ellipsis and inside the strip's visible part.
 */
export const readableTabNames = (page) => page.evaluate(() => {
  const strip = document.querySelector('[data-testid=tabs]').getBoundingClientRect();
  return [...document.querySelectorAll('[data-testid=tab]')].map((t) => {
    const name = t.querySelector('[data-testid=tab-name]');
    const box = name.getBoundingClientRect();
    const cut = name.scrollWidth > name.clientWidth;
    // An ellipsis takes the place of the characters it overlaps.
    const probe = document.createElement('span');
    probe.textContent = '\u2026';
    name.append(probe);
    const ellipsis = cut ? probe.getBoundingClientRect().width : 0;
    probe.remove();
    const right = Math.min(box.right - ellipsis, strip.right);
    const left = Math.max(box.left, strip.left);
    const text = name.firstChild;
    let shown = 0;
    if (text && text.nodeType === Node.TEXT_NODE && getComputedStyle(name).visibility !== 'hidden') {
      const range = document.createRange();
      for (let i = 0; i < text.length; i++) {
        range.setStart(text, i);
        range.setEnd(text, i + 1);
        const r = range.getBoundingClientRect();
        if (r.left >= left - 0.5 && r.right <= right + 0.5) shown++;
      }
    }
    return { id: t.dataset.sessionId, name: name.textContent, shown, width: Math.round(t.getBoundingClientRect().width), nameWidth: Math.round(box.width) };
  });
});

/**
 * The start of a node stand-in for Claude Code at a permission dialog:
 * stdin in raw mode, so every key arrives as typed; out() to the
 * terminal and hook() to agentmux's hook endpoint, as Claude's hooks
 * call it; the dialog drawn as Claude 2.1 draws it and its
 * PermissionRequest hook told; `stage` ('permission') and `line` for
 * the test's own handling of the keys, which follows it.
 */
export const PERMISSION_DIALOG = `#!${process.execPath}
const fs = require('node:fs');
const path = require('node:path');
const out = (s) => process.stdout.write(s.replace(/\\n/g, '\\r\\n'));
const hook = (body) => fetch(process.env.AGENTMUX_HOOK_URL, {
  method: 'POST',
  headers: { 'Content-Type': 'application/json', 'X-Agentmux-Hook-Secret': process.env.AGENTMUX_HOOK_SECRET },
  body: JSON.stringify({ cwd: process.cwd(), ...body }),
});
process.stdin.setRawMode(true);
let stage = 'permission';
let line = '';
out('● Write(docs/plan.md)\\n Do you want to create plan.md?\\n ❯ 1. Yes\\n   2. Yes, allow all edits during this session\\n   3. No\\n Esc to cancel\\n');
hook({ hook_event_name: 'PermissionRequest', tool_name: 'Write', tool_input: { file_path: path.join(process.cwd(), 'docs', 'plan.md'), content: '# Plan\\n' } });
`;

/** A real PNG the page draws (a canvas's toBlob), as bytes in node: what a pasted screenshot is. */
export async function drawPNG(page) {
  const bytes = await page.evaluate(async () => {
    const c = document.createElement('canvas');
    c.width = 64;
    c.height = 40;
    const g = c.getContext('2d');
    g.fillStyle = '#7cc4ff';
    g.fillRect(0, 0, 64, 40);
    g.fillStyle = '#e04040';
    g.fillRect(8, 8, 24, 24);
    const blob = await new Promise((r) => c.toBlob(r, 'image/png'));
    return Array.from(new Uint8Array(await blob.arrayBuffer()));
  });
  return Buffer.from(bytes);
}
