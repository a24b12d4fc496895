// Runs the unit tests of the UI's DOM-free parts (the models, the terminal
// stream) in node, without a browser: each unit/*.test.ts is bundled by
// esbuild, with what it imports from src/, into a temporary folder, and
// node's test runner runs the bundles. Type checking is npm run
// typecheck's (tsc -p unit).
//
//   node unit/run.mjs                 every unit test
//   node unit/run.mjs stream          those whose file name contains "stream"
import * as esbuild from 'esbuild';
import { spawnSync } from 'node:child_process';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const only = process.argv.slice(2);
const tests = (await readdir(here))
  .filter((f) => f.endsWith('.test.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
if (tests.length === 0) {
  console.error(`unit: no test matches ${only.join(' ')}`);
  process.exit(1);
}
const out = await mkdtemp(join(tmpdir(), 'agentmux-unit-'));
let status = 1;
try {
  await esbuild.build({
    absWorkingDir: here,
    entryPoints: tests.map((f) => join(here, f)),
    outdir: out,
    outExtension: { '.js': '.mjs' },
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: 'inline',
    logLevel: 'warning',
  });
  const run = spawnSync(process.execPath, ['--enable-source-maps', '--test', ...tests.map((f) => join(out, f.replace(/\.ts$/, '.mjs')))], {
    stdio: 'inherit',
  });
  status = run.status ?? 1;
} finally {
  await rm(out, { recursive: true, force: true });
}
process.exit(status);
