// The workspace's run script (docs/protocol.md, "Workspace scripts"): a
// dev server a session starts in a run session of its own, beside its
// agent, on its ports. On an agent's session the header has Run (again
// to restart); on its run session, Restart and Stop run. A run session is
// listed as a session of its own, named after its session's ("feature ·
// run"), so its output has a tab.

import { api } from '../shared/api';
import { byId } from '../shared/dom';
import { isRunning, type SessionStore } from '../models/store';
import type { ToastKind } from '../shared/toast';
import type { Session } from '../shared/types';
import { act } from '../shared/actions';

export interface RunDeps {
  store: SessionStore;
  canAct(): boolean;
  /** Whether a run script is in force and may run. */
  mayRun(): boolean;
  toast(message: string, kind?: ToastKind): void;
  /** Shows a session: the run session once its run started. */
  select(id: string): void;
}

export class RunButtons {
  private readonly startBtn = byId<HTMLButtonElement>('run-start');
  private readonly startLabel = this.startBtn.querySelector<HTMLElement>('.btn-label')!;
  private readonly stopBtn = byId<HTMLButtonElement>('run-stop');
  /** An action is under way (actions.ts). */
  busy = false;

  constructor(private readonly deps: RunDeps) {
    this.startBtn.addEventListener('click', () => void act(this, 'The run did not start', () => this.start()));
    this.stopBtn.addEventListener('click', () => void act(this, 'The run did not stop', () => this.stop()));
    deps.store.subscribe(() => this.render());
    this.render();
  }

  /** The session the run belongs to, its run session, for the session on screen. */
  private pair(): { owner: Session; run: Session | undefined } | null {
    const s = this.deps.store.active?.session;
    if (!s) return null;
    const owner = s.runOf ? this.deps.store.get(s.runOf)?.session : s;
    if (!owner) return null;
    return { owner, run: this.deps.store.all().find((e) => e.session.runOf === owner.id)?.session };
  }

  render(): void {
    const p = this.pair();
    const archived = !!p?.owner.worktree?.archived;
    const may = !!p && !archived && this.deps.mayRun();
    const running = !!p?.run && isRunning(p.run);
    this.startBtn.hidden = !may;
    this.stopBtn.hidden = !may || !running;
    if (!p) return;
    this.startLabel.textContent = running ? 'Restart run' : 'Run';
    this.startBtn.title = running
      ? `Stop the run script of ${p.owner.name} and start it again`
      : `Start the workspace's run script for ${p.owner.name}, in a terminal of its own on its ports`;
    const disabled = !this.deps.canAct() || this.busy;
    this.startBtn.disabled = disabled;
    this.stopBtn.disabled = disabled;
  }

  toast(message: string, kind?: ToastKind): void {
    this.deps.toast(message, kind);
  }

  /** Starts (or restarts) the run of the session on screen, and shows it. */
  private async start(): Promise<void> {
    const p = this.pair();
    if (!p) return;
    const run = await api.startRun(p.owner.id);
    this.deps.store.upsert(run);
    this.deps.select(run.id);
  }

  private async stop(): Promise<void> {
    const p = this.pair();
    if (p) await api.stopRun(p.owner.id);
  }
}
