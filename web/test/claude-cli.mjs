// Running the real Claude Code CLI (the npm package @anthropic-ai/claude-code,
// a devDependency of these tests) in a test: where a working `claude` is, and
// a throwaway config that takes it straight to its prompt, talking to
// nothing but the stand-in API (fake-anthropic.mjs). Every real-Claude test
// uses it.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { after, test } from 'node:test';
import { TEST_DIR, tempDir, uiTest } from './harness.mjs';
import { FAKE_API_KEY, SUBSCRIBER_ENV, startFakeAnthropic } from './fake-anthropic.mjs';

const BIN_DIR = path.join(TEST_DIR, 'node_modules', '.bin');
const SCOPE_DIR = path.join(TEST_DIR, 'node_modules', '@anthropic-ai');

/** Why this claude executable does not run, or null when it does. */
function wontRun(file) {
  const r = spawnSync(file, ['--version'], { encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH, HOME: process.env.HOME ?? '/tmp' } });
  if (!r.error && r.status === 0 && /Claude Code/.test(r.stdout)) return null;
  return r.error?.message ?? `exit ${r.status}: ${(r.stderr || r.stdout).trim().split('\n')[0].slice(0, 200)}`;
}

/**
 * A directory with a working `claude` for the sessions' PATH, or { skip }.
 * node_modules/.bin/claude is the native binary once the package's
 * postinstall has copied it there; without that (install scripts not run)
 * it is a stub that fails, and the platform package's own binary is used.
 */
export async function claudeBinDir() {
  const bin = path.join(BIN_DIR, 'claude');
  if (!existsSync(bin)) return { skip: `${bin} is missing: run npm ci in web/test` };
  const tried = [];
  const why = wontRun(bin);
  if (!why) return { dir: BIN_DIR };
  tried.push(`${bin}: ${why}`);
  const natives = (await fs.readdir(SCOPE_DIR).catch(() => []))
    .filter((n) => n.startsWith('claude-code-'))
    .map((n) => path.join(SCOPE_DIR, n, 'claude'))
    .filter((f) => existsSync(f));
  for (const native of natives) {
    const whyNot = wontRun(native);
    if (whyNot) {
      tried.push(`${native}: ${whyNot}`);
      continue;
    }
    const dir = await tempDir('claude-bin');
    await fs.symlink(native, path.join(dir, 'claude'));
    return { dir };
  }
  return { skip: `the Claude Code CLI cannot run on ${process.platform}-${process.arch} (${tried.join('; ')})` };
}

/**
 * The start of a shell stand-in for Claude Code: it finds the settings
 * agentmux gives each run (--settings) and sets $statusline and $stop to
 * the status line and Stop hook commands they name, which the stand-in
 * runs as Claude Code would. Node reads the settings, since a shell has
 * no JSON parser.
 */
export const FAKE_CLAUDE_PRELUDE = `#!/bin/sh
settings=
while [ $# -gt 0 ]; do
  case "$1" in --settings) settings=$2; shift ;; esac
  shift
done
setting() { '${process.execPath}' -e 'const s = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")); process.stdout.write(process.argv[2] === "status" ? s.statusLine.command : s.hooks.Stop[0].hooks[0].command)' "$settings" "$1"; }
statusline=$(setting status)
stop=$(setting stop)
`;

/** Writes CLAUDE_CONFIG_DIR/.claude.json so Claude starts straight at its prompt in (or under) dirs. */
export async function seedClaudeConfig(configDir, dirs) {
  const projects = {};
  for (const d of dirs) projects[d] = { hasTrustDialogAccepted: true };
  const config = {
    hasCompletedOnboarding: true,
    theme: 'dark',
    customApiKeyResponses: { approved: [FAKE_API_KEY.slice(-20)], rejected: [] },
    projects,
  };
  await fs.mkdir(configDir, { recursive: true });
  await fs.writeFile(path.join(configDir, '.claude.json'), JSON.stringify(config, null, 2));
}

/**
 * The server's environment for Claude sessions: claude on PATH, the config
 * dir, the stand-in's URL and key, and telemetry, non-essential traffic and
 * auto-updates off.
 */
export function claudeEnv({ binDir, configDir, apiURL }) {
  return {
    PATH: `${binDir}:${process.env.PATH}`,
    CLAUDE_CONFIG_DIR: configDir,
    ANTHROPIC_BASE_URL: apiURL,
    ANTHROPIC_API_KEY: FAKE_API_KEY,
    DISABLE_TELEMETRY: '1',
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_AUTOUPDATER: '1',
  };
}

/**
 * A UI test with the real Claude CLI, or a skipped test saying why it
 * cannot run here. The server's Claude sessions talk to a stand-in API
 * started with reply (see startFakeAnthropic) and start in a throwaway
 * config that trusts the workspace (then opts.setupWorkspace, if any, runs
 * on it); body gets them as api and configDir, besides uiTest's fixture.
 * usage and limits go to the stand-in; subscriber makes Claude a
 * claude.ai subscriber's, which reports the account's windows and limits.
 */
export async function claudeUiTest(name, { reply, usage, limits, subscriber, ...opts }, body) {
  const claude = await claudeBinDir();
  if (claude.skip) {
    test(name, { skip: claude.skip }, () => {});
    return;
  }
  const api = await startFakeAnthropic({ reply, usage, limits });
  after(() => api.close());
  const configDir = path.join(await tempDir('claude'), 'config');
  uiTest(
    name,
    {
      ...opts,
      // A subscriber's Claude reports the account's windows and limits.
      env: { ...claudeEnv({ binDir: claude.dir, configDir, apiURL: api.url }), ...(subscriber ? SUBSCRIBER_ENV : {}), ...opts.env },
      setupWorkspace: async (ws) => {
        await seedClaudeConfig(configDir, [...new Set([ws, await fs.realpath(ws)])]);
        if (opts.setupWorkspace) await opts.setupWorkspace(ws);
      },
    },
    (fx) => body({ ...fx, api, configDir }),
  );
}
