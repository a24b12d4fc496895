// agentmux's browser UI: wires the WebSocket, the HTTP API and the views.
// Each concern lives in its own module; this file routes messages and
// decides what is allowed (connected, not shutting down, under the limits).

import type { Terminal } from '@xterm/xterm';
import { api } from './shared/api';
import { ActivityFeed } from './views/activity';
import { ANSWER_TOOL, CONTINUE_TOOL, answeredText } from './models/activity';
import { ArtifactPane } from './views/artifact';
import { colorFor } from './shared/avatars';
import { Banners } from './views/banners';
import { AnswerCards } from './views/cards';
import { ChangesView } from './changes/changes';
import { OverlapBanner } from './changes/overlaps';
import { CheckpointsPanel } from './changes/checkpoints';
import { WorkspaceDiff } from './changes/diffs';
import { DiffSummaries } from './models/diffs';
import { Overlaps } from './models/overlaps';
import { byId } from './shared/dom';
import { RecentDocs } from './views/docs';
import { Identity } from './views/identity';
import { attachFiles } from './terminal/attach';
import { KeyBar } from './phone/keybar';
import { LayoutController } from './views/layout';
import { Notifier, updateTitle } from './views/notify';
import { SCRIPTS_FILES, ScriptsTrust } from './views/trust';
import { SetupBar } from './views/setup';
import { ScriptSettingsDialog } from './views/scriptsettings';
import { SessionMenu, ShareDialog } from './views/share';
import { RunButtons } from './views/run';
import { HeaderPeople } from './views/participants';
import { Participants } from './models/participants';
import { isDoc, WorkspaceRoot } from './shared/paths';
import { setUpSmallScreens } from './phone/phone';
import { PreviewView } from './views/preview';
import { QueuePanel } from './views/queue';
import { PromptQueues } from './models/queues';
import { ReviewView } from './changes/review';
import { ReviewDrafts } from './models/drafts';
import { ShipBar } from './changes/ship';
import { ShipState } from './models/ship';
import { PullRequestBar } from './changes/pullrequest';
import { PullRequests, type PullRequestTurn } from './models/pullrequests';
import { ServerState } from './models/server';
import { SessionListSync } from './models/listsync';
import { Workflows } from './models/workflows';
import { StatusBar } from './views/statusbar';
import { AccountWindows } from './views/usage';
import { SessionStore, runsShell } from './models/store';
import { TabBar } from './views/tabs';
import { TerminalPane } from './terminal/termpane';
import { EarlyKeys } from './terminal/earlykeys';
import { FocusClaim } from './terminal/focusclaim';
import { toast } from './shared/toast';
import type { ErrorMessage, FileChangedMessage, LayoutMode, LayoutShiftMessage, PullRequestMessage, ServerMessage } from './shared/types';
import { WsClient, wsURL } from './shared/ws';
import { WorkflowPanel } from './views/workflow';
import { loadSetting, saveSetting } from './shared/settings';

declare global {
  interface Window {
    __agentmux: {
      terminals: Map<string, Terminal>;
      activeSessionId(): string | null;
      connectionState(): string;
      /** Set once the notifier exists: resolves when its shows and withdrawals are done. */
      notificationsSettled?(): Promise<void>;
    };
  }
}

const NARROW = window.matchMedia('(max-width: 800px)');
const COARSE = window.matchMedia('(pointer: coarse)');
// First, before anything waits on the network: keys typed while the page
// loads are the terminal's once it takes the focus.
const earlyKeys = new EarlyKeys(!COARSE.matches);
const SIDEBAR_KEY = 'agentmux.sidebarCollapsed';

// The models: state no view owns (models/).
/** Shutdown, memory and the limits on sessions. */
const server = new ServerState();
/** The workspace's workflow, and each session's that came from its worktree. */
const workflows = new Workflows();
/** The session events a GET /api/sessions in flight must not miss. */
const sessionList = new SessionListSync<ServerMessage>();
const store = new SessionStore();
const root = new WorkspaceRoot();
/** Each session's latest session.diff. */
const diffs = new DiffSummaries();
/** Sessions in other trees of the repository that change the same files. */
const overlaps = new Overlaps();
/** Who is in each session, and each session's prompt queue. */
const people = new Participants();
const queues = new PromptQueues();
/** Each session's review draft. */
const reviews = new ReviewDrafts();
/** Each session's pull request on the forge, and the forge's readiness. */
const pullRequests = new PullRequests();

const ws = new WsClient({
  url: wsURL(),
  onMessage,
  onOpen: () => void onConnected(),
  onChange: onConnectionChange,
});
// The connection and the session list, the two round trips a reload's
// first screen waits for, start before the rest of the page is built:
// their answers are handled once this module has run.
ws.start();
void refreshSessions();

const canAct = () => ws.state === 'connected' && !server.shuttingDown;

/** Who this page is to the others: said on every connection and tab change. */
const identity = new Identity({
  send: (m) => ws.send(m),
  // A page in the background views nothing.
  viewing: () => (document.visibilityState === 'visible' ? (store.activeId ?? '') : ''),
  toast,
});
document.addEventListener('visibilitychange', () => identity.viewingChanged());
const meId = () => identity.me?.id ?? null;

const pane = new TerminalPane({
  store,
  ws,
  canAct,
  keyFilter: (ev) => !isAppShortcut(ev),
  onUserInput: (id) => {
    layout.noteTyping();
    store.setNeedsInput(id, false); // the user answered
  },
  toast,
  meId,
  rewriteInput: (data: string): string => keyBar.rewrite(data),
  onSetupHold: () => setupBar.nudge(),
});
// Keys a phone keyboard lacks, under the terminal (touch screens only).
const keyBar = new KeyBar(byId('terminal-pane'), {
  active: () => pane.activeView,
  subscribe: (fn) => store.subscribe(fn),
  attach: (files) => {
    const id = store.activeId;
    const view = pane.activeView;
    if (id && view) void attachFiles(id, view.term, files, { toast, canAct });
  },
});

// The test hook (web/README.md): present once the terminal pane exists.
window.__agentmux = {
  terminals: pane.terminals,
  activeSessionId: () => store.activeId,
  connectionState: () => ws.state,
};

const layout = new LayoutController((path) => artifact.open(path), isForShownSession);
const artifact = new ArtifactPane(() => layout.revealArtifact());
const docs = new RecentDocs((path) => openFromUser(path));
const activity = new ActivityFeed(root, (rel) => openFromUser(rel), (port) => showPort(port), (id) => showSessionFromFeed(id));
// The dev servers the agents start; a port a session's process opens is a
// line in the activity feed. Ports of no session (agentmux itself, a
// docker proxy) are only listed in the Preview view: in the feed they were
// noise.
const preview = new PreviewView({
  store,
  layout,
  onOpened: (p) => {
    if (p.sessionId) activity.addPort({ port: p.port, command: p.command, session: store.get(p.sessionId)?.session.name ?? p.sessionId });
  },
});
layout.onChange((mode) => preview.setShown(mode === 'preview'));
const workflow = new WorkflowPanel((path) => openFromUser(path));
const banners = new Banners(() => ws.retry());
const statusBar = new StatusBar((r) => {
  server.memory(r.percent, r.level, r.acceptingNewSessions);
  updateNewSession();
});
const tabs = new TabBar({
  store,
  canAct,
  diffs,
  people,
  overlaps,
  meId,
  onSelect: selectSession,
  onCreated: (id) => {
    pane.claimSize(id); // who creates a session will type there
    selectSession(id);
  },
  onShowChanges: () => layout.set('changes'),
  toast,
});
// A phone's switcher picks a session without the terminal's focus, which would raise the keyboard.
setUpSmallScreens({
  store, tabs, layout, canAct, people, meId,
  select: (id) => (COARSE.matches ? store.select(id) : selectSession(id)),
  closeQueue: () => queuePanel.setOpen(false, false),
});
new WorkspaceDiff(diffs, store, (id) => {
  selectSession(id);
  layout.set('changes');
});
// The account's usage windows, as the sessions' agents last reported them.
new AccountWindows(store);
// Prompts and review comments carry their author's name: their colour is
// whoever by that name is in a session now, else one made from their id.
const colorOfAuthor = (authorId: string, name: string) =>
  identity.me?.authorId === authorId ? identity.me.color : (people.colorOfName(name, store.activeId) ?? colorFor(authorId));
const review = new ReviewView({
  drafts: reviews,
  send: (m) => ws.send(m),
  canAct,
  myAuthorId: () => identity.me?.authorId ?? null,
  colorOf: colorOfAuthor,
  showLine: (path, line): HTMLElement | null => changes.showLine(path, line),
  runsShell: (id) => {
    const s = store.get(id)?.session;
    return !!s && runsShell(s);
  },
  toast,
});
// Commit, merge, push and the checkpoints act on what the Changes view shows.
const ship = new ShipBar({
  store,
  state: new ShipState(),
  canAct,
  myName: () => identity.me?.name ?? null,
  reloadChanges: () => void changes.load(),
  overlaps,
  toast,
});
// The branch's pull request, beside Push: open one, then follow its review and checks.
const pullRequestBar = new PullRequestBar({
  store,
  state: pullRequests,
  canAct,
  myName: () => identity.me?.name ?? null,
  showReview,
  turned: (id, turns) => notifyTurns(id, turns),
  toast,
});
const checkpoints = new CheckpointsPanel({ store, canAct, reloadChanges: () => void changes.load(), toast });
const changes = new ChangesView({ store, diffs, root, openFile: (path) => openFromUser(path), toast, observers: [review, ship, pullRequestBar, checkpoints, new OverlapBanner({ store, overlaps })] });
layout.onChange((mode) => changes.setShown(mode === 'changes'));
const notifier = new Notifier(store, selectSession, {
  by: () => identity.me?.name ?? null,
  showChanges: (id) => {
    store.select(id);
    layout.set('changes');
  },
});
const trust = new ScriptsTrust({ canAct, toast });
new ScriptSettingsDialog({ canAct, toast, changed: () => void trust.refresh() });
// "Share read-only…" in the session menu: links that watch, and nothing else.
const shareDialog = new ShareDialog({ store, canAct, toast, myName: () => identity.me?.name ?? null });
new SessionMenu(store, (id) => shareDialog.open(id));
const setupBar = new SetupBar({ store, canAct, toast, select: selectSession });
const runButtons = new RunButtons({ store, canAct, mayRun: () => trust.mayRun('run'), toast, select: selectSession });
trust.subscribe(() => runButtons.render());
window.__agentmux.notificationsSettled = () => notifier.settled();
// Answer without typing: Allow, Deny or a reply for the session on screen.
const cards = new AnswerCards({
  store,
  type: (id, data) => pane.type(id, data),
  answer: (id, data, permission) =>
    api.answer(id, data, permission).catch((err: unknown) => toast(`Not answered: ${err instanceof Error ? err.message : String(err)}`, 'error')),
  canAct,
  focusTerminal: () => pane.focusActive(),
  setContinue: (id, on) =>
    api.setContinue(id, on).then((s) => store.setStatus(id, s.status, store.get(id)?.reason, s.running, undefined, s.limit))
      .catch((err: unknown) => toast(`Not changed: ${err instanceof Error ? err.message : String(err)}`, 'error')),
});
const headerPeople = new HeaderPeople(people, () => store.activeId, meId);
const queuePanel = new QueuePanel({
  queues,
  send: (m) => ws.send(m),
  canAct,
  activeId: () => store.activeId,
  myAuthorId: () => identity.me?.authorId ?? null,
  colorOf: colorOfAuthor,
  toast,
});
identity.subscribe(() => {
  tabs.render();
  headerPeople.render();
  queuePanel.render();
  review.render();
});

artifact.onChange(() => docs.setCurrent(artifact.path));

// With a server too old for /api/config, the root is learned late: the
// documents seen so far are sorted out then.
root.onLearned(() => {
  for (const it of activity.history()) {
    const rel = root.relative(it.abs);
    if (rel && isDoc(rel)) docs.note(rel, it.event === 'unlink');
  }
});

store.subscribe(() => {
  identity.viewingChanged();
  headerPeople.render();
  queuePanel.render();
  updateTitle(store);
  updateNewSession();
  statusBar.sessionCount(store.runningCount(), server.maxSessions);
  workflows.prune((id) => store.has(id));
  showWorkflow();
});

/** The workflow panel shows the active session's workflow if one came for it, else the workspace's. */
function showWorkflow(): void {
  const next = workflows.show(store.active?.session);
  if (!next) return;
  workflow.setSource(next.sessionId ? { sessionId: next.sessionId, label: next.label } : null);
  workflow.render(next.wf);
}

/**
 * Shows a session's review draft: the Changes view, scrolled to the
 * draft, now and once the draft the server is filling next arrives.
 */
function showReview(id: string): void {
  if (store.activeId !== id) store.select(id);
  layout.set('changes');
  const reveal = () => {
    const panel = byId('review');
    if (!panel.hidden) panel.scrollIntoView({ block: 'nearest' });
  };
  requestAnimationFrame(reveal);
  pendingReveal = { id, reveal };
}
/** The draft showReview waits for, revealed once when it comes. */
let pendingReveal: { id: string; reveal: () => void } | null = null;
reviews.subscribe((id) => {
  if (pendingReveal?.id !== id) return;
  const { reveal } = pendingReveal;
  pendingReveal = null;
  requestAnimationFrame(reveal);
});

/** A view of a session's pull request came: the bar follows it, and a turn for the worse is told. */
function onPullRequest(m: PullRequestMessage): void {
  if (!m.pullRequest || !store.has(m.sessionId)) return;
  notifyTurns(m.sessionId, pullRequests.apply(m.sessionId, m.pullRequest));
}

function notifyTurns(id: string, turns: PullRequestTurn[]): void {
  const view = pullRequests.view(id);
  if (view) for (const t of turns) notifier.pullRequest(id, view, t);
}

/** Opens a document the user picked: the artifact pane comes into view. */
function openFromUser(path: string): void {
  artifact.open(path);
  layout.revealArtifact();
  byId('app').classList.remove('sidebar-open');
}

/** Shows a port the user picked (from the activity feed) in the Preview view. */
function showPort(port: number): void {
  preview.select(port);
  layout.set('preview');
  byId('app').classList.remove('sidebar-open');
}

/**
 * Shows the session an agent's call was about (a click in the activity
 * feed), over the side panel on a small screen; false when it is gone.
 */
function showSessionFromFeed(id: string): boolean {
  if (!store.has(id)) return false;
  // As the switcher: on a touch screen the terminal's focus would raise the keyboard.
  if (COARSE.matches) store.select(id);
  else selectSession(id);
  byId('app').classList.remove('sidebar-open');
  return true;
}

/** The user chose a session (a click): show it and put the cursor in it. */
function selectSession(id: string): void {
  store.select(id);
  pane.focusActive();
}

// Keys go to the terminal on screen when nothing else has the focus
// (focusclaim.ts): after a view switch, a dialog closing, and once at
// load, for the page's first session on screen. Later changes of the list
// (a session resumed, stopped, added) leave the focus alone: a claim then
// would hand a freshly resumed program a focus report it never asked
// for, with the terminal still in the last run's modes.
const focusClaim = new FocusClaim({
  terminalShown: () => !COARSE.matches && (layout.mode === 'terminal' || layout.mode === 'split'),
  caughtUp: () => pane.activeView?.caughtUp ?? null,
  focus: () => {
    pane.focusActive();
    const keys = earlyKeys.take();
    if (keys && store.activeId) pane.type(store.activeId, keys);
  },
});
layout.onChange(() => focusClaim.soon());
let claimedAtLoad = false;
store.subscribe(() => {
  if (claimedAtLoad || !store.activeId) return;
  claimedAtLoad = true;
  focusClaim.soon();
});
// The close event does not bubble: caught on its way down.
document.addEventListener('close', () => focusClaim.soon({ overButtons: true }), { capture: true });

function updateNewSession(): void {
  const { reason, note } = server.newSession(ws.state === 'connected', store.runningCount(), store.all().length);
  tabs.setNewSession(reason, note);
}

/** Everything that depends on canAct(). */
function refreshActions(): void {
  updateNewSession();
  tabs.render();
  pane.renderChrome();
  queuePanel.render();
  review.render();
  ship.render();
  cards.render();
  runButtons.render();
  setupBar.render();
}

// ---- Connection -----------------------------------------------------------

function onConnectionChange(): void {
  banners.connection(ws.state, ws.nextAttemptAt);
  statusBar.connection(ws.state);
  statusBar.roundTrip(ws.rttMs);
  if (ws.state !== 'connected') {
    pane.onDisconnected();
    // Presence and queues are re-announced on the next connection's attaches.
    identity.onDisconnected();
    people.clear();
    queues.stale();
    queuePanel.connectionLost();
    reviews.stale();
    review.connectionLost();
    checkpoints.stale();
  }
  refreshActions();
}

async function onConnected(): Promise<void> {
  // The server is back: whatever shutdown we saw is over. It re-sends a
  // memory warning, or that saving fails, at once if it still holds, so
  // clear the old ones.
  server.connected();
  banners.shutdown(null);
  banners.resource('ok', 0);
  banners.save(null);
  // Likewise the overlaps: sent on connecting only when there are any.
  overlaps.set([]);
  // Who we are first: the attaches below announce us to the others.
  identity.onConnected();
  refreshActions();
  // Re-attach every terminal from its last seq, and re-send its size, at
  // once: a session destroyed meanwhile answers SESSION_NOT_FOUND, which
  // refreshes the list, and terminals made by the refresh attach
  // themselves. Waiting for the refresh would hold every screen back.
  pane.onConnected();
  // On the first connection the page has just asked for all this; the
  // sessions only may have changed in between, without a socket to say so.
  await Promise.all(connectedBefore ? [loadConfig(), refreshSessions(), loadWorkflow(), loadDocuments()] : [refreshSessions()]);
  if (connectedBefore) checkpoints.connected();
  void trust.refresh();
  connectedBefore = true;
  if (ws.state === 'connected') pane.onConnected();
}

/** Whether the socket was connected before: a reconnection re-reads everything. */
let connectedBefore = false;

async function loadConfig(): Promise<void> {
  try {
    const c = await api.config();
    if (c.workspace) root.set(c.workspace);
    server.limits(c.maxSessions, c.keepSessions);
    tabs.setWorktreesAvailable(c.gitRepository !== false, c.gitRefusal);
    statusBar.setVersion(c.version);
    updateNewSession();
    statusBar.sessionCount(store.runningCount(), server.maxSessions);
  } catch {
    // An older server: paths.ts learns the root from what it sees.
  }
}

async function loadWorkflow(): Promise<void> {
  try {
    const r = await api.workflow();
    workflow.setFile(r.file);
    if (r.file) root.seenRelative(r.file);
    workflows.setWorkspace(r.workflow);
    showWorkflow();
  } catch {
    // keep what is shown
  }
}

/** The documents there are: written while this page was away, or before it opened. */
async function loadDocuments(): Promise<void> {
  const n = docs.beginLoad();
  try {
    const r = await api.documents();
    docs.loaded(n, r.documents.map((d) => d.path));
  } catch {
    docs.abandoned(n); // an older server, or a network error: keep what is listed
  }
}

async function refreshSessions(): Promise<void> {
  const req = sessionList.begin();
  try {
    const list = await api.sessions();
    const log = sessionList.answered(req);
    if (!log) return; // stale: a newer answer is in the store
    store.replaceAll(list);
    for (const m of log) applySessionEvent(m);
  } catch (err) {
    sessionList.failed(req);
    if ((err as { status?: number }).status === 401) {
      toast('Not authorized: open agentmux once with ?token=<token> to sign in.', 'error');
    }
  }
}

// ---- Messages -------------------------------------------------------------

function onMessage(m: ServerMessage): void {
  switch (m.type) {
    case 'session.attached': {
      pane.onAttached(m);
      store.syncStatus(m.sessionId, m.status);
      break;
    }
    case 'terminal.output':
      pane.onOutput(m);
      break;
    case 'terminal.exit':
      pane.onExit(m);
      break;
    case 'session.resized':
      pane.onResized(m);
      break;
    case 'session.created':
    case 'session.status':
    case 'session.destroyed':
    case 'session.needsInput':
    case 'session.check':
    case 'session.setup':
    case 'session.warning':
    case 'usage.updated': {
      const wasWaiting = m.type === 'session.status' && store.get(m.sessionId)?.session.status === 'waiting';
      sessionList.log(m);
      applySessionEvent(m);
      if (m.type === 'session.needsInput') notifier.needsInput(m.sessionId, m.message, m.permission);
      if (m.type === 'usage.updated') checkpoints.onUsage(m.sessionId);
      if (m.type === 'session.check') {
        checkpoints.onCheck(m);
        if (m.check) notifier.checked(m.sessionId, m.check);
      }
      if (m.type === 'session.status' && m.status === 'waiting' && !wasWaiting) notifier.needsInput(m.sessionId, m.reason, m.permission);
      if (m.type === 'session.warning') {
        const name = store.get(m.sessionId)?.session.name ?? 'A session';
        toast(`${name}: ${m.message || 'no output for a long time.'}`, m.severity === 'error' ? 'error' : 'warning');
      }
      break;
    }
    case 'heartbeat':
      break; // the round trip is measured in ws.ts
    case 'server.shutdown':
      server.shuttingDown = true;
      banners.shutdown(m.message || 'The server is shutting down.');
      refreshActions();
      break;
    case 'error':
      onServerError(m);
      break;
    case 'file.changed':
      onFileChanged(m);
      break;
    case 'file.recent':
      // What the feed showed before a reload, and what a reconnection missed.
      for (const f of m.files) root.seenAbsolute(f.path);
      activity.restore(m.files);
      break;
    case 'layout.shift':
      onLayoutShift(m);
      break;
    case 'session.diff':
      diffs.set(m);
      break;
    case 'overlaps.changed':
      overlaps.set(m.overlaps);
      break;
    case 'client.welcome':
      identity.onWelcome(m);
      break;
    case 'session.participants':
      people.set(m);
      break;
    case 'prompt.list':
    case 'prompt.queued':
    case 'prompt.delivered':
    case 'prompt.dequeued':
      queues.apply(m);
      break;
    case 'prompt.queued.ack':
      // A review.send is answered like a prompt.queue.
      if (!queuePanel.onAck(m)) review.onAck(m);
      break;
    case 'review.draft':
      reviews.apply(m);
      break;
    case 'session.branch':
      ship.onBranch(m);
      break;
    case 'session.pullRequest':
      onPullRequest(m);
      break;
    case 'session.checkpoint':
      checkpoints.onCheckpoint(m);
      break;
    case 'ports.changed':
      preview.onPorts(m);
      break;
    case 'agent.call':
      activity.addAgentCall(m);
      break;
    case 'session.continued': {
      // A line of the feed, as an agent's call is: what agentmux did for the sessions.
      const name = store.get(m.sessionId)?.session.name ?? 'a session';
      const what = m.text ? `typed "${m.text}" into '${name}'` : `sent '${name}' its queued prompt`;
      activity.addAgentCall({ type: 'agent.call', sessionId: m.sessionId, tool: CONTINUE_TOOL, text: `The usage limit reset: agentmux ${what}`, timestamp: m.timestamp });
      break;
    }
    case 'session.answered': {
      // A line of the feed: who answered, from where, without the terminal.
      const name = store.get(m.sessionId)?.session.name ?? 'a session';
      activity.addAgentCall({ type: 'agent.call', sessionId: m.sessionId, tool: ANSWER_TOOL, text: answeredText(m, name), timestamp: m.timestamp });
      break;
    }
    case 'workflow.updated':
      if (m.sessionId) workflows.setSession(m.sessionId, m.workflow);
      else {
        workflows.setWorkspace(m.workflow);
        // With several status files, the one written last is shown: name it.
        if (m.file) workflow.setFile(m.file);
      }
      showWorkflow();
      break;
    case 'save.status':
      banners.save(m);
      break;
    case 'resource.warning':
      server.memory(m.memoryUsagePercent, m.level, m.isAcceptingNewSessions);
      banners.resource(m.level, m.memoryUsagePercent, m.message);
      statusBar.memory(m.memoryUsagePercent, m.level);
      updateNewSession();
      break;
  }
}

/** Applies a session event to the store (again, after a list refresh). */
function applySessionEvent(m: ServerMessage): void {
  switch (m.type) {
    case 'session.created':
      store.upsert(m.session);
      break;
    case 'session.status':
      store.setStatus(m.sessionId, m.status, m.reason, m.running, m.permission, m.limit);
      break;
    case 'session.destroyed':
      store.remove(m.sessionId);
      diffs.prune((id) => id !== m.sessionId);
      people.forget(m.sessionId);
      queues.forget(m.sessionId);
      reviews.forget(m.sessionId);
      ship.forget(m.sessionId);
      pullRequestBar.forget(m.sessionId);
      checkpoints.forget(m.sessionId);
      break;
    case 'session.needsInput':
      store.setNeedsInput(m.sessionId, true);
      break;
    case 'session.check':
      store.setCheck(m.sessionId, m.check, m.sendFailures);
      break;
    case 'session.setup':
      store.setSetup(m.sessionId, m.setup);
      break;
    case 'usage.updated':
      store.setUsage(m.sessionId, m.usage);
      break;
    case 'session.warning':
      store.setWarning(m.sessionId, m.severity === 'error' ? 'error' : 'warning', m.message || 'no output for a long time');
      break;
  }
}

/**
 * A document the agent wrote. One from another session's worktree is
 * listed, but does not take the screen from the session on it.
 */
function onLayoutShift(m: LayoutShiftMessage): void {
  if (m.path) {
    root.seenRelative(m.path);
    if (isDoc(m.path)) docs.note(m.path);
  }
  if (!isForShownSession(m)) return;
  layout.onShift(m);
}

/** A layout.shift is for the workspace (no sessionId) or the session on screen. */
function isForShownSession(m: LayoutShiftMessage): boolean {
  return !m.sessionId || m.sessionId === store.activeId;
}

function onServerError(m: ErrorMessage): void {
  if (m.code === 'SESSION_NOT_FOUND') {
    void refreshSessions(); // deleted meanwhile
    return;
  }
  // Answers to a hello, a queue or dequeue, or a wake that failed: those
  // show their own way (or once).
  if (identity.onError(m) || queuePanel.onError(m) || review.onError(m) || pane.onServerError(m)) return;
  const name = m.sessionId ? store.get(m.sessionId)?.session.name : undefined;
  toast(name ? `${name}: ${m.message}` : m.message, 'error');
  pane.renderChrome(); // e.g. a refused resume: its button comes back
}

function onFileChanged(m: FileChangedMessage): void {
  root.seenAbsolute(m.path);
  activity.add(m);
  const rel = root.relative(m.path);
  if (!rel) return;
  if (isDoc(rel)) docs.note(rel, m.event === 'unlink');
  if (SCRIPTS_FILES.includes(rel)) void trust.refresh();
  if (rel === artifact.path) {
    if (m.event === 'unlink') artifact.markRemoved();
    else artifact.refreshSoon();
  }
}

// ---- Keyboard, help, sidebar ------------------------------------------------

const LAYOUT_KEYS: Record<string, LayoutMode> = {
  Digit1: 'terminal', Numpad1: 'terminal',
  Digit2: 'artifact', Numpad2: 'artifact',
  Digit3: 'split', Numpad3: 'split',
  Digit4: 'changes', Numpad4: 'changes',
  Digit5: 'preview', Numpad5: 'preview',
};

function isLayoutKey(ev: KeyboardEvent): boolean {
  return ev.altKey && !ev.ctrlKey && !ev.metaKey && !ev.shiftKey && ev.code in LAYOUT_KEYS;
}

function isSearchKey(ev: KeyboardEvent): boolean {
  return ev.ctrlKey && ev.shiftKey && !ev.altKey && ev.code === 'KeyF';
}

function isAppShortcut(ev: KeyboardEvent): boolean {
  return isLayoutKey(ev) || isSearchKey(ev);
}

// Capture phase: shortcuts win over the terminal, which never sees them.
window.addEventListener('keydown', (ev) => {
  layout.noteTyping();
  if (isLayoutKey(ev)) {
    ev.preventDefault();
    ev.stopPropagation();
    layout.set(LAYOUT_KEYS[ev.code]!);
  } else if (isSearchKey(ev)) {
    ev.preventDefault();
    ev.stopPropagation();
    pane.openSearch();
  }
}, { capture: true });
window.addEventListener('paste', () => layout.noteTyping(), { capture: true });

const help = byId<HTMLDetailsElement>('help');
document.addEventListener('click', (ev) => {
  if (help.open && !help.contains(ev.target as Node)) help.open = false;
});
document.addEventListener('keydown', (ev) => {
  if (ev.key === 'Escape' && help.open) help.open = false;
});

const app = byId('app');
app.classList.toggle('sidebar-collapsed', loadSetting(SIDEBAR_KEY) === '1');
byId('sidebar-toggle').addEventListener('click', () => {
  if (NARROW.matches) {
    app.classList.toggle('sidebar-open');
    return;
  }
  const collapsed = app.classList.toggle('sidebar-collapsed');
  saveSetting(SIDEBAR_KEY, collapsed ? '1' : '0');
});
byId('sidebar-scrim').addEventListener('click', () => app.classList.remove('sidebar-open'));

// ---- Start ----------------------------------------------------------------

// Where the user was before a reload: the document, then the view, once
// every view listens.
artifact.restore();
layout.start();
onConnectionChange();
void loadConfig();
void loadWorkflow();
void loadDocuments();
statusBar.startPolling();
