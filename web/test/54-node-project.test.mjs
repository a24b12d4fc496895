// Issue 41 on a real Node project: its agentmux.json's setup installs a
// dependency from the npm registry (npm ci, from the committed lock file) and copies the workspace's untracked
// .env into each new worktree; two worktree sessions get port ranges of
// their own, and the dev servers their agents start on $AGENTMUX_PORT run
// side by side, each listed in Preview under its session; archiving one
// runs the archive script before its worktree goes. --trust-scripts
// approves the repository's scripts for a server nobody is at.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { uiTest, sel, tabById, waitFor, waitForLine, initGitRepo, git } from './harness.mjs';

const SERVER = `const http = require('node:http');
const isNumber = require('is-number');
const port = Number(process.env.AGENTMUX_PORT);
http.createServer((req, res) => res.end(\`\${process.env.AGENTMUX_BRANCH} says \${process.env.GREETING}, \${isNumber(port)}\`))
  .listen(port, '127.0.0.1', () => console.log(\`listening on \${port}\`));
`;

const run = promisify(execFile);

async function setupWorkspace(ws) {
  await initGitRepo(ws);
  await git(ws, 'config', 'user.name', 'Node Tester');
  await git(ws, 'config', 'user.email', 'node@example.test');
  await fs.writeFile(path.join(ws, 'package.json'), JSON.stringify({
    name: 'greeter', version: '1.0.0', private: true, scripts: { test: 'node --test' }, dependencies: { 'is-number': '7.0.0' },
  }, null, 2));
  await fs.writeFile(path.join(ws, 'server.js'), SERVER);
  await fs.writeFile(path.join(ws, '.gitignore'), 'node_modules/\n.env\n');
  await fs.writeFile(path.join(ws, 'agentmux.json'), JSON.stringify({
    scripts: {
      setup: 'npm ci --no-audit --no-fund && cp "$AGENTMUX_ROOT_PATH/.env" .env',
      archive: 'echo "archived $AGENTMUX_BRANCH" > "$AGENTMUX_ROOT_PATH/archived-$AGENTMUX_BRANCH.txt"',
      check: 'npm test',
    },
  }, null, 2));
  // The lock file is committed, as a project's is, for npm ci.
  await run('npm', ['install', '--package-lock-only', '--no-audit', '--no-fund'], { cwd: ws });
  await git(ws, 'add', '.');
  await git(ws, 'commit', '-q', '-m', 'a Node project');
  // Untracked, as secrets are: only the setup brings it into a worktree.
  await fs.writeFile(path.join(ws, '.env'), 'GREETING=hello\n');
}

// The agent starts the project's dev server with the worktree's .env.
const AGENT = ['sh', '-c', 'set -a; . ./.env; set +a; exec node server.js'];

uiTest('a Node project: setup installs and copies .env, two worktrees serve on ports of their own, archive runs', {
  setupWorkspace, flags: ['--trust-scripts'], viewport: { width: 1440, height: 900 }, timeout: 180_000,
}, async ({ page, server, screenshot }) => {
  assert.match(server.logTail(60), /workspace scripts are trusted without approval \(--trust-scripts\)/);
  const alpha = await server.createSession({ name: 'alpha', worktree: { branch: 'alpha' }, command: AGENT });
  const beta = await server.createSession({ name: 'beta', worktree: { branch: 'beta' }, command: AGENT });
  assert.equal(alpha.setup?.status, 'running', 'the setup runs first');

  // Each worktree is set up, then its agent serves on its own port.
  for (const s of [alpha, beta]) {
    await tabById(page, s.id).click();
    await waitForLine(page, s.id, `listening on ${s.ports.first}`, { timeout: 120_000 });
    const wt = s.worktree.path;
    assert.ok(existsSync(path.join(wt, 'node_modules', 'is-number', 'package.json')), `${s.name}: is-number installed`);
    assert.equal(await fs.readFile(path.join(wt, '.env'), 'utf8'), 'GREETING=hello\n', `${s.name}: .env copied`);
    const { body } = await server.api(`api/sessions/${s.id}`);
    assert.equal(body.session.setup.status, 'passed');
    assert.equal(body.session.setup.agentStarted, true);
  }
  const [a, b] = [alpha.ports, beta.ports];
  assert.ok(a.first + a.count <= b.first || b.first + b.count <= a.first, `disjoint port ranges: ${JSON.stringify([a, b])}`);
  for (const s of [alpha, beta]) {
    const res = await fetch(`http://127.0.0.1:${s.ports.first}/`);
    assert.equal(await res.text(), `${s.name} says hello, true`);
  }

  // Preview lists each server under its session.
  await page.locator(sel('layout-preview')).click();
  for (const s of [alpha, beta]) {
    const row = page.locator(`${sel('preview-port')}[data-port="${s.ports.first}"]`);
    await row.waitFor({ timeout: 15_000 });
    assert.match(await row.locator(sel('preview-port-session')).textContent(), new RegExp(`^${s.name}`));
  }
  await screenshot('54-node-preview');

  // Archive alpha: its archive script runs in its worktree before it goes.
  const { status, body } = await server.api(`api/sessions/${alpha.id}/archive`, { method: 'POST' });
  assert.equal(status, 200, JSON.stringify(body));
  assert.equal(body.session.archive.status, 'passed');
  assert.equal(await fs.readFile(path.join(server.workspace, 'archived-alpha.txt'), 'utf8'), 'archived alpha\n');
  assert.ok(!existsSync(alpha.worktree.path), 'the worktree is gone');
  await waitFor(async () => (await fetch(`http://127.0.0.1:${beta.ports.first}/`)).ok, { message: 'beta still serves' });
});
