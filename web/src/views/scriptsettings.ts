// The workspace's scripts set in the page (docs/protocol.md, "Workspace
// scripts"): setup, run, archive and check, and the run mode, which win
// over the repository's agentmux.json (or conductor.json) and need no
// approval, a person having written them here. The server's flags win
// over both; each field says what is in force where it is left empty.

import { api } from '../shared/api';
import { byId, h } from '../shared/dom';
import type { ToastKind } from '../shared/toast';
import type { ScriptSettings, ScriptsResponse, WorkspaceScript } from '../shared/types';

const NAMES: { name: WorkspaceScript['name']; what: string }[] = [
  { name: 'setup', what: 'runs in a new worktree before its agent starts (e.g. npm ci)' },
  { name: 'run', what: 'a dev server, started with Run on a session, on its port $AGENTMUX_PORT' },
  { name: 'archive', what: 'runs in a worktree before it is removed' },
  { name: 'check', what: 'runs at the end of every turn (e.g. npm test)' },
];

export interface ScriptSettingsDeps {
  canAct(): boolean;
  toast(message: string, kind?: ToastKind): void;
  /** The scripts changed: whoever shows them reads them again. */
  changed(): void;
}

export class ScriptSettingsDialog {
  private readonly dialog = byId<HTMLDialogElement>('scripts-settings');
  private readonly intro = byId('scripts-settings-intro');
  private readonly fields = byId('scripts-settings-fields');
  private readonly mode = byId<HTMLSelectElement>('scripts-settings-mode');
  private readonly error = byId('scripts-settings-error');
  private readonly save = byId<HTMLButtonElement>('scripts-settings-save');
  private readonly inputs = new Map<string, HTMLTextAreaElement>();

  constructor(private readonly deps: ScriptSettingsDeps) {
    byId('scripts-settings-open').addEventListener('click', () => void this.open());
    byId('scripts-settings-cancel').addEventListener('click', () => this.dialog.close());
    byId('scripts-settings-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.submit();
    });
    for (const { name, what } of NAMES) {
      const input = h('textarea', { rows: 2, spellcheck: 'false', 'data-testid': `scripts-settings-${name}`, 'aria-label': `${name} script` });
      this.inputs.set(name, input);
      this.fields.append(h('label', { class: 'field' },
        h('span', { class: 'field-label', text: name }),
        input,
        h('span', { class: 'field-hint', 'data-testid': `scripts-settings-${name}-hint`, text: what })));
    }
  }

  private async open(): Promise<void> {
    this.error.hidden = true;
    let r: ScriptsResponse;
    try {
      r = await api.scripts();
    } catch (err) {
      this.deps.toast(`Cannot read the workspace's scripts: ${err instanceof Error ? err.message : String(err)}`, 'error');
      return;
    }
    this.intro.textContent = `Set here, a script wins over ${r.file ?? "the repository's agentmux.json"} and runs without approval. Leave one empty to use the file's; the server's flags win over both.`;
    for (const { name, what } of NAMES) {
      const input = this.inputs.get(name)!;
      input.value = r.settings[name];
      const inForce = r.scripts.find((s) => s.name === name);
      input.placeholder = inForce && inForce.source !== 'settings' ? `${inForce.text}  (from ${inForce.source})` : 'not set';
      const hint = this.fields.querySelector<HTMLElement>(`[data-testid=scripts-settings-${name}-hint]`)!;
      hint.textContent = inForce?.source === 'flag' ? `${what}. The server's flag sets it: this one is not used.` : `${what}.`;
    }
    this.mode.value = r.settings.runMode;
    this.save.disabled = !this.deps.canAct();
    if (!this.dialog.open) this.dialog.showModal();
  }

  private async submit(): Promise<void> {
    const value = (name: string) => this.inputs.get(name)!.value.trim();
    const settings: ScriptSettings = {
      setup: value('setup'), run: value('run'), archive: value('archive'), check: value('check'),
      runMode: this.mode.value as ScriptSettings['runMode'],
    };
    this.save.disabled = true;
    try {
      await api.saveScriptSettings(settings);
      this.dialog.close();
      this.deps.toast('Workspace scripts saved.', 'info');
      this.deps.changed();
    } catch (err) {
      this.error.textContent = `Not saved: ${err instanceof Error ? err.message : String(err)}`;
      this.error.hidden = false;
    } finally {
      this.save.disabled = !this.deps.canAct();
    }
  }
}
