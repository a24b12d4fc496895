// Trust before anything runs (docs/protocol.md, "Workspace scripts"): a
// repository's scripts (agentmux.json, conductor.json) run only once a
// person has read and approved their text. The dialog shows every script
// that waits, whole, the first time the page sees it and again whenever
// its text changes (by hash); "Not now" leaves a banner that says nothing
// of the repository's runs until they are approved. Scripts set by the
// server's flags need no approval and are not asked about.
//
// The file is read again when the workspace watcher says it changed, so a
// script an agent edits asks again at once.

import { api, ApiError } from '../shared/api';
import { byId, h } from '../shared/dom';
import { loadSetting, saveSetting } from '../shared/settings';
import type { ToastKind } from '../shared/toast';
import type { ScriptsResponse, WorkspaceScript } from '../shared/types';

/** The hashes the user said "Not now" to, so a reload does not ask again. */
const DISMISSED_KEY = 'agentmux.scriptsNotNow';

/** The scripts files at the workspace's root, whose change is read at once. */
export const SCRIPTS_FILES = ['agentmux.json', 'conductor.json'];

export interface TrustDeps {
  canAct(): boolean;
  toast(message: string, kind?: ToastKind): void;
}

export class ScriptsTrust {
  private readonly dialog = byId<HTMLDialogElement>('scripts-dialog');
  private readonly intro = byId('scripts-intro');
  private readonly list = byId('scripts-list');
  private readonly error = byId('scripts-error');
  private readonly approveBtn = byId<HTMLButtonElement>('scripts-approve');
  private readonly banner = byId('banner-scripts');
  private readonly bannerText = byId('banner-scripts-text');

  /** The scripts that wait for approval, as last read. */
  private waiting: WorkspaceScript[] = [];
  /** The names of the scripts that may run, as last read. */
  private runnable = new Set<string>();
  private readonly listeners: (() => void)[] = [];
  private file: string | null = null;
  /** The file cannot be used: its error, shown on the banner. */
  private invalid: string | null = null;
  private busy = false;
  private seq = 0;

  constructor(private readonly deps: TrustDeps) {
    byId('scripts-later').addEventListener('click', () => this.notNow());
    this.dialog.addEventListener('cancel', () => this.notNow());
    this.approveBtn.addEventListener('click', () => void this.approve());
    byId('banner-scripts-review').addEventListener('click', () => this.open());
  }

  /** Reads the scripts in force again: on connecting, and when a scripts file changed. */
  async refresh(): Promise<void> {
    const seq = ++this.seq;
    let r: ScriptsResponse;
    try {
      r = await api.scripts();
    } catch (err) {
      if (seq !== this.seq) return;
      // A file that cannot be used runs nothing: say why, ask nothing.
      this.invalid = err instanceof ApiError && err.code === 'SCRIPTS_INVALID' ? err.message : null;
      this.waiting = [];
      this.runnable.clear();
      for (const fn of this.listeners) fn();
      this.render();
      return;
    }
    if (seq !== this.seq) return;
    this.invalid = null;
    this.apply(r);
    // The first time these texts are seen, or since they changed: shown
    // whole, unless the user put exactly these off already.
    if (this.waiting.length && !this.dialog.open && loadSetting(DISMISSED_KEY) !== this.key()) this.open();
  }

  /** Whether the script named name is in force and may run, as last read. */
  mayRun(name: WorkspaceScript['name']): boolean {
    return this.runnable.has(name);
  }

  /** Calls fn each time the scripts are read anew. */
  subscribe(fn: () => void): void {
    this.listeners.push(fn);
  }

  private apply(r: ScriptsResponse): void {
    this.file = r.file;
    this.waiting = r.scripts.filter((s) => !s.approved);
    this.runnable = new Set(r.scripts.filter((s) => s.approved).map((s) => s.name));
    for (const fn of this.listeners) fn();
    if (!this.waiting.length && this.dialog.open) this.dialog.close();
    this.render();
  }

  /** The hashes waiting, as one string: what "Not now" puts off. */
  private key(): string {
    return this.waiting.map((s) => s.hash).sort().join(',');
  }

  private open(): void {
    if (!this.waiting.length) return;
    this.error.hidden = true;
    this.renderDialog();
    if (!this.dialog.open) this.dialog.showModal();
  }

  private notNow(): void {
    saveSetting(DISMISSED_KEY, this.key());
    if (this.dialog.open) this.dialog.close();
    this.render();
  }

  /** Approves each script shown by its hash: a text changed meanwhile is refused, and shown again. */
  private async approve(): Promise<void> {
    if (this.busy || !this.waiting.length) return;
    this.busy = true;
    this.render();
    const names: string[] = [];
    try {
      let r: ScriptsResponse | null = null;
      for (const s of this.waiting) {
        r = await api.approveScript(s.hash);
        names.push(s.name);
      }
      if (r) this.apply(r);
      this.deps.toast(`Approved: ${names.join(', ')}. They run from now on, as long as their text stays the same.`, 'info');
    } catch (err) {
      const changed = err instanceof ApiError && err.code === 'SCRIPT_CHANGED';
      this.error.textContent = changed
        ? 'The file changed while you read it: here it is as it is now. Read it again before you approve.'
        : `Not approved: ${err instanceof Error ? err.message : String(err)}`;
      this.error.hidden = false;
      if (changed) {
        const r = await api.scripts().catch(() => null);
        if (r) this.apply(r);
        this.renderDialog();
      }
    } finally {
      this.busy = false;
      this.render();
    }
  }

  private render(): void {
    const n = this.waiting.length;
    this.banner.hidden = !n && !this.invalid;
    this.banner.dataset.state = this.invalid ? 'invalid' : 'waiting';
    this.bannerText.textContent = this.invalid
      ? `The workspace's scripts file cannot be used, so none of its scripts runs: ${this.invalid}`
      : `This repository's ${n === 1 ? `${this.waiting[0]!.name} script waits` : `scripts (${this.waiting.map((s) => s.name).join(', ')}) wait`} for your approval: until then sessions start without ${n === 1 ? 'it' : 'them'}${this.waiting.some((s) => s.name === 'check') ? ', and no turn is checked' : ''}.`;
    byId('banner-scripts-review').hidden = !!this.invalid;
    this.approveBtn.disabled = this.busy || !this.deps.canAct();
    this.approveBtn.title = this.deps.canAct() ? '' : 'Read-only here: someone who may act approves them';
  }

  private renderDialog(): void {
    this.intro.textContent = `${this.file ?? 'The repository'} asks agentmux to run ${this.waiting.length === 1 ? 'this script' : 'these scripts'}. Read ${this.waiting.length === 1 ? 'it' : 'them'} before you approve.`;
    this.list.replaceChildren(...this.waiting.map((s) => h('li', { 'data-testid': 'script', 'data-name': s.name, 'data-hash': s.hash },
      h('div', { class: 'script-head' },
        h('span', { class: 'script-name', text: s.name }),
        h('span', { class: 'script-source', text: `from ${s.source}` }),
        h('span', { class: 'script-state', 'data-approved': String(s.approved), text: s.approved ? 'approved' : 'not approved' })),
      h('pre', { class: 'script-text', 'data-testid': 'script-text', text: s.text }))));
  }
}
