// The terminal pane: one TerminalView per session, created the first time
// the session is shown and kept (and streaming) until the session goes;
// the toolbar (stop, search), the scrollback search box, and the bar that
// offers Resume for a session whose process has ended. Typing into such a
// session wakes it (the server resumes it and hands it the keys): the
// header says "resuming…" until it runs.

import type { Terminal } from '@xterm/xterm';
import { byId, h, show } from '../shared/dom';
import { isRunning, setupHolds, type SessionStore } from '../models/store';
import { TerminalView } from './terminal';
import { attachTouch } from './touch';
import { listenForFiles } from './attach';
import type {
  ClientMessage, ErrorMessage, Permission, SessionAttachedMessage, SessionResizedMessage, TerminalExitMessage, TerminalOutputMessage,
} from '../shared/types';
import type { WsClient } from '../shared/ws';

/** A client frame above 1 MiB closes the connection (protocol.md section 1). */
const MAX_FRAME_BYTES = 1024 * 1024;
/** Paste pieces when a paste cannot go whole: 6 bytes per char at worst, escaped. */
const PASTE_PIECE_CHARS = 128 * 1024;
/** "resuming…" shows at least this long, so that it is read rather than flickers. */
const WAKING_MIN_MS = 1_200;
/** Without a word from the server by then, "resuming…" gives up. */
const WAKING_MAX_MS = 30_000;
/** After a failed wake, this session's repeated errors (one per key in flight) and keys are dropped this long. */
const WAKE_FAILED_QUIET_MS = 3_000;

/** A session woken by typing into it (protocol.md, terminal.input): until it runs, or its resume fails. */
interface Waking {
  since: number;
  /** A session.status said it runs: "resuming…" ends once shown long enough. */
  ran?: boolean;
  /** When its resume failed (the error was shown): then quiet for a while. */
  failedAt?: number;
  timer?: number;
}

export interface TerminalPaneDeps {
  store: SessionStore;
  ws: WsClient;
  /** Whether actions may be taken (connected, not shutting down). */
  canAct(): boolean;
  keyFilter(ev: KeyboardEvent): boolean;
  /** The user typed or pasted into a session. */
  onUserInput(sessionId: string): void;
  toast(message: string, kind?: 'info' | 'error'): void;
  /** This page's connection id (client.welcome): who a session.resized names. */
  meId(): string | null;
  /** What the user typed, made what it stands for (the key bar's latched Ctrl). */
  rewriteInput?(data: string): string;
  /** Keys typed into a session its setup holds (setupHolds): they wake nothing. */
  onSetupHold?(): void;
}

export class TerminalPane {
  /** Every session's terminal, by session id: window.__agentmux.terminals. */
  readonly terminals = new Map<string, Terminal>();
  private readonly views = new Map<string, TerminalView>();
  private readonly stack = byId('terms');
  private readonly title = byId('term-title');
  private readonly meta = byId('term-meta');
  private readonly flowNote = byId('term-flow');
  private readonly resumingNote = byId('term-resuming');
  private readonly permissionNote = byId('term-permission');
  private readonly permissionTool = byId('term-permission-tool');
  private readonly permissionSummary = byId('term-permission-summary');
  private readonly stopBtn = byId<HTMLButtonElement>('stop');
  private readonly searchBtn = byId<HTMLButtonElement>('search-toggle');
  private readonly resumeBar = byId('resume-bar');
  private readonly resumeText = byId('resume-text');
  private readonly resumeBtn = byId<HTMLButtonElement>('resume');
  private readonly empty = byId('term-empty');
  private readonly searchBox = byId('search');
  private readonly searchInput = byId<HTMLInputElement>('search-input');
  private readonly searchCount = byId('search-count');
  private shownId: string | null = null;
  /** Sessions woken by typing, by id. */
  private readonly waking = new Map<string, Waking>();
  /** Sessions this page created whose terminal is not built yet: it takes their size. */
  private readonly claims = new Set<string>();
  /**
   * "Fit to this window", shown while this page watches a session drawn at
   * another size: it gives the session this page's size, for everyone. On
   * a touch screen it is the screen that the session is fitted to.
   */
  private readonly fitName = matchMedia('(pointer: coarse)').matches ? 'Fit to this screen' : 'Fit to this window';
  private readonly fitBtn = h(
    'button',
    { class: 'btn btn-small btn-ghost fit-btn', type: 'button', 'aria-label': this.fitName, 'data-testid': 'fit', hidden: true },
    svgIcon('M2.5 6V2.5H6M10 2.5h3.5V6M13.5 10v3.5H10M6 13.5H2.5V10'),
    h('span', { class: 'fit-size' }),
    h('span', { class: 'btn-label' }, this.fitName),
  );

  constructor(private readonly deps: TerminalPaneDeps) {
    this.stopBtn.addEventListener('click', () => {
      const id = this.deps.store.activeId;
      if (id) this.send({ type: 'terminal.interrupt', sessionId: id });
    });
    this.resumeBtn.addEventListener('click', () => {
      const id = this.deps.store.activeId;
      if (id && this.send({ type: 'session.resume', sessionId: id })) {
        this.resumeBtn.disabled = true; // until the status comes back
        this.resumeBtn.textContent = 'Resuming…';
      }
    });
    this.searchBtn.addEventListener('click', () => (this.searchBox.hidden ? this.openSearch() : this.closeSearch()));
    this.searchInput.addEventListener('input', () => this.find('incremental'));
    this.searchInput.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter') {
        ev.preventDefault();
        this.find(ev.shiftKey ? 'previous' : 'next');
      } else if (ev.key === 'Escape') {
        ev.preventDefault();
        this.closeSearch();
      }
    });
    this.searchBtn.before(this.fitBtn);
    this.fitBtn.addEventListener('click', () => {
      if (this.deps.canAct()) this.activeView?.take();
    });
    byId('search-next').addEventListener('click', () => this.find('next'));
    byId('search-prev').addEventListener('click', () => this.find('previous'));
    byId('search-close').addEventListener('click', () => this.closeSearch());
    deps.store.subscribe(() => this.render());
    document.addEventListener('visibilitychange', () => this.render());
  }

  get activeView(): TerminalView | undefined {
    const id = this.deps.store.activeId;
    return id ? this.views.get(id) : undefined;
  }

  private send(msg: ClientMessage): boolean {
    if (!this.deps.canAct()) return false;
    return this.deps.ws.send(msg);
  }

  /** Shows the active session, creating its terminal the first time. */
  render(): void {
    const { store } = this.deps;
    // Drop the terminals of sessions that are gone.
    for (const [id, view] of this.views) {
      if (!store.has(id)) {
        view.dispose();
        this.views.delete(id);
        this.terminals.delete(id);
      }
    }
    this.checkWaking();
    const entry = store.active;
    show(this.empty, !entry);
    const id = entry?.session.id ?? null;
    let view = id ? this.views.get(id) : undefined;
    if (entry && !view) {
      view = new TerminalView(entry.session.id, this.stack, entry.session, {
        send: (m) => {
          if (m.type === 'session.attach') this.deps.store.attachSent(m.sessionId);
          return this.deps.ws.send(m);
        },
        onInput: (sid, data) => this.input(sid, data),
        keyFilter: this.deps.keyFilter,
        onFlowChange: (sid, paused) => {
          if (sid === this.deps.store.activeId) show(this.flowNote, paused);
        },
        // A view replaces its terminal once a reload's scrollback is in.
        onTerminal: (sid, term) => this.terminals.set(sid, term),
        onSearchResults: (sid, index, count) => {
          if (sid === this.deps.store.activeId) this.showCount(index, count);
        },
        onSizing: (sid) => {
          if (sid === this.deps.store.activeId) this.renderFit();
        },
      }, this.deps.ws.isOpen);
      this.views.set(entry.session.id, view);
      const touched = view;
      attachTouch(view.host, () => touched.term, { toast: this.deps.toast });
      listenForFiles(view.host, entry.session.id, () => touched.term, { toast: this.deps.toast, canAct: this.deps.canAct });
      if (this.claims.delete(entry.session.id)) view.take();
    }
    const visible = document.visibilityState === 'visible';
    for (const [vid, v] of this.views) {
      v.host.hidden = vid !== id;
      // Only what the user watches may hold the program back.
      v.setPacing(vid === id && visible);
    }
    if (id !== this.shownId) {
      this.shownId = id;
      if (view) {
        view.fitAndReport();
        show(this.flowNote, view.isPaused);
      }
      if (!this.searchBox.hidden) this.find('incremental');
    }
    this.renderChrome();
  }

  /** The toolbar and the resume bar, for the active session. */
  renderChrome(): void {
    const entry = this.deps.store.active;
    const view = this.activeView;
    const canAct = this.deps.canAct();
    show(this.stopBtn, !!entry);
    this.searchBtn.hidden = !entry;
    this.renderFit();
    if (!entry) {
      this.title.textContent = '';
      this.meta.textContent = '';
      this.resumeBar.hidden = true;
      this.resumingNote.hidden = true;
      this.permissionNote.hidden = true;
      return;
    }
    const s = entry.session;
    const running = isRunning(s);
    this.title.textContent = s.name;
    this.meta.textContent = s.worktree ? `${s.agent} · ${s.worktree.branch} · ${s.cwd}` : `${s.agent} · ${s.cwd}`;
    this.meta.title = `${s.command.join(' ')}\n${view ? `${view.term.cols}×${view.term.rows}, ${view.renderer} renderer` : ''}`;
    this.stopBtn.disabled = !canAct || !running;
    this.stopBtn.title = running ? 'Send Ctrl+C (interrupt) to the agent' : 'The agent is not running';
    const w = this.waking.get(s.id);
    const waking = !!w && w.failedAt === undefined;
    show(this.resumingNote, waking);
    this.renderPermission(entry.permission, entry.reason);
    // A setup that did not pass has its own bar (setup.ts).
    this.resumeBar.hidden = running || waking || setupHolds(s);
    if (!running) {
      // An archived session's worktree is gone: nothing can resume it.
      const archived = !!s.worktree?.archived;
      this.resumeBar.dataset.status = s.status;
      this.resumeText.textContent = archived
        ? `Archived: its branch ${s.worktree?.branch} was merged and its worktree removed; the branch is kept.`
        : describeEnded(s.status, entry.reason, s.exitCode);
      this.resumeText.title = this.resumeText.textContent;
      this.resumeBtn.hidden = archived;
      this.resumeBtn.disabled = !canAct || entry.closing;
      this.resumeBtn.textContent = 'Resume';
    }
  }

  /** The permission the active session's agent waits for, if any: the tool, what it acts on, the reason as tooltip. */
  private renderPermission(p: Permission | null, reason: string): void {
    show(this.permissionNote, !!p);
    if (!p) return;
    this.permissionTool.textContent = p.tool;
    this.permissionSummary.textContent = p.summary ?? '';
    this.permissionSummary.hidden = !p.summary;
    this.permissionNote.title = reason || `The agent asks to use ${p.tool}${p.summary ? ` on ${p.summary}` : ''}`;
  }

  /** Keys from elsewhere than the keyboard (an answer card): the same path as typing. */
  type(sessionId: string, data: string): void {
    this.input(sessionId, data);
  }

  /**
   * Keys and pastes from xterm. A paste is one message, so it arrives
   * whole. Typing into a session whose agent is not running wakes it: the
   * server resumes it and hands it the keys once it reads its terminal.
   */
  private input(sessionId: string, data: string): void {
    const entry = this.deps.store.get(sessionId);
    if (!entry) return;
    if (this.deps.rewriteInput && !isTerminalReport(data) && !isMouseReport(data)) data = this.deps.rewriteInput(data);
    if (setupHolds(entry.session)) {
      // Its setup did not pass: a key starts nothing; its bar says what can.
      if (!isTerminalReport(data) && !isMouseReport(data)) this.deps.onSetupHold?.();
      return;
    }
    if (!isRunning(entry.session)) {
      // xterm's own reports (focus, a click's mouse report) wake nothing;
      // control keys alone (Ctrl+C, Ctrl+D at an agent that just ended)
      // do not either, as the server has it: they point at Resume.
      if (entry.closing || entry.session.worktree?.archived || isTerminalReport(data) || isMouseReport(data)) return;
      if (!wakes(data)) {
        this.resumeBar.classList.remove('nudge');
        void this.resumeBar.offsetWidth; // restart the animation
        this.resumeBar.classList.add('nudge');
        return;
      }
      const w = this.waking.get(sessionId);
      if (w?.failedAt !== undefined && Date.now() - w.failedAt < WAKE_FAILED_QUIET_MS) return;
      if (!this.deps.canAct()) {
        this.deps.toast('Not connected to the server: keys are not sent.', 'error');
        return;
      }
      this.wake(sessionId);
    } else if (!this.deps.canAct()) {
      this.deps.toast('Not connected to the server: keys are not sent.', 'error');
      return;
    }
    // xterm's own replies (focus, cursor and device reports) are not the
    // user answering; the server tells them apart the same way.
    if (!isTerminalReport(data)) {
      this.deps.onUserInput(sessionId);
      // Typing takes the session's size, as the server has it.
      this.views.get(sessionId)?.typed();
    }
    const frame = JSON.stringify({ type: 'terminal.input', sessionId, data });
    if (frame.length * 3 < MAX_FRAME_BYTES || new TextEncoder().encode(frame).length < MAX_FRAME_BYTES) {
      this.deps.ws.sendRaw(frame);
      return;
    }
    // Over the server's frame limit: in order, in pieces, rather than
    // having the connection closed (1009). Never split a surrogate pair.
    for (let i = 0; i < data.length; ) {
      let end = Math.min(data.length, i + PASTE_PIECE_CHARS);
      const last = data.charCodeAt(end - 1);
      if (end < data.length && last >= 0xd800 && last <= 0xdbff) end--;
      this.deps.ws.send({ type: 'terminal.input', sessionId, data: data.slice(i, end) });
      i = end;
    }
    this.deps.toast(`Large paste (${Math.round(data.length / 1024)} KiB) sent in pieces.`);
  }

  /** Shows "resuming…" for a session the user is waking by typing. */
  private wake(sessionId: string): void {
    const w = this.waking.get(sessionId);
    if (w && w.failedAt === undefined) return;
    if (w) window.clearTimeout(w.timer);
    const next: Waking = { since: Date.now() };
    next.timer = window.setTimeout(() => this.endWaking(sessionId, next), WAKING_MAX_MS);
    this.waking.set(sessionId, next);
    this.renderChrome();
  }

  /** A session woken by typing runs now (a session.status said so): "resuming…" ends. */
  private checkWaking(): void {
    for (const [id, w] of this.waking) {
      const entry = this.deps.store.get(id);
      if (!entry) {
        window.clearTimeout(w.timer);
        this.waking.delete(id);
      } else if (!w.ran && w.failedAt === undefined && isRunning(entry.session)) {
        w.ran = true;
        window.clearTimeout(w.timer);
        w.timer = window.setTimeout(() => this.endWaking(id, w), Math.max(0, w.since + WAKING_MIN_MS - Date.now()));
      }
    }
  }

  private endWaking(sessionId: string, w: Waking): void {
    if (this.waking.get(sessionId) !== w) return;
    window.clearTimeout(w.timer);
    this.waking.delete(sessionId);
    if (sessionId === this.deps.store.activeId) this.renderChrome();
  }

  /**
   * An error for a session being woken: its resume failed. The first is
   * shown (reports false: the caller shows it) and ends "resuming…"; the
   * same error for the keys that were on their way is dropped (reports
   * true), once.
   */
  onServerError(m: ErrorMessage): boolean {
    const w = m.sessionId ? this.waking.get(m.sessionId) : undefined;
    if (!w || !m.sessionId) return false;
    if (w.failedAt !== undefined) return Date.now() - w.failedAt < WAKE_FAILED_QUIET_MS;
    if (w.ran) return false; // it runs: this error is about something else
    window.clearTimeout(w.timer);
    w.failedAt = Date.now();
    const id = m.sessionId;
    w.timer = window.setTimeout(() => this.endWaking(id, w), WAKE_FAILED_QUIET_MS);
    if (id === this.deps.store.activeId) this.renderChrome();
    return false;
  }

  onAttached(m: SessionAttachedMessage): void {
    this.views.get(m.sessionId)?.onAttached(m);
  }

  onResized(m: SessionResizedMessage): void {
    this.views.get(m.sessionId)?.onResized(m, m.by !== '' && m.by === this.deps.meId());
  }

  /**
   * A session this page just created: it takes the session's size, as the
   * one who will type there, rather than show it at the server's default.
   */
  claimSize(sessionId: string): void {
    const view = this.views.get(sessionId);
    if (view) view.take();
    else this.claims.add(sessionId);
  }

  /** "Fit to this window" and the size it would change, for the active session. */
  private renderFit(): void {
    const sizing = this.activeView?.sizing;
    const own = sizing?.own;
    const offer = !!sizing && !sizing.holding && !!own && (own.cols !== sizing.session.cols || own.rows !== sizing.session.rows);
    this.fitBtn.hidden = !offer;
    if (!offer || !sizing || !own) return;
    const { cols, rows } = sizing.session;
    this.fitBtn.querySelector('.fit-size')!.textContent = `${cols}×${rows}`;
    this.fitBtn.title =
      `Shown at the session's size, ${cols}×${rows}, set by whoever typed last. ` +
      `Fit resizes it to this ${this.fitName.slice(12)} (${own.cols}×${own.rows}) for everyone; typing here does too.`;
    this.fitBtn.disabled = !this.deps.canAct();
  }

  onOutput(m: TerminalOutputMessage): void {
    this.views.get(m.sessionId)?.onOutput(m);
  }

  onExit(m: TerminalExitMessage): void {
    this.deps.store.setExitCode(m.sessionId, m.exitCode);
  }

  /** A new connection: re-attach every terminal from its last seq, and re-send its size. */
  onConnected(): void {
    for (const v of this.views.values()) v.attachIfDetached();
    this.renderChrome();
  }

  onDisconnected(): void {
    for (const v of this.views.values()) v.connectionLost();
    this.renderChrome();
  }

  focusActive(): void {
    this.activeView?.focus();
  }

  openSearch(): void {
    if (!this.activeView) return;
    this.searchBox.hidden = false;
    this.searchBtn.setAttribute('aria-pressed', 'true');
    // Called from Ctrl+Shift+F or the search button: a user gesture.
    this.searchInput.focus();
    this.searchInput.select();
    if (this.searchInput.value) this.find('incremental');
  }

  closeSearch(): void {
    this.searchBox.hidden = true;
    this.searchBtn.setAttribute('aria-pressed', 'false');
    for (const v of this.views.values()) v.clearSearch();
    this.searchCount.textContent = '';
    this.focusActive(); // back where the user was typing (Escape or a click)
  }

  private find(how: 'next' | 'previous' | 'incremental'): void {
    const view = this.activeView;
    const text = this.searchInput.value;
    if (!view) return;
    if (!text) {
      view.clearSearch();
      this.searchCount.textContent = '';
      return;
    }
    const found = how === 'previous' ? view.findPrevious(text) : view.findNext(text, how === 'incremental');
    this.searchBox.classList.toggle('no-match', !found);
  }

  private showCount(index: number, count: number): void {
    if (count === 0) this.searchCount.textContent = 'no matches';
    else if (index < 0) this.searchCount.textContent = `${count}+ matches`;
    else this.searchCount.textContent = `${index + 1} of ${count}`;
  }
}

// What xterm.js sends on its own, never typed: focus in and out (ESC [ I,
// ESC [ O), cursor position (ESC [ row;col R), device attributes
// (ESC [ ? ... c, ESC [ > ... c), mode reports (ESC [ ... $ y), and OSC or
// DCS answers. The same rule as the server's isTerminalReport
// (sessions/attention.go).
const TERMINAL_REPORT =
  /\x1b\[[IO]|\x1b\[[0-9;$][0-9;?>$]*R|\x1b\[[?>][0-9;?>$]*c|\x1b\[[0-9;?>$]*\$y|\x1b\][\s\S]*?(?:\x07|\x1b\\)|\x1bP[\s\S]*?\x1b\\/y;

/** Reports whether data is nothing but terminal reports (see TERMINAL_REPORT). */
export function isTerminalReport(data: string): boolean {
  let i = 0;
  while (i < data.length) {
    TERMINAL_REPORT.lastIndex = i;
    const m = TERMINAL_REPORT.exec(data);
    if (!m || m[0].length === 0) return false;
    i += m[0].length;
  }
  return true;
}

// Mouse reports xterm.js sends for a click or the wheel while the program
// asked for them: X10 (ESC [ M and three bytes), SGR (ESC [ < b;x;y M or m)
// and urxvt (ESC [ b;x;y M).
const MOUSE_REPORT = /\x1b\[M[\s\S]{3}|\x1b\[<\d+;\d+;\d+[Mm]|\x1b\[\d+;\d+;\d+M/y;

/**
 * Reports whether keys typed into a session with no process resume it:
 * Enter or any printable key does, control keys alone do not (the
 * server's rule, sessions/wake.go).
 */
function wakes(data: string): boolean {
  for (let i = 0; i < data.length; i++) {
    const c = data.charCodeAt(i);
    if (c === 0x0d || (c >= 0x20 && c !== 0x7f)) return true;
  }
  return false;
}

/** Reports whether data is nothing but mouse reports (see MOUSE_REPORT). */
export function isMouseReport(data: string): boolean {
  let i = 0;
  while (i < data.length) {
    MOUSE_REPORT.lastIndex = i;
    const m = MOUSE_REPORT.exec(data);
    if (!m || m[0].length === 0) return false;
    i += m[0].length;
  }
  return data.length > 0;
}

function describeEnded(status: string, reason: string, exitCode?: number): string {
  switch (status) {
    case 'idle':
      return 'Restored after a restart: this is the last saved screen.';
    case 'error':
      return `The agent failed: ${reason || (exitCode !== undefined ? `exited with code ${exitCode}` : 'unknown error')}.`;
    default:
      return reason && reason !== 'stopped' ? `The agent ended: ${reason}.` : 'The agent was stopped.';
  }
}

/** A 16-pixel stroked icon, as the header's others. */
function svgIcon(path: string): SVGSVGElement {
  const ns = 'http://www.w3.org/2000/svg';
  const svg = document.createElementNS(ns, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('aria-hidden', 'true');
  const p = document.createElementNS(ns, 'path');
  p.setAttribute('d', path);
  svg.append(p);
  return svg;
}
