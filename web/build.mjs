// Builds the UI into dist/: src/main.ts bundled into app-<hash>.js (and
// chunks/), the stylesheets public/app.css, xterm.js's and the Changes
// view's (diff2html's, restyled; its lazy chunk loads it) into
// app-<hash>.css, xterm-<hash>.css and changes-<hash>.css, plus the other
// static files in public/ and index.html, rewritten to refer to the hashed
// names and to preload the chunks the bundle imports. The hub's page
// (agentmux hub, issue 44) is a second page: src/hub/main.ts bundled on
// its own into hub-<hash>.js (agentmux's bundle and chunks stay as they
// are), src/hub/hub.css into hub-<hash>.css, and hub.html, which also
// loads app.css, rewritten the same way. The read-only viewer's page
// (share.html#<secret>) is a third, built as the hub's is:
// src/share/main.ts into share-<hash>.js, src/share/share.css into
// share-<hash>.css, and share.html, which also loads app.css and
// xterm.css. Every URL is
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

/** Files copied from public/ as they are; the pages are rewritten. */
const PUBLIC_BUILT = new Set(['index.html', 'hub.html', 'share.html', 'app.css']);

/** Each page, the entries it loads (rewritten to their hashed names) and its bundle, whose static imports it preloads. */
const PAGES = [
  { page: 'index.html', refs: ['app.js', 'app.css', 'xterm.css'], bundle: 'app.js' },
  { page: 'hub.html', refs: ['hub.js', 'app.css', 'hub.css'], bundle: 'hub.js' },
  { page: 'share.html', refs: ['share.js', 'xterm.css', 'app.css', 'share.css'], bundle: 'share.js' },
];
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
    { in: 'src/hub/hub.css', out: 'hub' },
    { in: 'src/share/share.css', out: 'share' },
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
 * The hub's page, bundled on its own: it shares agentmux's modules but not
 * its chunks, so that neither page's first load changes with the other.
 * @type {import('esbuild').BuildOptions}
 */
const hubScripts = {
  ...common,
  entryPoints: { hub: 'src/hub/main.ts' },
  format: 'esm',
};

/**
 * The read-only viewer's page, bundled on its own as the hub's is: it
 * shares agentmux's terminal modules but no chunk, and loads no WebGL
 * renderer chunk of its own until a terminal asks for it.
 * @type {import('esbuild').BuildOptions}
 */
const shareScripts = {
  ...common,
  entryPoints: { share: 'src/share/main.ts' },
  format: 'esm',
  splitting: true,
  chunkNames: 'chunks/[name]-[hash]',
};

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
 * Writes dist/<page> from public/<page> with each entry's reference
 * (./app.js, ./app.css, ./xterm.css for index.html) pointing at its hashed
 * name. A reference from the root (/app.js) would miss the page under a
 * proxy's path: refused.
 */
async function writePage({ page, refs, bundle }, names, preload) {
  let html = await readFile(join(here, 'public', page), 'utf8');
  const absolute = html.match(/\s(?:href|src)="\/(?!\/)[^"]*"/g);
  if (absolute) {
    throw new Error(`public/${page}: use URLs relative to the page (./x, not /x), so it works under a proxy's path: ${absolute.join(',')}`);
  }
  for (const plain of refs) {
    const ref = new RegExp(`(\\s(?:href|src)=")\\./${plain.replace('.', '\\.')}"`);
    if (!ref.test(html)) throw new Error(`public/${page} does not load ./${plain}`);
    html = html.replace(ref, `$1./${names.get(plain)}"`);
  }
  // The chunks the bundle imports are otherwise asked for only once it
  // has been read: a round trip more before it runs.
  const script = new RegExp(`<script type="module" src="\\./${names.get(bundle).replace('.', '\\.')}"></script>\n`);
  if (!script.test(html)) throw new Error(`public/${page}: the bundle's <script type="module"> not found`);
  html = html.replace(script, (tag) => tag + preload.map((f) => `<link rel="modulepreload" href="./${f}">\n`).join(''));
  await writeFile(join(dist, page), html);
}

/** Writes every page, each preloading what its bundle imports. */
async function writePages(names, metafiles) {
  for (const p of PAGES) await writePage(p, names, staticImportsOf(metafiles, names, p.bundle));
}

/** The files a bundle (app.js, hub.js, share.js) imports statically, relative to dist/. */
function staticImportsOf(metafiles, names, bundle) {
  const file = relative(here, join(dist, names.get(bundle)));
  const out = metafiles.map((m) => m.outputs[file]).find(Boolean);
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
  const keep = new Set(['.gitkeep', ...PAGES.map((p) => p.page)]);
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
  const [js, hub, share] = await Promise.all([esbuild.build(scripts(names)), esbuild.build(hubScripts), esbuild.build(shareScripts)]);
  for (const m of [js.metafile, hub.metafile, share.metafile]) for (const [k, v] of entryNamesOf(m)) names.set(k, v);
  await copyPublic();
  await writePages(names, [js.metafile, hub.metafile, share.metafile]);
  await finish([css.metafile, js.metafile, hub.metafile, share.metafile]);
} else {
  // Four watching contexts; after any rebuilds, dist/ is brought up to
  // date with the latest output of all.
  // One update at a time, so they cannot clean up each other's files.
  const latest = { css: null, js: null, hub: null, share: null };
  let updating = Promise.resolve();
  const update = async () => {
    if (!latest.css || !latest.js || !latest.hub || !latest.share) return;
    try {
      await copyPublic();
      const metafiles = [latest.css, latest.js, latest.hub, latest.share];
      const names = new Map(metafiles.flatMap((m) => [...entryNamesOf(m)]));
      await writePages(names, [latest.js, latest.hub, latest.share]);
      await finish(metafiles);
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
  const hub = await esbuild.context({ ...hubScripts, plugins: [after('hub')] });
  const share = await esbuild.context({ ...shareScripts, plugins: [after('share')] });
  await Promise.all([css.watch(), js.watch(), hub.watch(), share.watch()]);
}
