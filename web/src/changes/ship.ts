// From review to merged (docs/protocol.md, "Review to merged"): the bar
// under the Changes view's header says where the session's branch stands
// against its base ("feature/x → main · 2 ahead · 0 behind", live from
// session.branch), and holds what takes the agent's work further: Commit
// (a message suggested from the change, to edit), Merge (merge, squash or
// rebase; a conflict can go back to the agent to resolve), Push (with the
// pull request's page when the forge is known), and Archive once merged.
//
// A session without a worktree works in the workspace, which others may
// share: a commit there takes everyone's changes, so it asks first.
// Messages from git (a refusing hook, a remote's reason) are shown as
// text, whole.
//
// What the bar knows of each session's branch, and the request in flight,
// is ShipState's (models/ship.ts); the bar renders from it.

import { api, ApiError } from '../shared/api';
import { sentence, type ChangesObserver, type ChangesState } from './changes';
import { byId, h } from '../shared/dom';
import { shownName } from '../shared/paths';
import { loadSetting, saveSetting } from '../shared/settings';
import { mergeWarning, type Overlaps } from '../models/overlaps';
import type { BranchState, ShipState } from '../models/ship';
import type { SessionStore } from '../models/store';
import type { ToastKind } from '../shared/toast';
import type { SessionBranchMessage, Worktree } from '../shared/types';

type MergeMode = 'merge' | 'squash' | 'rebase';
type Confirming = 'shared' | 'archive';

const MODE_KEY = 'agentmux.mergeMode';
const MODES: readonly MergeMode[] = ['merge', 'squash', 'rebase'];
/** Views of a session in a repository: those the bar shows with. */
const IN_REPOSITORY: readonly ChangesState[] = ['loading', 'ready', 'clean', 'error'];

export interface ShipDeps {
  store: SessionStore;
  /** Every session's branch, pushes, and the request in flight. */
  state: ShipState;
  canAct(): boolean;
  /** The name this page goes by (client.welcome): who asks the agent to resolve a conflict. */
  myName(): string | null;
  /** Fetches the Changes view's diff again: a commit or a merge changes it at once. */
  reloadChanges(): void;
  /** Other sessions that change the same files: the merge dialog warns of them. */
  overlaps: Overlaps;
  toast(message: string, kind?: ToastKind): void;
}

export class ShipBar implements ChangesObserver {
  private readonly bar = byId('ship');
  private readonly branchEl = byId('ship-branch');
  private readonly prLink = byId<HTMLAnchorElement>('ship-pr');
  private readonly actions = byId('ship-actions');
  private readonly commitBtn = byId<HTMLButtonElement>('ship-commit');
  private readonly mergeBtn = byId<HTMLButtonElement>('ship-merge');
  private readonly pushBtn = byId<HTMLButtonElement>('ship-push');
  private readonly archiveBtn = byId<HTMLButtonElement>('ship-archive');
  private readonly checkpointsBtn = byId<HTMLButtonElement>('ship-checkpoints');
  private readonly sep = byId('ship-sep');
  private readonly confirm = byId('ship-confirm');
  private readonly confirmText = byId('ship-confirm-text');
  private readonly confirmNo = byId<HTMLButtonElement>('ship-confirm-no');
  private readonly confirmYes = byId<HTMLButtonElement>('ship-confirm-yes');

  private readonly commitDialog = byId<HTMLDialogElement>('commit-dialog');
  private readonly commitWhere = byId('commit-where');
  private readonly commitMessage = byId<HTMLTextAreaElement>('commit-message');
  private readonly commitError = byId('commit-error');
  private readonly commitSubmit = byId<HTMLButtonElement>('commit-submit');

  private readonly mergeDialog = byId<HTMLDialogElement>('merge-dialog');
  private readonly mergeForm = byId<HTMLFormElement>('merge-form');
  private readonly mergeTitle = byId('merge-title');
  private readonly mergeAsk = byId('merge-ask');
  private readonly mergeWhat = byId('merge-what');
  private readonly mergeError = byId('merge-error');
  private readonly mergePreview = byId('merge-preview');
  /** Counts the previews asked: an answer for a dialog since closed or reopened is dropped. */
  private previewId = 0;
  private readonly mergeConflict = byId('merge-conflict');
  private readonly mergeConflictText = byId('merge-conflict-text');
  private readonly mergeConflictFiles = byId('merge-conflict-files');
  private readonly mergeConflictHint = byId('merge-conflict-hint');
  private readonly mergeDone = byId('merge-done');
  private readonly mergeDoneText = byId('merge-done-text');
  private readonly mergeArchiveText = byId('merge-archive-text');
  private readonly mergeCancel = byId<HTMLButtonElement>('merge-cancel');
  private readonly mergeAskAgent = byId<HTMLButtonElement>('merge-ask-agent');
  private readonly mergeArchive = byId<HTMLButtonElement>('merge-archive');
  private readonly mergeSubmit = byId<HTMLButtonElement>('merge-submit');

  private readonly pushDialog = byId<HTMLDialogElement>('push-dialog');
  private readonly pushTitle = byId('push-title');
  private readonly pushRemote = byId<HTMLInputElement>('push-remote');
  private readonly pushHow = byId('push-how');
  private readonly pushError = byId('push-error');
  private readonly pushResult = byId('push-result');
  private readonly pushResultText = byId('push-result-text');
  private readonly pushLink = byId<HTMLAnchorElement>('push-pr-link');
  private readonly pushCancel = byId<HTMLButtonElement>('push-cancel');
  private readonly pushSubmit = byId<HTMLButtonElement>('push-submit');

  private sessionId: string | null = null;
  private state: ChangesState = 'idle';
  private readonly ships: ShipState;
  private confirming: Confirming | null = null;
  /** The session the open dialog is about. */
  private dialogSession: string | null = null;

  constructor(private readonly deps: ShipDeps) {
    this.commitBtn.addEventListener('click', () => this.startCommit());
    this.mergeBtn.addEventListener('click', () => this.openMerge());
    this.pushBtn.addEventListener('click', () => this.openPush());
    this.archiveBtn.addEventListener('click', () => this.ask('archive'));
    this.confirmNo.addEventListener('click', () => this.ask(null));
    this.confirmYes.addEventListener('click', () => this.confirmed());
    this.confirm.addEventListener('keydown', (ev) => {
      if (ev.key === 'Escape') this.ask(null);
    });

    byId('commit-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.commit();
    });
    this.commitMessage.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        void this.commit();
      }
    });
    byId('commit-cancel').addEventListener('click', () => this.commitDialog.close());

    this.mergeForm.addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.merge();
    });
    this.mergeCancel.addEventListener('click', () => this.mergeDialog.close());
    this.mergeAskAgent.addEventListener('click', () => void this.askAgent());
    this.mergeArchive.addEventListener('click', () => void this.archive(this.dialogSession));

    byId('push-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.push();
    });
    this.pushCancel.addEventListener('click', () => this.pushDialog.close());

    for (const d of [this.commitDialog, this.mergeDialog, this.pushDialog]) {
      // A click on the backdrop (the dialog box itself, outside its content) closes it.
      d.addEventListener('click', (ev) => {
        if (ev.target === d) d.close();
      });
      d.addEventListener('close', () => {
        this.dialogSession = null;
      });
    }
    deps.store.subscribe(() => this.render());
    this.ships = deps.state;
    // The shown session's branch, or the request in flight (null), changed.
    this.ships.subscribe((id) => {
      if (id === null || id === this.sessionId) this.render();
    });
    this.render();
  }

  // ---- what the Changes view and the server tell ------------------------

  shown(sessionId: string | null, state: ChangesState): void {
    if (sessionId !== this.sessionId) {
      this.sessionId = sessionId;
      this.ask(null);
      // A dialog is about the session it was opened for.
      for (const d of [this.commitDialog, this.mergeDialog, this.pushDialog]) if (d.open) d.close();
    }
    this.state = state;
    // Each fetch of the diff: the agent may have committed meanwhile.
    if (sessionId && state !== 'loading' && IN_REPOSITORY.includes(state)) void this.loadBranch(sessionId);
    this.render();
  }

  /** session.branch: what was done to a session's branch, by anyone, and where it stands. */
  onBranch(m: SessionBranchMessage): void {
    this.ships.apply(m);
    if (m.merged || m.archived) this.deps.store.setWorktreeState(m.sessionId, { merged: m.merged, archived: m.archived });
  }

  forget(sessionId: string): void {
    this.ships.forget(sessionId);
  }

  private worktree(id: string | null = this.sessionId): Worktree | undefined {
    return id ? this.deps.store.get(id)?.session.worktree : undefined;
  }

  private async loadBranch(id: string): Promise<void> {
    const wt = this.worktree(id);
    // Archived: its worktree is gone, and the server says no more.
    if (!wt || wt.archived) return;
    const version = this.ships.startLoad(id);
    if (version === null) return;
    try {
      const b = await api.branch(id);
      this.ships.loaded(id, version, b, this.worktree(id)?.archived);
    } catch (err) {
      this.ships.loadFailed(id, err instanceof Error ? err.message : String(err));
    }
  }

  // ---- the bar -------------------------------------------------------------

  render(): void {
    const id = this.sessionId;
    const entry = id ? this.deps.store.get(id) : undefined;
    this.bar.hidden = !entry || !IN_REPOSITORY.includes(this.state);
    if (!id || !entry) return;
    const wt = entry.session.worktree;
    const b = this.ships.branch(id);
    const { merged, archived } = this.ships.standing(id, wt);
    this.renderBranch(wt, b, merged, archived);

    const push = this.ships.push(id);
    this.prLink.hidden = !push?.url;
    if (push?.url) {
      this.prLink.href = push.url;
      this.prLink.title = `Open the pull request page of the branch pushed to ${push.remote}: ${push.url}`;
    }

    const can = this.deps.canAct() && this.ships.busy === null;
    this.commitBtn.hidden = archived;
    this.mergeBtn.hidden = !wt || archived;
    this.pushBtn.hidden = archived;
    this.archiveBtn.hidden = !wt || !merged || archived;
    // An archived session's tree is gone, its checkpoints with it.
    this.checkpointsBtn.hidden = archived;
    this.sep.hidden = archived;
    for (const btn of [this.commitBtn, this.mergeBtn, this.pushBtn, this.archiveBtn, this.confirmYes]) btn.disabled = !can;
    this.mergeBtn.title = wt ? `Merge ${wt.branch} into ${wt.base || b?.base || 'its base'}` : '';
    if (this.confirming === 'archive' && (archived || !wt)) this.ask(null);
    for (const btn of [this.mergeSubmit, this.mergeAskAgent, this.mergeArchive, this.pushSubmit]) btn.disabled = !can;
    // Nothing to commit until the suggestion is in the box (or failed).
    this.commitSubmit.disabled = !can || this.commitMessage.disabled;
  }

  private renderBranch(wt: Worktree | undefined, b: BranchState | undefined, merged: boolean, archived: boolean): void {
    const el = this.branchEl;
    el.replaceChildren();
    if (!wt) {
      el.dataset.state = 'shared';
      delete el.dataset.ahead;
      delete el.dataset.behind;
      el.append(h('span', { class: 'ship-tag', text: 'shared workspace' }));
      el.title = 'This session works in the workspace itself, which other sessions may share: a commit takes every change in it.';
      return;
    }
    const base = b?.base || wt.base || '';
    el.dataset.state = archived ? 'archived' : merged ? 'merged' : 'open';
    if (b) {
      el.dataset.ahead = String(b.ahead);
      el.dataset.behind = String(b.behind);
    } else {
      delete el.dataset.ahead;
      delete el.dataset.behind;
    }
    el.append(h('span', { class: 'ship-branch-name', text: `\u2387 ${b?.branch || wt.branch}` }));
    if (base) el.append(h('span', { class: 'ship-arrow', text: ' \u2192 ' }), h('span', { class: 'ship-branch-name', text: base }));
    const sep = () => h('span', { class: 'ship-dot', text: ' \u00b7 ' });
    if (archived) {
      el.append(sep(), h('span', { class: 'ship-tag ship-tag-archived', 'data-testid': 'ship-branch-state', text: 'archived' }));
      el.title = `${wt.branch} was merged into ${base || 'its base'} and its worktree removed; the branch is kept.`;
    } else if (merged) {
      el.append(sep(), h('span', { class: 'ship-tag ship-tag-merged', 'data-testid': 'ship-branch-state', text: 'merged' }));
      el.title = `${wt.branch} was merged into ${base || 'its base'}${b ? ` (now ${b.ahead} ahead, ${b.behind} behind)` : ''}.`;
    } else if (b) {
      el.append(
        sep(), h('span', { class: b.ahead ? 'ship-count ship-ahead' : 'ship-count', 'data-testid': 'ship-ahead', text: `${b.ahead} ahead` }),
        sep(), h('span', { class: b.behind ? 'ship-count ship-behind' : 'ship-count', 'data-testid': 'ship-behind', text: `${b.behind} behind` }),
      );
      el.title = `${b.branch} has ${plural(b.ahead, 'commit')} ${base} lacks, and lacks ${plural(b.behind, 'commit')} of ${base}.`;
    } else {
      el.title = this.ships.error(this.sessionId ?? '') ?? '';
    }
  }

  /** An action that asks in place first (a shared workspace's commit, an archive); Cancel has the focus. */
  private ask(what: Confirming | null): void {
    if (what === this.confirming) return;
    const hadFocus = this.confirm.contains(document.activeElement);
    const was = this.confirming;
    this.confirming = what;
    this.confirm.hidden = what === null;
    this.actions.hidden = what !== null;
    if (what === null) {
      if (hadFocus) (was === 'archive' ? this.archiveBtn : this.commitBtn).focus();
      return;
    }
    this.confirm.dataset.kind = what;
    const wt = this.worktree();
    if (what === 'shared') {
      const others = this.deps.store.all().filter((e) => e.session.id !== this.sessionId && !e.session.worktree).length;
      this.confirmText.textContent = `This session shares the workspace${others ? ` with ${plural(others, 'other session')}` : ''}: a commit takes every change in it, not only this agent's.`;
      this.confirmYes.textContent = 'Commit the workspace…';
      this.confirmYes.className = 'btn btn-primary btn-small';
    } else {
      this.confirmText.textContent = `Archive ${wt?.branch ?? 'the branch'}? The agent stops and its worktree is removed; the branch and its commits stay.`;
      this.confirmYes.textContent = 'Archive';
      this.confirmYes.className = 'btn btn-danger btn-small';
    }
    this.confirmNo.setAttribute('aria-label', what === 'shared' ? 'Cancel: do not commit' : 'Cancel: keep the worktree');
    this.confirmNo.focus();
  }

  private confirmed(): void {
    const what = this.confirming;
    this.ask(null);
    if (what === 'shared') this.openCommit();
    else if (what === 'archive') void this.archive(this.sessionId);
  }

  // ---- commit ----------------------------------------------------------------

  private startCommit(): void {
    if (!this.sessionId) return;
    if (this.worktree()) this.openCommit();
    else this.ask('shared');
  }

  private openCommit(): void {
    const id = this.sessionId;
    if (!id) return;
    this.dialogSession = id;
    const wt = this.worktree(id);
    this.commitWhere.textContent = wt
      ? `Everything the agent changed in its worktree, as one commit on ${wt.branch}.`
      : 'Every change in the workspace (git add --all), as one commit on the branch it has checked out. Its hooks run.';
    this.commitError.hidden = true;
    this.commitMessage.value = '';
    this.commitMessage.disabled = true;
    this.commitMessage.placeholder = 'Suggesting a message from the change…';
    this.commitSubmit.textContent = 'Commit';
    this.render();
    this.commitDialog.showModal();
    void this.suggest(id);
  }

  private async suggest(id: string): Promise<void> {
    try {
      const message = await api.suggestCommit(id);
      if (this.dialogSession !== id) return;
      this.commitMessage.value = message;
      if (!message) this.showError(this.commitError, 'Nothing to commit: the tree matches its last commit.');
    } catch (err) {
      if (this.dialogSession !== id) return;
      this.showError(this.commitError, `No message could be suggested. ${describe(err)}`);
    }
    this.commitMessage.disabled = false;
    this.commitMessage.placeholder = 'What the change does, and why';
    this.render();
    this.commitMessage.focus();
    // The subject is what one edits first: the cursor at its end.
    const eol = this.commitMessage.value.indexOf('\n');
    const at = eol < 0 ? this.commitMessage.value.length : eol;
    this.commitMessage.setSelectionRange(at, at);
    this.commitMessage.scrollTop = 0;
  }

  private async commit(): Promise<void> {
    const id = this.dialogSession;
    if (!id || this.ships.busy !== null || this.commitMessage.disabled) return;
    const message = this.commitMessage.value;
    if (!message.trim()) {
      this.showError(this.commitError, 'Write a commit message first.');
      this.commitMessage.focus();
      return;
    }
    this.commitError.hidden = true;
    this.commitSubmit.textContent = 'Committing…';
    this.ships.setBusy('commit');
    try {
      const c = await api.commit(id, message);
      if (this.dialogSession === id) this.commitDialog.close();
      this.deps.toast(`Committed ${c.commit.slice(0, 7)} on ${c.branch || 'a detached HEAD'}.`, 'info');
      this.deps.reloadChanges();
    } catch (err) {
      if (this.dialogSession !== id) {
        this.deps.toast(`The commit failed. ${describe(err)}`, 'error');
        return;
      }
      this.showError(this.commitError, describeCommitError(err));
      this.commitMessage.focus();
    } finally {
      this.commitSubmit.textContent = 'Commit';
      this.ships.setBusy(null);
    }
  }

  // ---- merge, and a conflict back to the agent --------------------------------

  private openMerge(): void {
    const id = this.sessionId;
    const wt = this.worktree(id);
    if (!id || !wt) return;
    this.dialogSession = id;
    const b = this.ships.branch(id);
    const base = this.ships.base(id, wt, 'its base');
    this.mergeTitle.textContent = `Merge ${wt.branch} into ${base}`;
    this.mergeWhat.textContent = b
      ? `${wt.branch} has ${plural(b.ahead, 'commit')} ${base} lacks${b.behind ? `; ${base} has ${plural(b.behind, 'commit')} it lacks` : ''}. Uncommitted changes stay behind: commit them first.`
      : `The commits of ${wt.branch} go into ${base}; uncommitted changes stay behind: commit them first.`;
    const saved = loadSetting(MODE_KEY);
    const mode: MergeMode = MODES.includes(saved as MergeMode) ? (saved as MergeMode) : 'merge';
    for (const r of this.modeInputs()) r.checked = r.value === mode;
    this.mergeStep('ask');
    void this.previewMerge(id);
    this.mergeDialog.showModal();
    this.modeInputs().find((r) => r.checked)?.focus();
  }

  /** Asks what the merge will do to the other sessions, and says it in the dialog. */
  private async previewMerge(id: string): Promise<void> {
    const ask = ++this.previewId;
    const el = this.mergePreview;
    el.hidden = false;
    el.dataset.state = 'loading';
    el.replaceChildren(h('span', { class: 'muted', text: 'Checking the other sessions…' }));
    const nameOf = (sid: string) => this.deps.store.get(sid)?.session.name ?? sid.slice(0, 8);
    try {
      const p = await api.mergePreview(id);
      if (ask !== this.previewId || this.dialogSession !== id) return;
      const w = mergeWarning(p, this.deps.overlaps.of(id), nameOf);
      el.dataset.state = w.state;
      el.replaceChildren(h('p', { 'data-testid': 'merge-preview-title', text: w.title }),
        ...(w.items.length ? [h('ul', {}, ...w.items.map((t) => h('li', { 'data-testid': 'merge-preview-item', text: t })))] : []));
    } catch (err) {
      if (ask !== this.previewId || this.dialogSession !== id) return;
      el.dataset.state = 'error';
      el.replaceChildren(h('span', { class: 'muted', text: `Could not tell what the merge does to the other sessions: ${(err as Error).message}` }));
    }
  }

  private modeInputs(): HTMLInputElement[] {
    return [...this.mergeForm.querySelectorAll<HTMLInputElement>('input[name=mode]')];
  }

  /** Which part of the merge dialog shows: the choice, a conflict, or the merge done (with the offer to archive). */
  private mergeStep(step: 'ask' | 'conflict' | 'done'): void {
    this.mergeDialog.dataset.step = step;
    this.mergeAsk.hidden = step === 'done';
    this.mergeConflict.hidden = step !== 'conflict';
    this.mergeDone.hidden = step !== 'done';
    this.mergeAskAgent.hidden = step !== 'conflict';
    this.mergeArchive.hidden = step !== 'done';
    this.mergeSubmit.hidden = step === 'done';
    this.mergeSubmit.textContent = step === 'conflict' ? 'Merge again' : 'Merge';
    this.mergeSubmit.className = step === 'conflict' ? 'btn' : 'btn btn-primary';
    this.mergeCancel.textContent = step === 'done' ? 'Keep the worktree' : 'Cancel';
    if (step !== 'conflict') this.mergeConflictFiles.replaceChildren();
    this.mergeError.hidden = true;
  }

  private async merge(): Promise<void> {
    const id = this.dialogSession;
    const wt = this.worktree(id);
    if (!id || !wt || this.ships.busy !== null) return;
    const mode = (this.modeInputs().find((r) => r.checked)?.value ?? 'merge') as MergeMode;
    saveSetting(MODE_KEY, mode);
    const base = this.ships.base(id, wt, 'the base');
    this.mergeError.hidden = true;
    this.mergeSubmit.textContent = 'Merging…';
    this.ships.setBusy('merge');
    // Disabled while the merge is on its way: focused once it is back.
    let focus: HTMLElement | null = null;
    try {
      const r = await api.merge(id, mode);
      this.deps.store.setWorktreeState(id, { merged: r.commit });
      this.deps.reloadChanges();
      if (this.dialogSession !== id) {
        this.deps.toast(`Merged ${wt.branch} into ${base}.`, 'info');
        return;
      }
      this.mergeStep('done');
      this.mergeDoneText.textContent = `Merged ${wt.branch} into ${base} (${modeWords(mode)}): ${base} is at ${r.commit.slice(0, 7)} now.`;
      this.mergeArchiveText.textContent = `Done with this session? Archive stops the agent and removes its worktree (${wt.path}); the branch ${wt.branch} and its commits stay.`;
      focus = this.mergeArchive;
    } catch (err) {
      if (this.dialogSession !== id) {
        this.deps.toast(`The merge failed. ${describe(err)}`, 'error');
        return;
      }
      if (err instanceof ApiError && err.code === 'MERGE_CONFLICT') {
        this.mergeStep('conflict');
        const files = err.files;
        this.mergeConflictText.textContent = `${wt.branch} and ${base} both changed ${files.length === 1 ? 'this file' : `these ${files.length} files`}; nothing was merged:`;
        this.mergeConflictFiles.replaceChildren(...files.map((f) => h('li', { 'data-testid': 'merge-conflict-file', text: shownName(f) })));
        this.mergeConflictHint.textContent = `Ask the agent to resolve: ${base} is merged into ${wt.branch} in the worktree, the conflicts are left marked there, and a prompt naming them is queued for the agent. Merge again once it has committed the result.`;
        focus = this.mergeAskAgent;
      } else {
        this.mergeStep('ask');
        this.showError(this.mergeError, describeMergeError(err, base));
        focus = this.mergeSubmit;
      }
    } finally {
      if (this.mergeDialog.dataset.step !== 'done') this.mergeSubmit.textContent = this.mergeDialog.dataset.step === 'conflict' ? 'Merge again' : 'Merge';
      this.ships.setBusy(null);
      if (this.mergeDialog.open) focus?.focus();
    }
  }

  private async askAgent(): Promise<void> {
    const id = this.dialogSession;
    const wt = this.worktree(id);
    if (!id || !wt || this.ships.busy !== null) return;
    const base = this.ships.base(id, wt, 'the base');
    this.mergeError.hidden = true;
    this.mergeAskAgent.textContent = 'Asking…';
    this.ships.setBusy('update');
    try {
      const u = await api.update(id, this.deps.myName() ?? '');
      const conflicts = u.conflicts ?? [];
      if (this.dialogSession === id) this.mergeDialog.close();
      if (conflicts.length === 0) {
        this.deps.toast(`${base} merged into ${wt.branch} cleanly: nothing for the agent to resolve. Merge again.`, 'info');
      } else {
        const where = u.position === 1 ? 'it goes to the agent next, when it waits for input' : `queued #${u.position ?? '?'}`;
        this.deps.toast(`Asked the agent to resolve ${plural(conflicts.length, 'conflicted file')}: ${where}. Merge again once it has committed.`, 'info');
      }
      this.deps.reloadChanges();
    } catch (err) {
      if (this.dialogSession !== id) {
        this.deps.toast(`The agent was not asked. ${describe(err)}`, 'error');
        return;
      }
      const dirty = err instanceof ApiError && err.code === 'BASE_DIRTY';
      this.showError(this.mergeError, dirty
        ? `The worktree has uncommitted changes: commit them first, so that the merge does not mix with them.\n${sentence(err.message)}`
        : `The agent was not asked. ${describe(err)}`);
    } finally {
      this.mergeAskAgent.textContent = 'Ask the agent to resolve';
      this.ships.setBusy(null);
    }
  }

  private async archive(id: string | null): Promise<void> {
    const wt = this.worktree(id);
    if (!id || !wt || this.ships.busy !== null) return;
    this.mergeArchive.textContent = 'Archiving…';
    this.ships.setBusy('archive');
    try {
      const s = await api.archive(id);
      this.deps.store.upsert(s);
      if (this.mergeDialog.open) this.mergeDialog.close();
      this.deps.toast(`Archived: the agent is stopped and its worktree removed; the branch ${wt.branch} is kept.`, 'info');
    } catch (err) {
      const message = `The worktree was not archived. ${describe(err)}`;
      if (this.mergeDialog.open && this.dialogSession === id) this.showError(this.mergeError, message);
      else this.deps.toast(message, 'error');
    } finally {
      this.mergeArchive.textContent = 'Archive';
      this.ships.setBusy(null);
    }
  }

  // ---- push -------------------------------------------------------------------

  private openPush(): void {
    const id = this.sessionId;
    if (!id) return;
    this.dialogSession = id;
    const wt = this.worktree(id);
    const branch = wt?.branch;
    this.pushTitle.textContent = branch ? `Push ${branch}` : 'Push the workspace\'s branch';
    this.pushRemote.value = this.ships.push(id)?.remote ?? 'origin';
    this.pushHow.textContent = `git push --set-upstream <remote> ${branch ?? '<branch>'}, with the server's credentials; the repository's pre-push hook runs.`;
    this.pushError.hidden = true;
    this.pushResult.hidden = true;
    this.pushCancel.textContent = 'Cancel';
    this.pushSubmit.textContent = 'Push';
    this.pushDialog.showModal();
    this.pushRemote.select();
  }

  private async push(): Promise<void> {
    const id = this.dialogSession;
    if (!id || this.ships.busy !== null) return;
    const remote = this.pushRemote.value.trim() || 'origin';
    this.pushError.hidden = true;
    this.pushResult.hidden = true;
    this.pushSubmit.textContent = 'Pushing…';
    this.ships.setBusy('push');
    try {
      const p = await api.push(id, remote);
      const { url } = this.ships.pushed(id, p.remote, p.pullRequestUrl);
      if (this.dialogSession !== id) {
        this.deps.toast(`Pushed ${p.branch} to ${p.remote}.`, 'info');
        return;
      }
      this.pushResult.hidden = false;
      this.pushResultText.textContent = url
        ? `Pushed ${p.branch} to ${p.remote}.`
        : `Pushed ${p.branch} to ${p.remote}. No pull request page is known for this remote's host: open one on its site.`;
      this.pushLink.hidden = !url;
      if (url) {
        this.pushLink.href = url;
        this.pushLink.title = url;
        this.pushLink.focus();
      }
      this.pushCancel.textContent = 'Close';
    } catch (err) {
      if (this.dialogSession !== id) {
        this.deps.toast(`The push failed. ${describe(err)}`, 'error');
        return;
      }
      this.showError(this.pushError, describePushError(err, remote));
      this.pushRemote.focus();
    } finally {
      this.pushSubmit.textContent = 'Push';
      this.ships.setBusy(null);
      this.render();
    }
  }

  private showError(el: HTMLElement, text: string): void {
    el.textContent = text;
    el.hidden = false;
  }
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

function modeWords(mode: MergeMode): string {
  return mode === 'squash' ? 'squashed into one commit' : mode === 'rebase' ? 'rebased' : 'with a merge commit';
}

/** A server message, as a sentence. */
function describe(err: unknown): string {
  return sentence(err instanceof Error ? err.message : String(err));
}

function describeCommitError(err: unknown): string {
  if (!(err instanceof ApiError)) return describe(err);
  switch (err.code) {
    case 'NOTHING_TO_COMMIT':
      return `Nothing to commit: the tree has no changes since its last commit.\n${sentence(err.message)}`;
    case 'GIT_FAILED':
      // A pre-commit or commit-msg hook, or git itself: their words, whole.
      return `Git refused the commit; nothing was committed. Git said:\n${err.message}`;
    case 'INVALID_MESSAGE':
      return `The commit was refused. ${sentence(err.message)}`;
    default:
      return `The commit failed. ${sentence(err.message)}`;
  }
}

function describeMergeError(err: unknown, base: string): string {
  if (!(err instanceof ApiError)) return describe(err);
  switch (err.code) {
    case 'BASE_DIRTY':
      return `The workspace has uncommitted changes, where ${base} is checked out: commit or stash them there, then merge again. Nothing was merged.\n${sentence(err.message)}`;
    case 'NOTHING_TO_MERGE':
      return `Nothing to merge: ${base} has every commit of the branch. Commit the agent's changes first.`;
    case 'BASE_MOVED':
      return `${base} moved while merging; nothing was merged. Merge again.`;
    case 'GIT_FAILED':
      return `Git could not merge; nothing was merged. Git said:\n${err.message}`;
    default:
      return `The merge failed. ${sentence(err.message)}`;
  }
}

function describePushError(err: unknown, remote: string): string {
  if (!(err instanceof ApiError)) return describe(err);
  switch (err.code) {
    case 'NO_REMOTE':
      return `This repository has no remote named "${remote}". ${sentence(err.message)}`;
    case 'PUSH_REJECTED':
      return `${remote} refused the push. It said:\n${err.message}`;
    case 'GIT_FAILED':
      return `The push failed. Git said:\n${err.message}`;
    default:
      return `The push failed. ${sentence(err.message)}`;
  }
}
