// The hub's page (agentmux hub, issue 44): every session of every
// workspace the hub follows, in one inbox. It reads GET api/inbox at
// start, then takes the hub's WebSocket (ws, next to the page), which
// pushes the whole inbox on every change; it sends answers through POST
// api/inbox/answer, which the hub hands to the session's workspace. It
// never shows a terminal: Open leads to the session in its workspace's own
// page. The model is inbox.ts (no DOM); the views are list.ts, filters.ts,
// you.ts; the title, favicon and notifications are agentmux's own
// (shared/notifications.ts, through notify.ts).

import { ApiError, json, request } from '../shared/api';
import { showAgo } from '../shared/ages';
import { ConnectionBanner } from '../shared/connection';
import { byId } from '../shared/dom';
import { WaitingCount } from '../shared/notifications';
import { loadSetting, saveSetting } from '../shared/settings';
import { toast } from '../shared/toast';
import { WsClient, wsURL } from '../shared/ws';
import { Filters } from './filters';
import { Inbox, NO_FILTER, needsPerson, parseFilter, type Filter } from './inbox';
import { InboxList } from './list';
import { HubNotifier } from './notify';
import type { Answer, AnswerRequest, InboxMessage, InboxSession, InboxSnapshot } from './types';
import { YouButton } from './you';

declare global {
  interface Window {
    /** The tests' hook (web/README.md, "The hub's page"). */
    __agentmuxHub: {
      /** Whether the first inbox arrived. */
      loaded(): boolean;
      connectionState(): string;
      /** Resolves once the page's notifications are shown and withdrawn. */
      notificationsSettled(): Promise<void>;
    };
  }
}

const FILTER_KEY = 'agentmux.hub.filter';

const inbox = new Inbox();
let filter: Filter = parseFilter(loadSetting(FILTER_KEY));
/** Set once the WebSocket brought an inbox: a late answer of GET api/inbox is older. */
let pushed = false;

const count = new WaitingCount('agentmux hub');
const you = new YouButton();
const notifier = new HubNotifier(() => you.name());
const list = new InboxList(byId('hub-list'), byId('hub-problems'), { answer });
const filters = new Filters(byId('hub-side'), byId('hub-filters'), { onChange: setFilter });
byId('hub-summary').after(filters.button);
const app = byId('app');
const summary = byId('hub-summary');
const empty = byId('hub-empty');
const updated = byId('hub-updated');
const connState = byId('conn-state');

const banner = new ConnectionBanner(
  { banner: byId('banner-connection'), text: byId('banner-connection-text'), retry: byId<HTMLButtonElement>('retry') },
  'the hub',
  () => ws.retry(),
);
const ws = new WsClient<InboxMessage, never>({
  url: wsURL(),
  heartbeats: false,
  onOpen() {
    // Nothing to say: the hub sends the inbox at once.
  },
  onMessage(m) {
    if (m.type !== 'inbox') return;
    pushed = true;
    inbox.apply(m);
  },
  onChange() {
    banner.show(ws.state, ws.nextAttemptAt);
    connState.dataset.state = ws.state;
    connState.textContent = ws.state;
  },
});

window.__agentmuxHub = {
  loaded: () => inbox.loaded,
  connectionState: () => ws.state,
  notificationsSettled: () => notifier.settled(),
};

inbox.subscribe(() => {
  notifier.update(inbox.sessions);
  render();
});

function setFilter(f: Filter): void {
  filter = f;
  saveSetting(FILTER_KEY, JSON.stringify(f));
  render();
}

function render(): void {
  if (inbox.isStale(filter)) {
    // The workspace chosen is no longer the hub's: all of them, then.
    filter = { ...filter, workspace: '' };
    saveSetting(FILTER_KEY, JSON.stringify(filter));
  }
  const waiting = inbox.waitingCount();
  count.set(waiting);
  summary.textContent = inbox.loaded ? inbox.summary() : '';
  const shown = inbox.visible(filter);
  const hiddenWaiting = inbox.sessions.filter(needsPerson).length - shown.filter(needsPerson).length;
  filters.render(filter, inbox.workspaces, inbox.counts(filter), shown.length, hiddenWaiting);
  list.renderProblems(inbox.workspaces);
  // A column of branches only where a session shown has one.
  app.dataset.branches = shown.some((s) => s.branch || s.additions || s.deletions) ? 'some' : 'none';
  list.render(shown);
  renderEmpty(shown.length);
  if (inbox.updatedAt) showAgo(updated, inbox.updatedAt, { prefix: 'updated ' });
}

function renderEmpty(shown: number): void {
  empty.hidden = shown > 0;
  if (shown > 0) return;
  if (!inbox.loaded) {
    empty.replaceChildren('Asking the hub for its workspaces…');
    return;
  }
  if (inbox.workspaces.length === 0) {
    empty.replaceChildren(
      para('The hub follows no workspace yet.', 'empty-title'),
      para('Name them with --peer URL, --peers FILE or --discover (agentmux hub --help).'),
    );
    return;
  }
  if (inbox.sessions.length === 0) {
    empty.replaceChildren(para('No sessions in the workspaces the hub reaches.', 'empty-title'));
    return;
  }
  const all = document.createElement('button');
  all.type = 'button';
  all.className = 'btn';
  all.dataset.testid = 'hub-show-all';
  all.textContent = 'Show every session';
  all.addEventListener('click', () => setFilter({ ...NO_FILTER }));
  empty.replaceChildren(para('No session matches the filter.', 'empty-title'), all);
}

function para(text: string, cls = ''): HTMLParagraphElement {
  const p = document.createElement('p');
  if (cls) p.className = cls;
  p.textContent = text;
  return p;
}

/** Sends an answer through the hub; says what became of it. */
async function answer(s: InboxSession, a: Answer): Promise<boolean> {
  const body: AnswerRequest = { workspace: s.workspace, sessionId: s.id, answer: a };
  // The permission shown: the workspace answers only while it still asks that one.
  if ((a === 'allow' || a === 'deny') && s.permission) body.permission = s.permission;
  const by = you.name();
  if (by) body.by = by;
  const who = `${s.name} (${s.workspaceName})`;
  try {
    await request('POST', 'api/inbox/answer', body);
  } catch (err) {
    const why = err instanceof ApiError ? err.message : String(err);
    toast(`${who} was not answered: ${why}`, 'error');
    return false;
  }
  const done = a === 'allow' ? `Allowed ${s.permission?.tool ?? 'it'} for ${who}.` : a === 'deny' ? `Denied ${s.permission?.tool ?? 'it'} to ${who}.` : `Replied to ${who}.`;
  // Without a name the workspace records "someone (hub)".
  toast(by ? done : `${done} Give your name (the round button, top right) so that the workspaces record who answered.`);
  return true;
}

render();
ws.start();
void json<InboxSnapshot>('GET', 'api/inbox').then(
  (snap) => {
    if (!pushed) inbox.apply(snap);
  },
  (err: unknown) => {
    // The WebSocket may still bring it; if it cannot, its banner says so.
    if (!pushed) toast(`The hub's inbox could not be read: ${err instanceof ApiError ? err.message : String(err)}`, 'error');
  },
);
