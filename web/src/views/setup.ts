// A worktree session's setup script (docs/protocol.md, "Workspace
// scripts"): it runs in the session's own terminal before the agent. The
// terminal's header says so while it runs, with how long it has taken;
// when it did not pass, the agent waits, and the header offers Retry,
// starting the agent anyway, and a shell in the worktree to look.

import { api } from '../shared/api';
import { byId } from '../shared/dom';
import { setupHolds, type SessionStore } from '../models/store';
import type { ToastKind } from '../shared/toast';
import type { SessionSetup } from '../shared/types';
import { act } from '../shared/actions';

export interface SetupDeps {
  store: SessionStore;
  canAct(): boolean;
  toast(message: string, kind?: ToastKind): void;
  /** Shows a session (the shell opened in the worktree). */
  select(id: string): void;
}

export class SetupBar {
  private readonly note = byId('setup-note');
  private readonly bar = byId('setup-bar');
  private readonly text = byId('setup-text');
  private readonly retryBtn = byId<HTMLButtonElement>('setup-retry');
  private readonly startBtn = byId<HTMLButtonElement>('setup-start');
  private readonly shellBtn = byId<HTMLButtonElement>('setup-shell');
  /** Ticks the elapsed time while a setup on screen runs. */
  private timer: number | undefined;
  /** An action is under way (actions.ts). */
  busy = false;

  constructor(private readonly deps: SetupDeps) {
    const onActive = (failed: string, call: (id: string) => Promise<unknown>) => () => {
      const id = deps.store.activeId;
      if (id) void act(this, failed, async () => void (await call(id)));
    };
    this.retryBtn.addEventListener('click', onActive('Not retried', api.retrySetup));
    this.startBtn.addEventListener('click', onActive('Not started', api.resume));
    this.shellBtn.addEventListener('click', () => void act(this, 'No shell', () => this.openShell()));
    deps.store.subscribe(() => this.render());
    this.render();
  }

  /** Typing into a session held by its setup points here. */
  nudge(): void {
    this.bar.classList.remove('nudge');
    void this.bar.offsetWidth; // restart the animation
    this.bar.classList.add('nudge');
  }

  render(): void {
    const s = this.deps.store.active?.session;
    const u = s?.setup;
    const running = !!u && u.status === 'running';
    this.note.hidden = !running;
    // The time first: a long script's line is cut at the end.
    if (running) {
      this.note.textContent = `Setting up · ${elapsed(u)}: ${firstLine(u.script)}`;
      this.note.title = `The worktree's setup script runs; the agent starts when it succeeds.\n${u.script}`;
    }
    this.tick(running);
    const holds = !!s && setupHolds(s);
    this.bar.hidden = !holds;
    if (!holds || !s || !u) return;
    this.text.textContent = describe(u);
    this.text.title = `${this.text.textContent}: the agent has not started.\n${u.script}`;
    const canAct = this.deps.canAct() && !this.busy;
    this.retryBtn.disabled = !canAct;
    this.startBtn.disabled = !canAct;
    this.shellBtn.disabled = !canAct || !s.worktree;
  }

  private tick(on: boolean): void {
    if (on && this.timer === undefined) this.timer = window.setInterval(() => this.render(), 1000);
    if (!on && this.timer !== undefined) {
      window.clearInterval(this.timer);
      this.timer = undefined;
    }
  }

  toast(message: string, kind?: ToastKind): void {
    this.deps.toast(message, kind);
  }

  /** A shell session in the worktree on screen, shown. */
  private async openShell(): Promise<void> {
    const s = this.deps.store.active?.session;
    if (!s?.worktree) return;
    const shell = await api.createSession({ name: `${s.name} shell`, agent: 'shell', cwd: s.worktree.path });
    this.deps.store.upsert(shell);
    this.deps.select(shell.id);
  }
}

function describe(u: SessionSetup): string {
  switch (u.status) {
    case 'failed':
      return `Setup failed${u.exitCode >= 0 ? ` (exit ${u.exitCode})` : ''}`;
    case 'interrupted':
      return 'Setup interrupted by a restart';
    default:
      return 'Setup stopped';
  }
}

function firstLine(script: string): string {
  return script.trim().split('\n')[0] ?? '';
}

function elapsed(u: SessionSetup): string {
  const ms = Math.max(0, Date.now() - Date.parse(u.startedAt));
  const s = Math.floor(ms / 1000);
  return s < 60 ? `${s} s` : `${Math.floor(s / 60)} min ${s % 60} s`;
}
