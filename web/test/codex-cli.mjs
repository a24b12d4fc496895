// Running the real Codex CLI (the npm package @openai/codex, a
// devDependency of these tests) in a test: a throwaway CODEX_HOME whose
// config.toml has the stand-in Responses API (fake-openai.mjs) as its only
// model provider and the workspace trusted, so Codex talks to nothing but
// the stand-in. Every real-Codex test uses it.
import { after, test } from 'node:test';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { uiTest, tempDir, TEST_DIR } from './harness.mjs';
import { startFakeOpenAI, codexConfig, FAKE_OPENAI_KEY, FAKE_OPENAI_KEY_ENV } from './fake-openai.mjs';

const BIN_DIR = path.join(TEST_DIR, 'node_modules', '.bin');

/** Why node_modules/.bin/codex does not run, or null when it does. */
function wontRun(file) {
  if (!existsSync(file)) return `${file} is missing: run npm ci in web/test`;
  const r = spawnSync(file, ['--version'], { encoding: 'utf8', timeout: 60_000, env: { PATH: process.env.PATH, HOME: process.env.HOME ?? '/tmp' } });
  if (!r.error && r.status === 0 && /codex-cli/.test(r.stdout)) return null;
  return `the Codex CLI cannot run on ${process.platform}-${process.arch}: ${r.error?.message ?? `exit ${r.status}: ${(r.stderr || r.stdout).trim().split('\n')[0].slice(0, 200)}`}`;
}

/**
 * A UI test with the real Codex CLI, or a skipped test saying why it
 * cannot run here. The server's Codex sessions talk to a stand-in API
 * started with reply, usage and limits (see startFakeOpenAI); flags go to
 * the server, allowConsole to uiTest; body gets the stand-in as api, and the throwaway CODEX_HOME
 * as codexHome, besides uiTest's fixture.
 */
export async function codexUiTest(name, { reply, usage, limits, flags, allowConsole, timeout = 180_000 }, body) {
  const skip = wontRun(path.join(BIN_DIR, 'codex'));
  if (skip) {
    test(name, { skip }, () => {});
    return;
  }
  const api = await startFakeOpenAI({ reply, usage, limits });
  after(() => api.close());
  const codexHome = path.join(await tempDir('codex'), 'home');
  uiTest(
    name,
    {
      timeout,
      flags,
      allowConsole,
      env: {
        PATH: `${BIN_DIR}:${process.env.PATH}`,
        CODEX_HOME: codexHome,
        [FAKE_OPENAI_KEY_ENV]: FAKE_OPENAI_KEY,
      },
      setupWorkspace: async (ws) => {
        await fs.mkdir(codexHome, { recursive: true });
        const trusted = [...new Set([ws, await fs.realpath(ws)])];
        await fs.writeFile(path.join(codexHome, 'config.toml'), codexConfig(api.url, { trusted }));
      },
    },
    (fx) => body({ ...fx, api, codexHome }),
  );
}
