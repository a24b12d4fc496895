// Pull requests on the user's behalf (issue 46), in the ship bar beside
// Push: "Open pull request" opens a dialog with what the server suggests
// (title and description from the branch's commits, Draft or not, and which
// token the server uses for which host), and sends it; the server pushes
// the branch if the forge lacks it, then opens the pull request, or links
// the one already open for the branch. Once linked, the bar shows it: its
// number (a link to its page), its state, the review's decision, the checks
// of its head ("✗ lint failing · … 1 pending · ✓ 3 passing"), and what can
// go back to the agent: "Address review" puts the unresolved review threads
// into the session's review draft (shown in the Changes view, to check and
// send as any review), "Fix failing checks" queues a prompt naming them
// with the end of their logs.
//
// What is known of each session's pull request is PullRequests'
// (models/pullrequests.ts), kept live by session.pullRequest; the bar
// renders from it. The forge's words (a refusal, a rate limit, a missing
// token) are shown as they come, as text.

import { api, ApiError } from '../shared/api';
import { sentence, type ChangesObserver, type ChangesState } from './changes';
import { byId, h } from '../shared/dom';
import { safeURL } from '../models/ship';
import {
  checksParts, checksTitle, forgeWords, hasReviewToAddress, reviewersTitle, reviewWords,
  type PullRequestLink, type PullRequests, type PullRequestTurn, type PullRequestView,
} from '../models/pullrequests';
import type { SessionStore } from '../models/store';
import type { ToastKind } from '../shared/toast';
import type { Session } from '../shared/types';

/** Views of a session in a repository: those the ship bar shows with. */
const IN_REPOSITORY: readonly ChangesState[] = ['loading', 'ready', 'clean', 'error'];
/** A session shown again after this long asks the server for its pull request again. */
const STALE_MS = 30_000;

export interface PullRequestDeps {
  store: SessionStore;
  state: PullRequests;
  canAct(): boolean;
  /** The name this page goes by: who asks the agent to fix the checks, who brings the review's comments. */
  myName(): string | null;
  /** Shows the session's review draft: the Changes view, scrolled to it. */
  showReview(sessionId: string): void;
  /** A fresh look (GET /pull-request) found turns a person should hear of. */
  turned(sessionId: string, turns: PullRequestTurn[]): void;
  toast(message: string, kind?: ToastKind): void;
}

/** The Session JSON's pull request link, when it names one. */
export function sessionPullRequest(s: Session): PullRequestLink | undefined {
  const link = s.pullRequest;
  return link && typeof link.number === 'number' ? link : undefined;
}

export class PullRequestBar implements ChangesObserver {
  private readonly group = byId('ship-pull');
  private readonly link = byId<HTMLAnchorElement>('ship-pull-link');
  private readonly stateEl = byId('ship-pull-state');
  private readonly reviewEl = byId('ship-pull-review');
  private readonly checksEl = byId('ship-pull-checks');
  private readonly addressBtn = byId<HTMLButtonElement>('ship-pull-address');
  private readonly fixBtn = byId<HTMLButtonElement>('ship-pull-fix');
  private readonly openBtn = byId<HTMLButtonElement>('ship-pull-open');

  private readonly dialog = byId<HTMLDialogElement>('pr-dialog');
  private readonly where = byId('pr-where');
  private readonly forgeEl = byId('pr-forge');
  private readonly titleInput = byId<HTMLInputElement>('pr-title');
  private readonly bodyInput = byId<HTMLTextAreaElement>('pr-body');
  private readonly draftInput = byId<HTMLInputElement>('pr-draft');
  private readonly error = byId('pr-error');
  private readonly submit = byId<HTMLButtonElement>('pr-submit');

  private sessionId: string | null = null;
  private state: ChangesState = 'idle';
  /** The session the open dialog is about. */
  private dialogSession: string | null = null;
  /** Whether the dialog's fields hold the server's suggestion (or its failure) yet. */
  private draftLoaded = false;
  /** When each session's GET /pull-request last went out. */
  private readonly asked = new Map<string, number>();

  constructor(private readonly deps: PullRequestDeps) {
    this.openBtn.addEventListener('click', () => this.openDialog());
    this.addressBtn.addEventListener('click', () => void this.addressReview());
    this.fixBtn.addEventListener('click', () => void this.fixChecks());
    byId('pr-form').addEventListener('submit', (ev) => {
      ev.preventDefault();
      void this.create();
    });
    this.bodyInput.addEventListener('keydown', (ev) => {
      if (ev.key === 'Enter' && (ev.ctrlKey || ev.metaKey)) {
        ev.preventDefault();
        void this.create();
      }
    });
    byId('pr-cancel').addEventListener('click', () => this.dialog.close());
    this.dialog.addEventListener('click', (ev) => {
      if (ev.target === this.dialog) this.dialog.close();
    });
    this.dialog.addEventListener('close', () => {
      this.dialogSession = null;
    });
    deps.store.subscribe(() => {
      // The Session JSON says which pull request a session has (on load,
      // on session.created): the shown one's view is asked for.
      for (const e of deps.store.all()) {
        const wants = deps.state.setLink(e.session.id, sessionPullRequest(e.session));
        if (wants && e.session.id === this.sessionId && this.inRepository()) void this.load(e.session.id);
      }
      this.render();
    });
    deps.state.subscribe((id) => {
      if (id === null || id === this.sessionId) this.render();
    });
    this.render();
  }

  // ---- what the Changes view and the server tell ------------------------

  shown(sessionId: string | null, state: ChangesState): void {
    if (sessionId !== this.sessionId) {
      this.sessionId = sessionId;
      if (this.dialog.open) this.dialog.close();
    }
    this.state = state;
    if (sessionId && this.inRepository() && this.worktree(sessionId)) {
      const at = this.asked.get(sessionId);
      if (at === undefined || Date.now() - at > STALE_MS) void this.load(sessionId);
    }
    this.render();
  }

  forget(sessionId: string): void {
    this.asked.delete(sessionId);
    this.deps.state.forget(sessionId);
  }

  private inRepository(): boolean {
    return IN_REPOSITORY.includes(this.state);
  }

  private worktree(id: string | null = this.sessionId) {
    return id ? this.deps.store.get(id)?.session.worktree : undefined;
  }

  /** GET /pull-request: the forge, and the pull request's state fetched fresh when one is linked. */
  private async load(id: string): Promise<void> {
    this.asked.set(id, Date.now());
    try {
      const turns = this.deps.state.loaded(id, await api.pullRequest(id));
      if (turns.length) this.deps.turned(id, turns);
    } catch (err) {
      this.deps.state.loadFailed(id, err instanceof Error ? err.message : String(err));
    }
  }

  // ---- the bar ------------------------------------------------------------

  render(): void {
    const id = this.sessionId;
    const entry = id ? this.deps.store.get(id) : undefined;
    const wt = entry?.session.worktree;
    const prs = this.deps.state;
    const link = id ? prs.link(id) : undefined;
    const view = id ? prs.view(id) : undefined;
    const archived = !!wt?.archived;
    const busy = prs.busy;
    const can = this.deps.canAct() && busy === null;

    // Open pull request: a worktree session's branch without one.
    const forge = id ? prs.forge(id) : undefined;
    this.openBtn.hidden = !id || !wt || !wt.branch || archived || !!link;
    const ready = forge?.ready === true;
    this.openBtn.dataset.ready = forge ? String(ready) : 'unknown';
    // Not ready: it still opens the dialog, which says what is missing
    // (a tooltip is out of reach on a phone), but looks and says disabled.
    this.openBtn.setAttribute('aria-disabled', String(!ready));
    this.openBtn.disabled = !can;
    this.openBtn.title = forge
      ? ready ? `Push ${wt?.branch ?? 'the branch'} if need be and open a pull request on ${forge.host}` : forgeWords(forge)
      : (id && prs.error(id)) || 'Asking the server which forge this repository is on…';

    // Once shown, the pull request's own page takes the place of the
    // compare page a push names (app.css hides #ship-pr beside it).
    this.group.hidden = !link;
    if (!link) return;
    const url = safeURL(link.url);
    this.link.textContent = `#${link.number}`;
    if (url) this.link.href = url;
    else this.link.removeAttribute('href');
    this.link.title = view?.title ? `#${link.number} ${view.title}\n${url}` : url;
    this.group.dataset.number = String(link.number);
    this.renderView(view, can && !archived);
  }

  private renderView(view: PullRequestView | undefined, can: boolean): void {
    const g = this.group;
    if (!view) {
      // Only the Session JSON's link so far.
      g.dataset.state = '';
      this.stateEl.hidden = true;
      this.reviewEl.hidden = true;
      this.checksEl.replaceChildren();
      this.checksEl.hidden = true;
      this.addressBtn.hidden = true;
      this.fixBtn.hidden = true;
      return;
    }
    g.dataset.state = view.state;
    g.dataset.checks = view.checks.state;
    g.dataset.review = view.reviewDecision;
    g.dataset.unresolved = String(view.unresolved);
    this.stateEl.hidden = false;
    this.stateEl.textContent = view.state;
    this.stateEl.className = `ship-tag ship-pull-state ship-pull-state-${view.state}`;
    this.stateEl.title = view.error
      ? `The last look at the pull request failed: ${view.error}`
      : view.checkedAt ? `As GitHub had it ${new Date(view.checkedAt).toLocaleTimeString()}` : '';
    g.classList.toggle('ship-pull-stale', !!view.error);

    const review = reviewWords(view);
    this.reviewEl.hidden = !review;
    this.reviewEl.textContent = review;
    this.reviewEl.dataset.decision = view.reviewDecision;
    this.reviewEl.title = reviewersTitle(view);

    this.checksEl.hidden = false;
    this.checksEl.dataset.state = view.checks.state;
    this.checksEl.title = checksTitle(view.checks);
    this.checksEl.replaceChildren(...checksParts(view.checks).map((p) =>
      h('span', { class: `ship-pull-check ship-pull-check-${p.kind}`, 'data-kind': p.kind, text: p.text })));

    const open = view.state === 'open' || view.state === 'draft';
    this.addressBtn.hidden = !open || !hasReviewToAddress(view);
    this.fixBtn.hidden = !open || view.checks.state !== 'failing';
    this.addressBtn.disabled = !can;
    this.fixBtn.disabled = !can;
    const busy = this.deps.state.busy;
    this.addressBtn.textContent = busy?.action === 'address-review' ? 'Fetching the review…' : 'Address review';
    this.fixBtn.textContent = busy?.action === 'fix-checks' ? 'Asking…' : 'Fix failing checks';
  }

  // ---- the dialog ---------------------------------------------------------

  private openDialog(): void {
    const id = this.sessionId;
    const wt = this.worktree(id);
    if (!id || !wt) return;
    this.dialogSession = id;
    this.draftLoaded = false;
    this.where.textContent = `${wt.branch} into ${wt.base || 'its base'}: the branch is pushed first if the forge lacks it or is behind. If a pull request of ${wt.branch} is open already, it is linked instead.`;
    this.titleInput.value = '';
    this.bodyInput.value = '';
    this.draftInput.checked = false;
    for (const el of [this.titleInput, this.bodyInput]) el.disabled = true;
    this.titleInput.placeholder = 'Suggesting a title…';
    this.bodyInput.placeholder = '';
    this.error.hidden = true;
    this.renderForge();
    this.renderSubmit();
    this.dialog.showModal();
    void this.fillDraft(id);
    // Which token for which host, asked again: the user may have just set one.
    void this.load(id).then(() => {
      if (this.dialogSession === id) {
        this.renderForge();
        this.renderSubmit();
      }
    });
  }

  private async fillDraft(id: string): Promise<void> {
    try {
      const d = await api.pullRequestDraft(id);
      if (this.dialogSession !== id) return;
      this.titleInput.value = d.title;
      this.bodyInput.value = d.body;
      this.draftInput.checked = d.draft;
      if (d.head && d.base) {
        this.where.textContent = `${d.head} into ${d.base}: the branch is pushed first if the forge lacks it or is behind. If a pull request of ${d.head} is open already, it is linked instead.`;
      }
    } catch (err) {
      if (this.dialogSession !== id) return;
      this.showError(`No title or description could be suggested. ${describe(err)}`);
    }
    this.draftLoaded = true;
    for (const el of [this.titleInput, this.bodyInput]) el.disabled = false;
    this.titleInput.placeholder = 'What the change does';
    this.bodyInput.placeholder = 'Why, and how to try it';
    this.renderSubmit();
    this.titleInput.focus();
    this.titleInput.setSelectionRange(this.titleInput.value.length, this.titleInput.value.length);
  }

  private renderForge(): void {
    const id = this.dialogSession;
    const forge = id ? this.deps.state.forge(id) : undefined;
    const el = this.forgeEl;
    if (!forge) {
      const err = id ? this.deps.state.error(id) : undefined;
      el.dataset.ready = 'unknown';
      el.textContent = err ? `Which forge this repository is on could not be told: ${err}` : 'Asking the server which forge this repository is on…';
      return;
    }
    el.dataset.ready = String(forge.ready);
    el.textContent = forgeWords(forge);
  }

  private renderSubmit(): void {
    const id = this.dialogSession;
    const ready = !!id && this.deps.state.forge(id)?.ready === true;
    this.submit.disabled = !this.deps.canAct() || this.deps.state.busy !== null || !this.draftLoaded || !ready;
  }

  private async create(): Promise<void> {
    const id = this.dialogSession;
    if (!id || this.submit.disabled) return;
    const title = this.titleInput.value.trim();
    if (!title) {
      this.showError('Give the pull request a title first.');
      this.titleInput.focus();
      return;
    }
    this.error.hidden = true;
    this.submit.textContent = 'Opening…';
    this.deps.state.setBusy(id, 'create');
    this.renderSubmit();
    try {
      const c = await api.openPullRequest(id, { title, body: this.bodyInput.value, draft: this.draftInput.checked });
      this.deps.state.created(id, c, title);
      if (this.dialogSession === id) this.dialog.close();
      this.deps.toast(c.created ? `Opened pull request #${c.number}.` : `A pull request of this branch was open already: linked #${c.number}.`, 'info');
      void this.load(id);
    } catch (err) {
      const message = describeForgeError(err, 'The pull request was not opened.');
      if (err instanceof ApiError && err.code === 'FORGE_NOT_READY') void this.load(id).then(() => this.renderForge());
      if (this.dialogSession !== id) this.deps.toast(message, 'error');
      else {
        this.showError(message);
        this.titleInput.focus();
      }
    } finally {
      this.submit.textContent = 'Open pull request';
      this.deps.state.setBusy(id, null);
      this.renderSubmit();
    }
  }

  private showError(text: string): void {
    this.error.textContent = text;
    this.error.hidden = false;
  }

  // ---- back to the agent --------------------------------------------------

  private async addressReview(): Promise<void> {
    const id = this.sessionId;
    if (!id || this.deps.state.busy !== null) return;
    const n = this.deps.state.link(id)?.number;
    this.deps.state.setBusy(id, 'address-review');
    try {
      const r = await api.addressReview(id, this.deps.myName() ?? '');
      if (r.comments === 0) {
        this.deps.toast(`#${n ?? '?'} has no unresolved review comments: nothing was added to the review draft.`, 'info');
      } else {
        const left = r.left ? ` ${r.left} more did not fit in the draft.` : '';
        this.deps.toast(`${plural(r.comments, 'review comment')} of #${n ?? '?'} added to the review draft: check them, then send them to the agent.${left}`, 'info');
        this.deps.showReview(id);
      }
    } catch (err) {
      this.deps.toast(describeForgeError(err, 'The review comments were not fetched.'), 'error');
    } finally {
      this.deps.state.setBusy(id, null);
    }
  }

  private async fixChecks(): Promise<void> {
    const id = this.sessionId;
    if (!id || this.deps.state.busy !== null) return;
    this.deps.state.setBusy(id, 'fix-checks');
    try {
      const r = await api.fixChecks(id, this.deps.myName() ?? '');
      const where = r.position === 1 ? 'it goes to the agent next, when it waits for input' : `queued #${r.position}`;
      this.deps.toast(`Asked the agent to fix ${r.checks.length ? r.checks.join(', ') : 'the failing checks'}: ${where}.`, 'info');
    } catch (err) {
      this.deps.toast(describeForgeError(err, 'The agent was not asked.'), 'error');
    } finally {
      this.deps.state.setBusy(id, null);
    }
  }
}

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** A server message, as a sentence. */
function describe(err: unknown): string {
  return sentence(err instanceof Error ? err.message : String(err));
}

/** What went wrong, led by what was not done; the forge's words (or the server's) whole. */
export function describeForgeError(err: unknown, notDone: string): string {
  if (!(err instanceof ApiError)) return `${notDone} ${describe(err)}`;
  switch (err.code) {
    case 'FORGE_NOT_READY':
    case 'FORGE_REFUSED':
    case 'FORGE_RATE_LIMITED':
    case 'NO_PULL_REQUEST':
    case 'NO_FAILING_CHECKS':
      return `${notDone} ${sentence(err.message)}`;
    case 'FORGE_UNREACHABLE':
      return `${notDone} GitHub could not be reached: ${sentence(err.message)}`;
    case 'PUSH_REJECTED':
      return `${notDone} The remote refused the push. It said:\n${err.message}`;
    default:
      return `${notDone} ${sentence(err.message)}`;
  }
}
