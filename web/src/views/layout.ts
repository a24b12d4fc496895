// Layout modes (terminal, artifact, split, changes), the draggable split, and
// following the agent's documents: layout.shift switches the layout and
// opens the document, unless the user turned that off, and never while
// they are typing. The mode is remembered: a reload comes back to it.
// Nothing here moves focus.

import { byId } from '../shared/dom';
import type { LayoutMode, LayoutShiftMessage } from '../shared/types';
import { loadSetting, saveSetting } from '../shared/settings';

const FOLLOW_KEY = 'agentmux.followDocs';
const SPLIT_KEY = 'agentmux.split';
const MODE_KEY = 'agentmux.layout';
/** A layout.shift waits until the user has not typed for this long. */
const TYPING_QUIET_MS = 2_000;

export const LAYOUT_MODES: readonly LayoutMode[] = ['terminal', 'artifact', 'split', 'changes', 'preview'];

export class LayoutController {
  private _mode: LayoutMode = 'terminal';
  private lastTypedAt = 0;
  private deferred: LayoutShiftMessage | null = null;
  private deferTimer: number | undefined;
  private readonly app = byId('app');
  private readonly follow = byId<HTMLInputElement>('follow-docs');
  private readonly panes = byId('panes');
  private readonly handle = byId('split-handle');
  private readonly listeners: ((mode: LayoutMode) => void)[] = [];

  /**
   * openDoc shows a document; stillWanted tells whether a layout.shift put
   * off while the user typed still applies (its session may no longer be
   * the one on screen).
   */
  constructor(
    private readonly openDoc: (path: string) => void,
    private readonly stillWanted: (msg: LayoutShiftMessage) => boolean = () => true,
  ) {
    this.follow.checked = loadSetting(FOLLOW_KEY) !== '0';
    this.follow.addEventListener('change', () => {
      saveSetting(FOLLOW_KEY, this.follow.checked ? '1' : '0');
      if (!this.follow.checked) this.cancelDeferred();
    });
    for (const mode of LAYOUT_MODES) {
      byId(`layout-${mode}`).addEventListener('click', () => this.set(mode));
    }
    const ratio = Number(loadSetting(SPLIT_KEY));
    if (ratio >= 0.2 && ratio <= 0.8) this.setSplit(ratio);
    this.initSplitDrag();
    const saved = loadSetting(MODE_KEY) as LayoutMode | null;
    this.set(saved && LAYOUT_MODES.includes(saved) ? saved : 'terminal');
  }

  /**
   * Tells the listeners the mode the page starts in, the one it had
   * before a reload: call once, when every view has subscribed.
   */
  start(): void {
    for (const fn of this.listeners) fn(this._mode);
  }

  get mode(): LayoutMode {
    return this._mode;
  }

  get following(): boolean {
    return this.follow.checked;
  }

  /** Called after every set(), with the new mode. */
  onChange(fn: (mode: LayoutMode) => void): void {
    this.listeners.push(fn);
  }

  set(mode: LayoutMode): void {
    this._mode = mode;
    saveSetting(MODE_KEY, mode);
    this.app.dataset.layout = mode;
    for (const m of LAYOUT_MODES) {
      byId(`layout-${m}`).setAttribute('aria-pressed', String(m === mode));
    }
    for (const fn of this.listeners) fn(mode);
  }

  /**
   * Shows the artifact pane if it is hidden: beside the terminal, or in
   * place of the Changes or Preview view (a file opened from it).
   */
  revealArtifact(): void {
    if (this._mode === 'terminal') this.set('split');
    else if (this._mode === 'changes' || this._mode === 'preview') this.set('artifact');
  }

  /** Call on every key the user types anywhere in the page. */
  noteTyping(): void {
    this.lastTypedAt = Date.now();
  }

  /** How long until the user has not typed for a while: what follows waits that long. */
  msUntilQuiet(): number {
    return Math.max(0, this.lastTypedAt + TYPING_QUIET_MS - Date.now());
  }

  /** The server suggests showing a document. */
  onShift(msg: LayoutShiftMessage): void {
    if (!this.following) return;
    this.deferred = msg;
    this.applyWhenQuiet();
  }

  private applyWhenQuiet(): void {
    window.clearTimeout(this.deferTimer);
    const wait = this.lastTypedAt + TYPING_QUIET_MS - Date.now();
    if (wait > 0) {
      this.deferTimer = window.setTimeout(() => this.applyWhenQuiet(), wait + 10);
      return;
    }
    const msg = this.deferred;
    this.deferred = null;
    if (!msg || !this.following || !this.stillWanted(msg)) return;
    if (LAYOUT_MODES.includes(msg.mode)) this.set(msg.mode);
    if (msg.path) this.openDoc(msg.path);
  }

  private cancelDeferred(): void {
    window.clearTimeout(this.deferTimer);
    this.deferred = null;
  }

  private setSplit(ratio: number): void {
    this.panes.style.setProperty('--split', String(ratio));
  }

  /** Drag the bar between the panes; the ratio is kept for next time. */
  private initSplitDrag(): void {
    let dragging = false;
    this.handle.addEventListener('pointerdown', (ev) => {
      dragging = true;
      this.handle.setPointerCapture(ev.pointerId);
      this.app.classList.add('resizing');
      ev.preventDefault();
    });
    this.handle.addEventListener('pointermove', (ev) => {
      if (!dragging) return;
      const r = this.panes.getBoundingClientRect();
      const vertical = getComputedStyle(this.panes).flexDirection === 'column';
      const ratio = vertical ? (ev.clientY - r.top) / r.height : (ev.clientX - r.left) / r.width;
      this.setSplit(Math.min(0.8, Math.max(0.2, ratio)));
    });
    const end = () => {
      if (!dragging) return;
      dragging = false;
      this.app.classList.remove('resizing');
      saveSetting(SPLIT_KEY, this.panes.style.getPropertyValue('--split'));
    };
    this.handle.addEventListener('pointerup', end);
    this.handle.addEventListener('pointercancel', end);
    this.handle.addEventListener('dblclick', () => {
      this.setSplit(0.5);
      saveSetting(SPLIT_KEY, '0.5');
    });
  }
}
