// The artifact pane: one workspace file, markdown rendered and sanitized,
// anything else as text. It reloads when file.changed names the open file,
// keeping the reader's scroll position. The file open is remembered: a
// reload opens it again.

import { api, ApiError, fileURL } from '../shared/api';
import { byId, h } from '../shared/dom';
import { shownName } from '../shared/paths';
import { isExternal, resolveWorkspacePath } from '../shared/links';
import { loadSetting, saveSetting } from '../shared/settings';

const IMAGE_EXT = /\.(png|jpe?g|gif|webp|svg|avif|bmp|ico)$/i;
const MARKDOWN_EXT = /\.(md|markdown|mdx)$/i;
const REFRESH_DEBOUNCE_MS = 150;
const PATH_KEY = 'agentmux.document';

export class ArtifactPane {
  private _path: string | null = null;
  /** Bumped per load, so a slow answer for an older request is dropped. */
  private loadId = 0;
  private refreshTimer: number | undefined;
  private readonly pathEl = byId('artifact-path');
  private readonly content = byId('artifact-content');
  private readonly scroller = byId('artifact-scroll');
  private readonly note = byId('artifact-note');
  private readonly raw = byId<HTMLAnchorElement>('artifact-raw');
  private readonly reload = byId<HTMLButtonElement>('artifact-reload');
  private readonly listeners: (() => void)[] = [];

  constructor(private readonly reveal: () => void) {
    this.reload.addEventListener('click', () => this.refresh());
    this.content.addEventListener('click', (ev) => this.onLinkClick(ev));
    this.renderEmpty();
  }

  get path(): string | null {
    return this._path;
  }

  /** Called whenever the open document changes. */
  onChange(fn: () => void): void {
    this.listeners.push(fn);
  }

  /** Opens the file open before the page was reloaded, if any. */
  restore(): void {
    const path = loadSetting(PATH_KEY);
    if (path && !this._path) this.open(path);
  }

  /** Opens a workspace-relative path. */
  open(path: string): void {
    if (path !== this._path) {
      this._path = path;
      saveSetting(PATH_KEY, path);
      this.scroller.scrollTop = 0;
      for (const fn of this.listeners) fn();
    }
    void this.load(false);
  }

  /** Reloads the open file, if any, soon (bursts of writes coalesce). */
  refreshSoon(): void {
    window.clearTimeout(this.refreshTimer);
    this.refreshTimer = window.setTimeout(() => this.refresh(), REFRESH_DEBOUNCE_MS);
  }

  refresh(): void {
    if (this._path) void this.load(true);
  }

  /** The open file was deleted: say so, keep what was shown. */
  markRemoved(): void {
    this.showNote('This file has been deleted. What you see is its last version.');
  }

  private renderEmpty(): void {
    this.pathEl.textContent = '';
    this.raw.hidden = true;
    this.reload.hidden = true;
    this.content.replaceChildren(
      h('div', { class: 'empty-state' },
        h('p', { class: 'empty-title', text: 'No document open' }),
        h('p', { text: 'Markdown the agent writes under docs/ opens here. Pick one from Documents or Activity.' }),
      ),
    );
  }

  private async load(keepScroll: boolean): Promise<void> {
    const path = this._path;
    if (!path) return;
    const id = ++this.loadId;
    this.pathEl.textContent = shownName(path);
    this.pathEl.title = shownName(path);
    this.raw.href = fileURL(path);
    this.raw.hidden = false;
    this.reload.hidden = false;
    this.content.setAttribute('aria-busy', 'true');
    const scroll = keepScroll ? this.scroller.scrollTop : 0;

    if (IMAGE_EXT.test(path)) {
      this.showNote(null);
      this.content.replaceChildren(h('img', { class: 'artifact-image', src: `${fileURL(path)}&t=${Date.now()}`, alt: path }));
      this.content.removeAttribute('aria-busy');
      return;
    }
    try {
      const { contentType, text } = await api.file(path);
      if (id !== this.loadId) return;
      this.showNote(null);
      if (MARKDOWN_EXT.test(path) || contentType.startsWith('text/markdown')) {
        // The renderer (marked, DOMPurify) loads with the first document.
        const { renderMarkdown } = await import('../shared/markdown');
        if (id !== this.loadId) return;
        const article = h('div', { class: 'markdown' });
        article.append(renderMarkdown(text, path));
        this.content.replaceChildren(article);
      } else if (isTextual(contentType, text)) {
        this.content.replaceChildren(h('pre', { class: 'plain', text }));
      } else {
        this.content.replaceChildren(
          h('div', { class: 'empty-state' },
            h('p', { class: 'empty-title', text: 'Not a text file' }),
            h('p', { text: `${contentType || 'unknown type'}: use Raw to download it.` }),
          ),
        );
      }
      this.scroller.scrollTop = scroll;
    } catch (err) {
      if (id !== this.loadId) return;
      const e = err as ApiError;
      const msg =
        e.status === 404 ? `${path} does not exist (any more).`
        : e.status === 403 ? `${path} is outside the workspace.`
        : e.status === 413 ? `${path} is too large to show here.`
        : e.message;
      if (keepScroll && this.content.childElementCount > 0 && e.status === 404) {
        this.markRemoved();
      } else {
        this.showNote(null);
        this.content.replaceChildren(
          h('div', { class: 'empty-state error' }, h('p', { class: 'empty-title', text: 'Cannot show this file' }), h('p', { text: msg })),
        );
      }
    } finally {
      if (id === this.loadId) this.content.removeAttribute('aria-busy');
    }
  }

  private showNote(text: string | null): void {
    this.note.hidden = text === null;
    this.note.textContent = text ?? '';
  }

  /** Relative links open in this pane; others in a new tab (set by the sanitizer). */
  private onLinkClick(ev: MouseEvent): void {
    const a = (ev.target as Element).closest('a');
    if (!a || !this._path) return;
    const href = a.getAttribute('href') ?? '';
    if (!href || isExternal(href)) return;
    ev.preventDefault();
    if (href.startsWith('#')) {
      const target = this.content.querySelector(`[id="${CSS.escape(decodeURIComponent(href.slice(1)))}"]`);
      target?.scrollIntoView({ block: 'start' });
      return;
    }
    const rel = href.startsWith('/') ? href.replace(/^\/+/, '') : resolveWorkspacePath(this._path, href);
    this.open(rel);
    this.reveal();
  }
}

function isTextual(contentType: string, text: string): boolean {
  if (/^(text\/|application\/(json|xml|yaml|toml|javascript|x-sh|x-yaml))/.test(contentType)) return true;
  // No NUL in the first few KiB: text enough to show.
  return !text.slice(0, 8192).includes('\u0000');
}
