// Builds the UI into dist/: src/main.ts bundled into app-<hash>.js (and
// chunks/), the stylesheets public/app.css, xterm.js's and the Changes
// view's (diff2html's, restyled; its lazy chunk loads it) into
// app-<hash>.css, xterm-<hash>.css and changes-<hash>.css, plus the other
// static files in public/ and index.html, rewritten to refer to the hashed
// names and to preload the chunks the bundle imports. Every URL is
// relative to the page, so the UI also works under a proxy's path
// (http://host/proxy/8080/). Text files get a gzip twin (x.js.gz) when it
// is smaller; the server sends it to browsers that take gzip, and caches
// the hashed files for good (cmd/server/assets.go).
//
//   node build.mjs                  the build the server embeds
//   node build.mjs --sourcemap      with linked source maps (or AGENTMUX_SOURCEMAP=1)
//   node build.mjs --watch          rebuild on change; names without hashes
import * as esbuild from 'esbuild';
import { copyFile, mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { constants, gzip } from 'node:zlib';

const here = dirname(fileURLToPath(import.meta.url));
const dist = join(here, 'dist');
const watch = process.argv.includes('--watch');
const sourcemap = process.argv.includes('--sourcemap') || process.env.AGENTMUX_SOURCEMAP === '1';
// Hashed names change with every edit, and the JavaScript learns the
// Changes stylesheet's name when it is built (define, below): a watch
// would have to rebuild it after every stylesheet edit. Watch builds are
// for development, where revalidating unhashed files costs nothing.
const entryNames = watch ? '[name]' : '[name]-[hash]';

/** Files copied from public/ as they are; index.html is rewritten. */
const PUBLIC_BUILT = new Set(['index.html', 'app.css']);
/** What gets a .gz twin. */
const COMPRESSIBLE = /\.(js|css|html|svg|json|webmanifest)$/;

// Empty dist/ but keep .gitkeep, which keeps web.go's embed valid.
await mkdir(dist, { recursive: true });
for (const name of await readdir(dist)) {
  if (name !== '.gitkeep') await rm(join(dist, name), { recursive: true, force: true });
}

/** @type {import('esbuild').BuildOptions} */
const common = {
  absWorkingDir: here,
  outdir: dist,
  bundle: true,
  entryNames,
  assetNames: 'assets/[name]-[hash]',
  target: ['es2022', 'chrome110', 'firefox115', 'safari16'],
  minify: true,
  sourcemap: sourcemap ? 'linked' : false,
  legalComments: 'linked',
  metafile: true,
  logLevel: 'info',
};

/** @type {import('esbuild').BuildOptions} */
const stylesheets = {
  ...common,
  entryPoints: [
    { in: 'public/app.css', out: 'app' },
    { in: '@xterm/xterm/css/xterm.css', out: 'xterm' },
    { in: 'src/changes/changes.css', out: 'changes' },
  ],
};

/** @type {(names: Map<string, string>) => import('esbuild').BuildOptions} */
const scripts = (names) => ({
  ...common,
  entryPoints: { app: 'src/main.ts' },
  // Modules, split: what the first screen does not need (the WebGL
  // renderer, the markdown renderer, the diff renderer) loads in chunks of
  // its own.
  format: 'esm',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
  define: {
    // diffview.ts's stylesheet, relative to the page.
    __CHANGES_STYLESHEET__: JSON.stringify(`./${names.get('changes.css')}`),
  },
});

/**
 * Maps each entry's plain name (app.js, app.css, ...) to the name it was
 * written under (app-4KQ2M7ZB.js), from esbuild's metafile.
 */
function entryNamesOf(metafile) {
  const names = new Map();
  for (const [file, out] of Object.entries(metafile.outputs)) {
    if (!out.entryPoint) continue;
    const name = relative(dist, join(here, file));
    names.set(name.replace(/-[A-Z0-9]{8}(\.[a-z]+)$/, '$1'), name);
  }
  return names;
}

/**
 * Writes dist/index.html from public/index.html with each entry's
 * reference (./app.js, ./app.css, ./xterm.css) pointing at its hashed
 * name. A reference from the root (/app.js) would miss the page under a
 * proxy's path: refused.
 */
async function writeIndex(names, preload) {
  let html = await readFile(join(here, 'public', 'index.html'), 'utf8');
  const absolute = html.match(/\s(?:href|src)="\/(?!\/)[^"]*"/g);
  if (absolute) {
    throw new Error(`public/index.html: use URLs relative to the page (./x, not /x), so it works under a proxy's path: ${absolute.join(',')}`);
  }
  for (const plain of ['app.js', 'app.css', 'xterm.css']) {
    const ref = new RegExp(`(\\s(?:href|src)=")\\./${plain.replace('.', '\\.')}"`);
    if (!ref.test(html)) throw new Error(`public/index.html does not load ./${plain}`);
    html = html.replace(ref, `$1./${names.get(plain)}"`);
  }
  // The chunks the bundle imports are otherwise asked for only once it
  // has been read: a round trip more before it runs.
  const app = new RegExp(`<script type="module" src="\\./${names.get('app.js').replace('.', '\\.')}"></script>\n`);
  if (!app.test(html)) throw new Error('public/index.html: the bundle\'s <script type="module"> not found');
  html = html.replace(app, (tag) => tag + preload.map((f) => `<link rel="modulepreload" href="./${f}">\n`).join(''));
  await writeFile(join(dist, 'index.html'), html);
}

/** The files the bundle (app.js) imports statically, relative to dist/. */
function staticImportsOf(metafile, names) {
  const out = metafile.outputs[relative(here, join(dist, names.get('app.js')))];
  return out.imports.filter((i) => i.kind === 'import-statement').map((i) => relative(dist, join(here, i.path)));
}

async function copyPublic() {
  for (const e of await readdir(join(here, 'public'), { withFileTypes: true })) {
    if (e.isFile() && !PUBLIC_BUILT.has(e.name)) await copyFile(join(here, 'public', e.name), join(dist, e.name));
  }
}

/** Every file under dir, as paths relative to it. */
async function files(dir, prefix = '') {
  const out = [];
  for (const e of await readdir(join(dir, prefix), { withFileTypes: true })) {
    const p = join(prefix, e.name);
    if (e.isDirectory()) out.push(...(await files(dir, p)));
    else out.push(p);
  }
  return out;
}

const gzipAsync = promisify(gzip);

/**
 * Writes x.gz next to every compressible x, when it is smaller, and drops
 * what a watch rebuild left behind: outputs of earlier builds (chunks
 * renamed by their hash) and their .gz twins.
 */
async function finish(metafiles) {
  const keep = new Set(['.gitkeep', 'index.html']);
  for (const m of metafiles) for (const f of Object.keys(m.outputs)) keep.add(relative(dist, join(here, f)));
  for (const e of await readdir(join(here, 'public'))) if (!PUBLIC_BUILT.has(e)) keep.add(e);
  let raw = 0;
  let packed = 0;
  for (const f of await files(dist)) {
    const base = f.endsWith('.gz') ? f.slice(0, -3) : f;
    if (!keep.has(base)) {
      await rm(join(dist, f), { force: true });
      continue;
    }
    if (f.endsWith('.gz') || !COMPRESSIBLE.test(f)) continue;
    const body = await readFile(join(dist, f));
    const gz = await gzipAsync(body, { level: constants.Z_BEST_COMPRESSION });
    raw += body.length;
    if (gz.length < body.length) {
      await writeFile(join(dist, `${f}.gz`), gz);
      packed += gz.length;
    } else {
      await rm(join(dist, `${f}.gz`), { force: true });
      packed += body.length;
    }
  }
  console.log(`dist/: ${kb(raw)} of text files, ${kb(packed)} gzipped${sourcemap ? ', with source maps' : ''}`);
}

const kb = (n) => `${(n / 1024).toFixed(1)} KiB`;

if (!watch) {
  const css = await esbuild.build(stylesheets);
  const names = entryNamesOf(css.metafile);
  const js = await esbuild.build(scripts(names));
  for (const [k, v] of entryNamesOf(js.metafile)) names.set(k, v);
  await copyPublic();
  await writeIndex(names, staticImportsOf(js.metafile, names));
  await finish([css.metafile, js.metafile]);
} else {
  // Two watching contexts; after either rebuilds, dist/ is brought up to
  // date with the latest output of both.
  // One update at a time, so the two cannot clean up each other's files.
  const latest = { css: null, js: null };
  let updating = Promise.resolve();
  const update = async () => {
    if (!latest.css || !latest.js) return;
    try {
      await copyPublic();
      const names = new Map([...entryNamesOf(latest.css), ...entryNamesOf(latest.js)]);
      await writeIndex(names, staticImportsOf(latest.js, names));
      await finish([latest.css, latest.js]);
    } catch (err) {
      console.error(`build: ${err.message}`);
    }
  };
  const after = (key) => ({
    name: 'finish',
    setup(build) {
      build.onEnd((result) => {
        if (result.errors.length > 0) return undefined;
        latest[key] = result.metafile;
        updating = updating.then(update);
        return updating;
      });
    },
  });
  const plain = new Map([['changes.css', 'changes.css']]);
  const css = await esbuild.context({ ...stylesheets, plugins: [after('css')] });
  const js = await esbuild.context({ ...scripts(plain), plugins: [after('js')] });
  await Promise.all([css.watch(), js.watch()]);
}
