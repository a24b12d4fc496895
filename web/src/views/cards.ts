// Answer without typing: while the session on screen waits for its user,
// a card over its terminal says what it asks. At a permission request of
// an agent whose dialog we know (answers.ts) it offers Allow and Deny,
// which send the dialog's own keys; for other agents it says so and leads
// to the terminal. For a question, or any other wait, it shows the
// reason and a reply field, whose text goes through the terminal pane's
// input path, as typing does. Allow and Deny go as an answer to that
// request (POST .../input with the permission): typed only while the
// agent still asks it, and without taking the session's size, so a
// phone that answers leaves the desktop's terminal as it was. The card floats over the terminal, never in its flow: it must
// not take rows from the session's screen.

import { agentLabel, askedQuestion, describePermission, permissionKeys } from '../models/answers';
import { byId, h } from '../shared/dom';
import { isRunning, type SessionEntry, type SessionStore } from '../models/store';
import { limitDetails } from '../models/usage';
import type { Permission } from '../shared/types';

/**
 * Between a reply's text and its Enter. An agent that tells a paste from
 * typing by how keys arrive (Claude Code) takes an Enter that comes with
 * the text as a line break; the server's prompt queue waits for the same
 * reason.
 */
const ENTER_AFTER_MS = 250;

export interface AnswerCardsDeps {
  store: SessionStore;
  /** Types keys into a session through the same path as the terminal's keyboard. */
  type(sessionId: string, data: string): void;
  /** Answers a session's permission request with its dialog's keys. */
  answer(sessionId: string, data: string, permission: Permission): Promise<void>;
  /** Whether actions may be taken (connected, not shutting down). */
  canAct(): boolean;
  /** Puts the cursor in the active session's terminal. */
  focusTerminal(): void;
  /** Turns a limited session's going on at the reset on or off. */
  setContinue(sessionId: string, on: boolean): Promise<void>;
}

export class AnswerCards {
  private readonly el = h('section', {
    class: 'answer-card',
    'data-testid': 'answer-card',
    'aria-live': 'polite',
    hidden: true,
  });
  /** What the card shows: session, kind and text; a re-render with the same key keeps a reply being written. */
  private shownKey: string | null = null;
  /** Cards closed by the user, by key: hidden until the session asks something else. */
  private readonly dismissed = new Set<string>();
  private buttons: HTMLButtonElement[] = [];

  constructor(private readonly deps: AnswerCardsDeps) {
    byId('terms').append(this.el);
    deps.store.subscribe(() => this.render());
  }

  /** Shows the active session's card, if it waits, or hides it. */
  render(): void {
    const entry = this.deps.store.active;
    const key = entry ? cardKey(entry) : null;
    // A dismissal holds while its session still asks the same thing.
    const asking = new Set(this.deps.store.all().map(cardKey));
    for (const k of this.dismissed) if (!asking.has(k)) this.dismissed.delete(k);
    if (!entry || !key || this.dismissed.has(key)) {
      this.hide();
      return;
    }
    if (key !== this.shownKey) this.build(entry, key);
    const canAct = this.deps.canAct();
    for (const b of this.buttons) b.disabled = !canAct;
  }

  private hide(): void {
    this.el.hidden = true;
    this.el.replaceChildren();
    this.shownKey = null;
    this.buttons = [];
  }

  private build(entry: SessionEntry, key: string): void {
    const s = entry.session;
    const id = s.id;
    const p = entry.permission;
    const keys = p ? permissionKeys(s.agent) : null;
    const dismiss = h('button', { class: 'icon-btn answer-dismiss', type: 'button', 'aria-label': 'Hide this card', title: 'Hide (answer in the terminal)', 'data-testid': 'answer-dismiss' }, '×');
    dismiss.addEventListener('click', () => {
      this.dismissed.add(key);
      this.hide();
      this.deps.focusTerminal();
    });
    this.buttons = [];
    let title: string;
    let detail: HTMLElement | null = null;
    let actions: HTMLElement;
    if (s.status === 'limited' && s.limit) {
      // Nothing to answer: the card says when the session goes on, and
      // lets it wait for the user instead. Typing would end the plan.
      const l = s.limit;
      title = `${agentLabel(s.agent)} stopped at the usage limit`;
      detail = h('p', { class: 'answer-question', 'data-testid': 'answer-limit' }, limitDetails(l, Date.now()));
      const toggle = l.continue
        ? this.button('Don’t go on by itself', 'btn btn-ghost', 'answer-continue-off', () => void this.deps.setContinue(id, false))
        : this.button('Go on at the reset', 'btn btn-primary', 'answer-continue-on', () => void this.deps.setContinue(id, true));
      toggle.disabled = !!l.continuedAt || !l.resetsAt;
      actions = h('div', { class: 'answer-actions' },
        this.button('Open terminal', 'btn btn-ghost', 'answer-open', () => this.deps.focusTerminal()),
        toggle);
    } else if (p) {
      title = describePermission(s.agent, p);
      if (keys) {
        const allow = this.button('Allow', 'btn btn-primary', 'answer-allow', () => void this.deps.answer(id, keys.allow, p));
        const deny = this.button('Deny', 'btn btn-ghost', 'answer-deny', () => void this.deps.answer(id, keys.deny, p));
        actions = h('div', { class: 'answer-actions' }, deny, allow);
      } else {
        // Whose dialog we have not seen: its keys would be a guess.
        actions = h('div', { class: 'answer-actions' },
          h('span', { class: 'answer-hint' }, 'Answer in the terminal.'),
          this.button('Open terminal', 'btn btn-primary', 'answer-open', () => this.deps.focusTerminal()));
      }
    } else {
      const reason = entry.reason || 'The agent is waiting for you.';
      const question = askedQuestion(reason);
      title = question ? `${agentLabel(s.agent)} asks` : `${agentLabel(s.agent)} is waiting for you`;
      detail = h('p', { class: 'answer-question', 'data-testid': 'answer-question' }, question ?? capitalize(reason));
      actions = this.replyForm(id);
    }
    this.el.dataset.kind = s.status === 'limited' ? 'limit' : p ? 'permission' : 'question';
    this.el.dataset.sessionId = id;
    this.el.setAttribute('aria-label', title);
    this.el.replaceChildren(
      h('div', { class: 'answer-head' },
        h('span', { class: 'answer-session' }, s.name),
        h('span', { class: 'grow' }),
        dismiss),
      h('p', { class: 'answer-title', 'data-testid': 'answer-title' }, title),
      detail ?? '',
      actions,
    );
    this.el.hidden = false;
    this.shownKey = key;
  }

  private button(label: string, cls: string, testid: string, onClick: () => void): HTMLButtonElement {
    const b = h('button', { class: cls, type: 'button', 'data-testid': testid }, label);
    b.addEventListener('click', () => {
      if (this.deps.canAct()) onClick();
    });
    this.buttons.push(b);
    return b;
  }

  /** A reply typed as the user would: the text, then Enter on its own. */
  private replyForm(id: string): HTMLFormElement {
    const input = h('input', {
      class: 'answer-reply',
      type: 'text',
      'data-testid': 'answer-reply',
      'aria-label': 'Reply',
      placeholder: 'Reply…',
      autocomplete: 'off',
      enterkeyhint: 'send',
    });
    const send = h('button', { class: 'btn btn-primary', type: 'submit', 'data-testid': 'answer-send' }, 'Send');
    this.buttons.push(send);
    const form = h('form', { class: 'answer-form', novalidate: true }, input, send);
    form.addEventListener('submit', (ev) => {
      ev.preventDefault();
      if (!this.deps.canAct()) return;
      const text = input.value;
      if (text) this.deps.type(id, text);
      window.setTimeout(() => this.deps.type(id, '\r'), text ? ENTER_AFTER_MS : 0);
      input.value = '';
    });
    return form;
  }
}

/** The identity of what a waiting session asks, or null when it asks nothing. */
function cardKey(e: SessionEntry): string | null {
  const l = e.session.limit;
  if (e.session.status === 'limited' && l && isRunning(e.session) && !e.closing) {
    return `${e.session.id}\nlimit\n${l.resetsAt ?? ''}\n${l.continue}\n${l.continuedAt ?? ''}`;
  }
  if (!e.needsInput || !isRunning(e.session) || e.closing) return null;
  const what = e.permission ? `permission\n${e.permission.tool}\n${e.permission.summary ?? ''}` : `question\n${e.reason}`;
  return `${e.session.id}\n${what}`;
}

function capitalize(s: string): string {
  return s.charAt(0).toUpperCase() + s.slice(1);
}
