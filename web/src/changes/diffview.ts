// Renders one file's git patch: diff2html draws it (unified or side by
// side), highlight.js colours the code, DOMPurify keeps what comes out
// inert. A lazy chunk, with its stylesheet (dist/changes-<hash>.css):
// loaded with the first Changes view, never by the first screen.
//
// Patches are untrusted (an agent names and writes the files). diff2html
// escapes file names and lines when it makes its HTML, and highlight.js
// escapes the text it colours; on top of that the HTML is parsed in an
// inert <template> (nothing in it loads or runs), coloured there, and
// sanitized before it enters the page: no script, no event handler, no
// element that loads anything, no style attribute.

import { html, parse } from 'diff2html';
import type { ColorSchemeType } from 'diff2html/lib-esm/types';
import { closeTags, getLanguage, mergeStreams, nodeStream } from 'diff2html/lib-esm/ui/js/highlight.js-helpers';
import { hljs } from 'diff2html/lib-esm/ui/js/highlight.js-slim';
import createDOMPurify from 'dompurify';

export type DiffView = 'unified' | 'split';

/** Patches longer than this are drawn without syntax colours (it costs). */
const MAX_HIGHLIGHT_CHARS = 256 * 1024;
const MAX_HIGHLIGHT_LINES = 4000;
/** A file with more changed lines than this is not drawn (diff2html's own limit). */
const MAX_CHANGES = 20_000;
/**
 * The stylesheet, relative to the page (./changes-<hash>.css), as
 * build.mjs named it.
 */
declare const __CHANGES_STYLESHEET__: string;
const STYLESHEET = __CHANGES_STYLESHEET__;

const purify = createDOMPurify(window);

const FORBID_TAGS = [
  'script', 'style', 'iframe', 'frame', 'frameset', 'object', 'embed', 'applet', 'form', 'input', 'button',
  'textarea', 'select', 'option', 'base', 'link', 'meta', 'template', 'portal', 'img', 'image', 'picture',
  'source', 'video', 'audio', 'track', 'svg', 'math', 'a', 'area', 'map',
];
const FORBID_ATTR = ['style', 'href', 'src', 'srcset', 'action', 'formaction', 'ping', 'background', 'poster', 'xlink:href'];

/** Resolves once the diff stylesheet has loaded (or failed to: the diff still shows). */
export const ready: Promise<void> = loadStylesheet(STYLESHEET);

function loadStylesheet(href: string): Promise<void> {
  return new Promise((resolve) => {
    if (document.querySelector(`link[data-stylesheet="changes"]`)) {
      resolve();
      return;
    }
    const link = document.createElement('link');
    link.rel = 'stylesheet';
    link.href = href;
    link.dataset.stylesheet = 'changes';
    link.addEventListener('load', () => resolve(), { once: true });
    link.addEventListener('error', () => resolve(), { once: true });
    document.head.append(link);
  });
}

export interface RenderedPatch {
  /** The diff, sanitized, ready to insert; null when the patch has no hunks to draw. */
  node: DocumentFragment | null;
  /** The highlight.js language the code was coloured as, or null when it was not. */
  language: string | null;
}

/** highlight.js's name for a file's language, from its name; null for plain text. */
export function languageOf(path: string): string | null {
  const name = path.slice(path.lastIndexOf('/') + 1);
  const lower = name.toLowerCase();
  let lang: string;
  if (lower === 'makefile' || lower === 'gnumakefile') lang = 'makefile';
  else if (lower === 'dockerfile' || lower.startsWith('dockerfile.')) lang = 'dockerfile';
  else {
    const dot = name.lastIndexOf('.');
    if (dot <= 0) return null;
    lang = getLanguage(name.slice(dot + 1).toLowerCase());
  }
  if (lang === 'plaintext' || !hljs.getLanguage(lang)) return null;
  return lang;
}

/** Draws a file's patch, unified or side by side. */
export function renderPatch(patch: string, path: string, view: DiffView): RenderedPatch {
  const files = parse(patch, { diffMaxChanges: MAX_CHANGES });
  if (!files.some((f) => f.blocks.length > 0)) return { node: null, language: null };
  const markup = html(files, {
    outputFormat: view === 'split' ? 'side-by-side' : 'line-by-line',
    drawFileList: false,
    matching: 'lines',
    diffStyle: 'word',
    colorScheme: 'dark' as ColorSchemeType,
    renderNothingWhenEmpty: false,
  });

  // Inert: a template's content has no browsing context.
  const tpl = document.createElement('template');
  tpl.innerHTML = markup;
  const root = tpl.content;
  // The file's own header is ours (textContent only); diff2html's goes.
  for (const el of root.querySelectorAll('.d2h-file-header')) el.remove();

  let language = languageOf(path);
  const lines = root.querySelectorAll<HTMLElement>('.d2h-code-line-ctn');
  if (language && (patch.length > MAX_HIGHLIGHT_CHARS || lines.length > MAX_HIGHLIGHT_LINES)) language = null;
  if (language) highlight(lines, language);

  const node = purify.sanitize(root, {
    USE_PROFILES: { html: true },
    FORBID_TAGS,
    FORBID_ATTR,
    RETURN_DOM_FRAGMENT: true,
  });
  syncSideScroll(node);
  numberLines(node, view);
  return { node, language };
}

/**
 * Marks the line numbers a review comment can be on (review.ts), after
 * sanitizing, from the numbers diff2html wrote: an added or unchanged
 * line's cell gets data-line, its number in the file as it is now, which
 * is what a comment names; a deleted line's gets data-deleted, as the file
 * no longer has it. Side by side, an unchanged line's old-side cell gets
 * the number of its new-side twin, on the same row of the other table.
 */
function numberLines(root: ParentNode, view: DiffView): void {
  if (view === 'unified') {
    for (const td of root.querySelectorAll<HTMLElement>('td.d2h-code-linenumber')) {
      const line = lineNumber(td.querySelector('.line-num2'));
      if (line) td.dataset.line = String(line);
      else if (lineNumber(td.querySelector('.line-num1'))) td.dataset.deleted = '';
    }
    return;
  }
  for (const files of root.querySelectorAll('.d2h-files-diff')) {
    const [left, right] = [...files.querySelectorAll('.d2h-file-side-diff')].map((side) => [...side.querySelectorAll('tr')]);
    if (!left || !right) continue;
    right.forEach((tr, i) => {
      const td = tr.querySelector<HTMLElement>('td.d2h-code-side-linenumber');
      const line = lineNumber(td);
      if (!td || !line) return;
      td.dataset.line = String(line);
      const twin = left[i]?.querySelector<HTMLElement>('td.d2h-code-side-linenumber.d2h-cntx');
      if (twin && lineNumber(twin)) twin.dataset.line = String(line);
    });
    for (const td of files.querySelectorAll<HTMLElement>('td.d2h-code-side-linenumber.d2h-del')) {
      if (lineNumber(td)) td.dataset.deleted = '';
    }
  }
}

function lineNumber(el: Element | null | undefined): number | null {
  const n = Number(el?.textContent?.trim() || NaN);
  return Number.isInteger(n) && n > 0 ? n : null;
}

/**
 * Colours each code line as diff2html's UI does: highlight.js on the
 * line's text, merged with the <ins>/<del> marks of the changed words.
 * Runs on the inert template; highlight.js escapes the text it returns.
 */
function highlight(lines: NodeListOf<HTMLElement>, language: string): void {
  for (const line of lines) {
    const text = line.textContent;
    if (!text) continue;
    const result = closeTags(hljs.highlight(text, { language, ignoreIllegals: true }));
    const original = nodeStream(line);
    if (original.length) {
      const scratch = line.ownerDocument.createElement('div');
      scratch.innerHTML = result.value;
      result.value = mergeStreams(original, nodeStream(scratch), text);
    }
    line.classList.add('hljs');
    line.innerHTML = result.value;
  }
}

/** Side by side: the two halves scroll sideways together. */
function syncSideScroll(root: ParentNode): void {
  for (const files of root.querySelectorAll('.d2h-files-diff')) {
    const [left, right] = files.querySelectorAll<HTMLElement>('.d2h-file-side-diff');
    if (!left || !right) continue;
    // Setting the same position again fires no scroll event: no loop.
    const follow = (from: HTMLElement, to: HTMLElement) => () => {
      if (to.scrollLeft !== from.scrollLeft) to.scrollLeft = from.scrollLeft;
    };
    left.addEventListener('scroll', follow(left, right), { passive: true });
    right.addEventListener('scroll', follow(right, left), { passive: true });
  }
}
