// Builds the UI into dist/: src/main.ts bundled (with xterm.js's CSS) into
// app.js and app.css's neighbour xterm.css, the Changes view's stylesheet
// (diff2html's, restyled) into changes.css, which its lazy chunk loads,
// plus the static files in public/. `node build.mjs --watch` rebuilds on
// change.
import * as esbuild from 'esbuild';
import { cp, mkdir, readdir, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');
const watch = process.argv.includes('--watch');

// Empty dist/ but keep .gitkeep, which keeps web.go's embed valid.
await mkdir(dist, { recursive: true });
for (const name of await readdir(dist)) {
  if (name !== '.gitkeep') await rm(join(dist, name), { recursive: true, force: true });
}

async function copyPublic() {
  await cp(join(here, 'public'), dist, { recursive: true });
}

/** @type {import('esbuild').BuildOptions} */
const options = {
  absWorkingDir: here,
  entryPoints: {
    app: 'src/main.ts',
    xterm: '@xterm/xterm/css/xterm.css',
    changes: 'src/changes.css',
  },
  outdir: dist,
  bundle: true,
  // Modules, split: what the first screen does not need (the WebGL
  // renderer, the markdown renderer, the diff renderer) loads in chunks of
  // its own.
  format: 'esm',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
  minify: true,
  sourcemap: true,
  legalComments: 'linked',
  logLevel: 'info',
  plugins: [
    {
      name: 'public',
      setup(build) {
        build.onEnd(async (result) => {
          if (result.errors.length === 0) await copyPublic();
        });
      },
    },
  ],
};

if (watch) {
  const ctx = await esbuild.context(options);
  await ctx.watch();
} else {
  await esbuild.build(options);
}
