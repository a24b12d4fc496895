// Issue 14: behind a proxy that serves agentmux under a path (code-server's
// /proxy/<port>/, Coder's path-based apps, JupyterHub's server proxy) the
// UI works: every URL the page uses (its assets, the API, the WebSocket,
// the lazy chunks and stylesheets, file links, the sign-in redirect) is
// relative to where the page was served.
//
// The proxy is prefixproxy/main.go (Go's httputil.ReverseProxy): it strips
// /proxy/8080 and, like those proxies, passes the browser's Host on, so
// the server's same-origin check sees its page's origin as its own. It
// answers 404 outside the prefix, and logs each response it passes back,
// which tells what a reload really fetched.
//
// Also checked here, through the proxy: the bundle is served under
// content-hashed names, gzip-encoded and immutable; index.html is
// revalidated (no-cache, ETag), so a reload costs a 304 and the API calls.
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import path from 'node:path';
import {
  uiTest, sel, createSession, waitFor, waitForPrompt, waitForLine, typeCommand, openApp,
  initGitRepo, tempDir, REPO_DIR,
} from './harness.mjs';

const PREFIX = '/proxy/8080/';
const TOKEN = 'pp-test-token-4c2e91';
const HASHED = /-[A-Z0-9]{8}\.(js|css)$/;

let proxyBinary;
/** Builds prefixproxy once per run (go's build cache makes it quick). */
function buildProxy() {
  proxyBinary ??= (async () => {
    const out = path.join(await tempDir('proxy'), 'prefixproxy');
    await new Promise((resolve, reject) => {
      execFile('go', ['build', '-o', out, './web/test/prefixproxy'], { cwd: REPO_DIR, timeout: 120_000 }, (err, stdout, stderr) =>
        err ? reject(new Error(`go build ./web/test/prefixproxy: ${err.message}\n${stderr}`)) : resolve());
    });
    return out;
  })();
  return proxyBinary;
}

/**
 * Starts prefixproxy in front of server; stopped with the test. `url` is
 * the page's address through it; `responses` the [method, path, status]
 * of every response it passed back, paths as the server saw them.
 */
async function startProxy(fx, server) {
  const bin = await buildProxy();
  const proc = spawn(bin, ['-listen', '127.0.0.1:0', '-target', server.url, '-prefix', PREFIX], { stdio: ['ignore', 'pipe', 'pipe'] });
  const proxy = { log: '', responses: [], url: null };
  let exited = false;
  proc.on('exit', () => { exited = true; });
  fx.onCleanup(() => proc.kill('SIGTERM'));
  proc.stdout.on('data', (buf) => {
    proxy.log += buf;
    for (const line of String(buf).split('\n')) {
      const m = /^([A-Z]+) (\S+) (\d{3})$/.exec(line);
      if (m) proxy.responses.push([m[1], m[2], Number(m[3])]);
    }
  });
  proc.stderr.on('data', (buf) => { proxy.log += buf; });
  proxy.url = await waitFor(() => {
    if (exited) throw new Error(`prefixproxy exited: ${proxy.log}`);
    return /prefixproxy listening on (\S+)/.exec(proxy.log)?.[1];
  }, { message: 'prefixproxy listening' });
  assert.ok(proxy.url.endsWith(PREFIX), proxy.url);
  return proxy;
}

/** Records every URL the page asks for: requests and WebSockets. */
function recordRequests(page) {
  const urls = [];
  const sockets = [];
  const responses = [];
  page.on('request', (r) => urls.push(r.url()));
  page.on('websocket', (ws) => sockets.push(ws.url()));
  page.on('response', (r) => responses.push(r));
  return { urls, sockets, responses };
}

function assertAllUnder(rec, proxyURL) {
  const base = new URL(proxyURL);
  const stray = rec.urls.filter((u) => !u.startsWith(base.href) && !u.startsWith('data:') && !u.startsWith('blob:'));
  assert.deepEqual(stray, [], `requests outside ${base.pathname}`);
  const wsBase = base.href.replace(/^http/, 'ws');
  assert.ok(rec.sockets.length > 0, 'the page opened a WebSocket');
  assert.deepEqual(rec.sockets.filter((u) => u !== `${wsBase}ws`), [], `WebSockets other than ${wsBase}ws`);
}

/** Opens a session through the UI, types a command, sees its output. */
async function typeThrough(page, name) {
  const id = await createSession(page, name);
  await waitForPrompt(page, id);
  await typeCommand(page, 'echo prefix-ok');
  await waitForLine(page, id, 'prefix-ok');
  return id;
}

uiTest('behind a path-prefix proxy: assets, API, WebSocket, lazy chunks and file links stay under the prefix, cached and compressed', {
  server: false,
  timeout: 90_000,
}, async (fx) => {
  const { page } = fx;
  const server = await fx.startServer({ setupWorkspace: initGitRepo });
  const proxy = await startProxy(fx, server);
  const rec = recordRequests(page);

  await openApp(page, proxy.url);

  // The page's own response: revalidated on every load.
  const index = rec.responses.find((r) => r.url() === proxy.url);
  assert.ok(index, 'the page itself was fetched through the proxy');
  const indexHeaders = await index.allHeaders();
  assert.equal(indexHeaders['cache-control'], 'no-cache', 'index.html Cache-Control');
  assert.match(indexHeaders.etag ?? '', /^"[^"]+"$/, 'index.html has a strong ETag');

  // The bundle: content-hashed names, immutable, gzip.
  const html = await index.text();
  const assets = [...html.matchAll(/(?:href|src)="([^"]+)"/g)].map((m) => m[1]).filter((u) => HASHED.test(u));
  for (const kind of ['app-[A-Z0-9]{8}\\.js', 'app-[A-Z0-9]{8}\\.css', 'xterm-[A-Z0-9]{8}\\.css']) {
    assert.ok(assets.some((u) => new RegExp(`^\\./${kind}$`).test(u)), `index.html refers to ./${kind} (has ${assets.join(' ')})`);
  }
  for (const u of assets) {
    const res = rec.responses.find((r) => r.url() === new URL(u, proxy.url).href);
    assert.ok(res, `${u} was fetched through the proxy`);
    assert.equal(res.status(), 200, u);
    const h = await res.allHeaders();
    assert.equal(h['cache-control'], 'public, max-age=31536000, immutable', `${u} Cache-Control`);
    assert.equal(h['content-encoding'], 'gzip', `${u} Content-Encoding`);
  }

  // A terminal, through the proxy's WebSocket.
  await typeThrough(page, 'behind-proxy');

  // The Changes view: its lazy chunk and its stylesheet (named by its
  // hash) come from under the prefix too; then a file opens in the
  // document pane through api/files.
  await server.writeFile('README.md', '# changed behind the proxy\n');
  await page.locator(sel('layout-changes')).click();
  const diff = page.locator(sel('changes-diff')).first();
  await diff.locator(sel('changes-diff-body')).waitFor({ state: 'visible' });
  await waitFor(() => rec.urls.some((u) => /\/changes-[A-Z0-9]{8}\.css$/.test(u)), { message: 'the Changes stylesheet requested by its hashed name' });
  const loaded = await page.evaluate(() => {
    const link = document.querySelector('link[data-stylesheet="changes"]');
    return link && link.sheet ? { href: link.href, rules: link.sheet.cssRules.length } : null;
  });
  assert.ok(loaded && loaded.rules > 0, `the Changes stylesheet applied: ${JSON.stringify(loaded)}`);
  assert.ok(loaded.href.startsWith(proxy.url), loaded.href);

  await diff.locator(sel('changes-diff-name')).click();
  await waitFor(async () => /changed behind the proxy/.test(await page.locator(sel('artifact-content')).innerText()), {
    message: 'README.md in the document pane',
  });
  const raw = await page.locator('#artifact-raw').evaluate((a) => a.href);
  assert.equal(raw, new URL('api/files?path=README.md', proxy.url).href, 'the Raw link');

  assertAllUnder(rec, proxy.url);

  // A reload asks only for what may have changed: index.html (304 by its
  // ETag) and live state; the hashed files come from the browser's cache.
  // The WebGL chunk is asked for once the page has been idle a while: a
  // reload before that would fetch it for the first time, not again.
  await waitFor(() => rec.urls.some((u) => /\/chunks\/addon-webgl-[A-Z0-9]{8}\.js$/.test(u)), {
    message: 'the WebGL chunk requested before the reload',
  });
  const seen = proxy.responses.length;
  await page.reload();
  await page.waitForFunction(() => window.__agentmux && window.__agentmux.connectionState() === 'connected');
  await page.waitForLoadState('networkidle');
  const again = proxy.responses.slice(seen);
  assert.deepEqual(again.filter(([, p]) => HASHED.test(p)), [], 'hashed files fetched again on reload');
  assert.deepEqual(again.find(([, p]) => p === '/'), ['GET', '/', 304], 'index.html revalidated on reload');
  assertAllUnder(rec, proxy.url);
});

uiTest('behind a path-prefix proxy with --token: ?token= signs in and lands back under the prefix', {
  server: false,
}, async (fx) => {
  const { page, context } = fx;
  const server = await fx.startServer({ flags: ['--token', TOKEN] });
  const proxy = await startProxy(fx, server);
  const rec = recordRequests(page);

  await openApp(page, `${proxy.url}?token=${TOKEN}`);
  assert.equal(page.url(), proxy.url, 'the sign-in redirect lands on the page under the prefix, token gone');
  const cookies = await context.cookies(proxy.url);
  assert.deepEqual(cookies.map((c) => [c.name, c.path]), [['agentmux_token', PREFIX.replace(/\/$/, '')]], 'the token cookie, scoped to the prefix');

  await typeThrough(page, 'signed-in');
  assertAllUnder(rec, proxy.url);

  // Without the cookie the API through the proxy stays shut.
  const res = await fetch(new URL('api/sessions', proxy.url));
  assert.equal(res.status, 401);
});
