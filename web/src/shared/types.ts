// The wire types of docs/protocol.md: the Session JSON, the workflow, and
// every WebSocket message in each direction.

export type SessionStatus = 'active' | 'waiting' | 'limited' | 'idle' | 'error' | 'stopped';

export interface Session {
  id: string;
  name: string;
  status: SessionStatus;
  /** Why it has its status: for a waiting session, what its agent asks. */
  reason?: string;
  /** While it waits: when the wait began. */
  waitingSince?: string; // RFC 3339
  agent: string;
  command: string[];
  cwd: string;
  createdAt: string;
  lastActivityAt: string;
  exitCode?: number;
  cols: number;
  rows: number;
  /**
   * Whether the agent's process runs. An idle session may be silent but
   * alive (running) or have no process (after a restart). Absent from
   * older servers: then active and waiting mean running.
   */
  running?: boolean;
  /** The git worktree the session runs in, if it has one. */
  worktree?: Worktree;
  /** What the agent asks to be allowed, while it waits at a permission request. */
  permission?: Permission;
  /** The ports reserved for the session: the first is in its agent's $AGENTMUX_PORT. */
  ports?: Ports;
  /** The check of its last turn, running or ended; absent before the first. */
  check?: SessionCheck;
  /** Whether a failed check is queued to the agent as a prompt. */
  sendFailures: boolean;
  /** The archive script's run when its worktree was removed; absent when none ran. */
  archive?: CheckResult;
  /** A worktree session's setup script's latest run; absent for one without. */
  setup?: SessionSetup;
  /** For a run session: the session whose run script it runs. */
  runOf?: string;
  /** For a session an agent started through agentmux's MCP tools: the session whose agent started it. */
  startedBy?: string;
  /** What the session's agent reported it spends; absent until it reports. */
  usage?: Usage;
  /** The account's usage limit that stopped the agent, while it waits for the reset (status limited). */
  limit?: Limit;
  /** The pull request of the session's branch, once one was opened or found; its state comes in session.pullRequest. */
  pullRequest?: PullRequestRef;
}

/** Which pull request a session's branch has (docs/protocol.md, "Pull requests"). */
export interface PullRequestRef {
  number: number;
  url: string;
}

/** A reviewer's latest review of a pull request. */
export interface PullRequestReview {
  author: string;
  state: 'approved' | 'changes_requested' | 'commented' | 'dismissed';
  submittedAt: string; // RFC 3339
}

/** What a pull request's head's checks add up to. */
export interface PullRequestChecks {
  state: 'passing' | 'failing' | 'pending' | 'none';
  failing: string[];
  pending: string[];
  passed: number;
}

/** How a session's pull request stands, as session.pullRequest and GET /api/sessions/:id/pull-request give it. */
export interface PullRequestView {
  number: number;
  url: string;
  /** '' when no look has seen it yet: error says why. */
  state: 'open' | 'draft' | 'merged' | 'closed' | '';
  title: string;
  /** approved, changes_requested, or '' for neither. */
  reviewDecision: '' | 'approved' | 'changes_requested';
  /** Each reviewer's latest review, the oldest first. */
  reviews: PullRequestReview[];
  checks: PullRequestChecks;
  /** Review threads not resolved. */
  unresolved: number;
  checkedAt: string; // RFC 3339
  /** Why the last look failed, when it did: the rest is what the look before saw. */
  error?: string;
}

/** session.pullRequest: how a session's pull request stands, at each change and on connecting. */
export interface PullRequestMessage {
  type: 'session.pullRequest';
  sessionId: string;
  pullRequest: PullRequestView;
}

/** An account's usage limit that stopped a session's agent (docs/protocol.md, "Limits"). */
export interface Limit {
  since: string; // RFC 3339
  /** When the limit resets; absent when the agent did not say. */
  resetsAt?: string;
  message: string;
  /** Whether agentmux sends the session on at the reset. */
  continue: boolean;
  /** When agentmux sent it on. */
  continuedAt?: string;
}

export type SetupStatus = 'running' | 'passed' | 'failed' | 'stopped' | 'interrupted';

/** A worktree session's setup script's latest run: the agent starts once it passed. */
export interface SessionSetup {
  status: SetupStatus;
  /** -1 while it runs and when it did not exit by itself. */
  exitCode: number;
  startedAt: string;
  durationMs: number;
  script: string;
  hash: string;
  /** The agent has run since the session was made (after the setup, or without it). */
  agentStarted: boolean;
}

export interface SessionSetupMessage {
  type: 'session.setup';
  sessionId: string;
  setup?: SessionSetup;
}

/** A block of consecutive TCP ports reserved for a session. */
export interface Ports {
  first: number;
  count: number;
}

/** A permission request: the tool the agent wants to use and a short summary of its input. */
export interface Permission {
  tool: string;
  /** A file's path, a command, a URL, or the input as clipped JSON; absent when there is nothing to say. */
  summary?: string;
}

export interface Worktree {
  /** The worktree's directory, absolute. */
  path: string;
  /** The branch checked out in it. */
  branch: string;
  /** The branch (or commit) it was made from, which its work merges into; absent for older worktrees. */
  base?: string;
  /** The base's tip once the branch was merged from agentmux. */
  merged?: string;
  /** The branch's commit that was merged: what the branch adds counts from it. */
  mergedTip?: string;
  /** Its worktree was removed since (after a merge): the session cannot resume. */
  archived?: boolean;
}

export type StepStatus = 'completed' | 'in_progress' | 'pending';

export interface WorkflowStep {
  name: string;
  status: StepStatus;
  displayName?: string;
}

export interface Workflow {
  currentStep: string;
  completedSteps: string[];
  steps: WorkflowStep[];
}

/** How the panes are laid out; the server's layout.shift uses the first three. */
export type LayoutMode = 'terminal' | 'artifact' | 'split' | 'changes' | 'preview';

export type MemoryLevel = 'ok' | 'warning' | 'critical';

export type FileEvent = 'add' | 'change' | 'unlink';

// Client to server.
export type ClientMessage =
  | { type: 'terminal.input'; sessionId: string; data: string }
  | { type: 'terminal.interrupt'; sessionId: string }
  | { type: 'terminal.resize'; sessionId: string; cols: number; rows: number; take?: boolean }
  | { type: 'session.attach'; sessionId: string; since?: number; lines?: number }
  | { type: 'session.detach'; sessionId: string }
  | { type: 'terminal.ack'; sessionId: string; seq: number; pace?: boolean }
  | { type: 'session.resume'; sessionId: string }
  | { type: 'heartbeat'; timestamp?: number }
  | ClientHelloMessage
  | { type: 'prompt.queue'; sessionId: string; text: string }
  | { type: 'prompt.dequeue'; sessionId: string; promptId: string; force?: boolean }
  | { type: 'review.comment'; sessionId: string; path: string; line: number; endLine?: number; text: string }
  | { type: 'review.uncomment'; sessionId: string; commentId: string }
  | { type: 'review.discard'; sessionId: string }
  | { type: 'review.send'; sessionId: string; as?: 'prompt' | 'comment' };

/** Who is at this connection; fields left out keep their value (protocol.md, client.hello). */
export interface ClientHelloMessage {
  type: 'client.hello';
  name?: string;
  color?: string;
  key?: string;
  /** The session on screen, or ''. */
  viewing?: string;
}

// Server to client.
export interface SessionAttachedMessage {
  type: 'session.attached';
  sessionId: string;
  seq: number;
  cols: number;
  rows: number;
  status: SessionStatus;
  reset: boolean;
  /**
   * Where output new to every client begins: terminal queries before it
   * were answered, or can no longer be, so their answers must not be sent.
   * No frame spans it.
   */
  live: number;
  /** The replay left out older lines than the attach's lines asked for. */
  partial?: boolean;
}

/** A session's new size, and the connection (client.welcome's id) whose size it is. */
export interface SessionResizedMessage {
  type: 'session.resized';
  sessionId: string;
  cols: number;
  rows: number;
  by: string;
}

export interface TerminalOutputMessage {
  type: 'terminal.output';
  sessionId: string;
  data: string;
  seq: number;
}

export interface TerminalExitMessage {
  type: 'terminal.exit';
  sessionId: string;
  exitCode: number;
  signal?: number;
}

export interface SessionCreatedMessage {
  type: 'session.created';
  session: Session;
}

export interface SessionStatusMessage {
  type: 'session.status';
  sessionId: string;
  status: SessionStatus;
  reason?: string;
  /** Whether the agent's process runs (absent from older servers). */
  running?: boolean;
  /** With status waiting: what the agent asks to be allowed, when it is a permission request. */
  permission?: Permission;
  /** While the account's usage limit stops the agent (status limited, or a restored session). */
  limit?: Limit;
}

export interface SessionDestroyedMessage {
  type: 'session.destroyed';
  sessionId: string;
}

/** The agent waits for the user: sent once per waiting period, with session.status waiting. */
export interface SessionNeedsInputMessage {
  type: 'session.needsInput';
  sessionId: string;
  /** Names the session and says why, to be shown as it is. */
  message: string;
  permission?: Permission;
}

export type WarningSeverity = 'warning' | 'error';

/** A session has been silent for a long time: it may be stuck. */
export interface SessionWarningMessage {
  type: 'session.warning';
  sessionId: string;
  message: string;
  severity: WarningSeverity;
}

export interface HeartbeatMessage {
  type: 'heartbeat';
  timestamp: number;
  echo?: number;
}

export interface ServerShutdownMessage {
  type: 'server.shutdown';
  message: string;
  gracePeriodMs: number;
}

export interface ErrorMessage {
  type: 'error';
  code?: string;
  message: string;
  sessionId?: string;
}

export interface FileChangedMessage {
  type: 'file.changed';
  path: string; // absolute
  event: FileEvent;
  timestamp: string; // RFC 3339
}

/** One event of file.recent: a file.changed's fields. */
export type RecentFile = Omit<FileChangedMessage, 'type'>;

/** The last file events, oldest first, sent to a connection as it connects. */
export interface FileRecentMessage {
  type: 'file.recent';
  files: RecentFile[];
}

export interface LayoutShiftMessage {
  type: 'layout.shift';
  mode: LayoutMode;
  trigger: string;
  path: string; // workspace-relative
  /** Set when the document is in that session's worktree; absent for the workspace's. */
  sessionId?: string;
}

export interface WorkflowUpdatedMessage {
  type: 'workflow.updated';
  /** Set when the workflow is that session's worktree's; absent for the workspace's. */
  sessionId?: string;
  workflow: Workflow;
  /** The workspace's status file it was read from (workspace-relative); absent for a session's. */
  file?: string;
}

export type DiffFileStatus = 'added' | 'modified' | 'deleted' | 'renamed';

/** One file in a session.diff: paths relative to the top of the session's tree. */
export interface DiffFileSummary {
  path: string;
  oldPath?: string;
  status: DiffFileStatus;
  additions: number;
  deletions: number;
  binary?: boolean;
}

/** What a session changed in its working tree against its base commit. */
export interface SessionDiffMessage {
  type: 'session.diff';
  sessionId: string;
  base: string;
  /** At most 1,000 (then truncated); the totals count every file. */
  files: DiffFileSummary[];
  additions: number;
  deletions: number;
  truncated?: boolean;
}

/**
 * Two sessions that change the same file in different trees of one
 * repository (GET /api/overlaps, overlaps.changed).
 */
export interface Overlap {
  /** The two sessions' ids. */
  sessions: string[];
  path: string;
  /** Their changes of the file overlap or touch: a merge of both would conflict. */
  lines: boolean;
  /** They count from different versions of the file, so lines were not compared. */
  basesDiffer?: boolean;
  /** Each session's hunks that meet the other's, when lines. */
  hunks?: OverlapHunk[];
}

/** A hunk of one session's change that meets the other session's: lines of the base (old) and of its tree (new). */
export interface OverlapHunk {
  sessionId: string;
  oldStart: number;
  oldLines: number;
  newStart: number;
  newLines: number;
}

/** The whole list of overlaps, when it changes and on connecting. */
export interface OverlapsChangedMessage {
  type: 'overlaps.changed';
  overlaps: Overlap[];
}

export interface ResourceWarningMessage {
  type: 'resource.warning';
  message: string;
  memoryUsagePercent: number;
  isAcceptingNewSessions: boolean;
  level: MemoryLevel;
}

/** Saving the sessions fails, or works again (docs/protocol.md, Saving fails). */
export interface SaveStatusMessage {
  type: 'save.status';
  failing: boolean;
  /** What failed, and why, for people. */
  message: string;
  /** The database file. */
  database: string;
  /** When saving started failing, or worked again: Unix milliseconds. */
  since: number;
  /** The database's last refusal, while failing. */
  error?: string;
  /** What to do, while failing. */
  advice?: string;
}

/** Who this connection is (docs/protocol.md, client.hello). */
export interface ClientWelcomeMessage {
  type: 'client.welcome';
  /** The connection's id, as in session.participants. */
  id: string;
  /** Who queued a prompt: the same across reconnects with the same key. */
  authorId: string;
  name: string;
  color: string;
}

export interface Participant {
  /** The connection's id. */
  id: string;
  name: string;
  color: string;
  /** The session is that client's active tab. */
  viewing: boolean;
  /** When it last typed into the session (Unix ms); absent until it types. */
  lastInputAt?: number;
  /** Someone watching through a read-only link: never types nor sizes. */
  viewer?: boolean;
}

export interface SessionParticipantsMessage {
  type: 'session.participants';
  sessionId: string;
  participants: Participant[];
}

export interface QueuedPrompt {
  id: string;
  /** The author's name when the prompt was queued. */
  author: string;
  authorId: string;
  text: string;
  queuedAt: string; // RFC 3339
}

export interface PromptListMessage {
  type: 'prompt.list';
  sessionId: string;
  prompts: QueuedPrompt[];
  rev: number;
}

export interface PromptQueuedMessage {
  type: 'prompt.queued';
  sessionId: string;
  prompt: QueuedPrompt;
  rev: number;
}

export interface PromptQueuedAckMessage {
  type: 'prompt.queued.ack';
  sessionId: string;
  promptId: string;
  /** 1 is next. */
  position: number;
}

/** A prompt left the queue: typed into the agent (delivered) or taken off by its author (dequeued). */
export interface PromptGoneMessage {
  type: 'prompt.delivered' | 'prompt.dequeued';
  sessionId: string;
  promptId: string;
  rev: number;
}

/** A reviewer's comment on lines of a file, in a session's review draft. */
export interface ReviewComment {
  id: string;
  /** Relative to the top of the session's tree, as the diff names it. */
  path: string;
  /** The lines, 1-based, in the file as it is now; endLine equals line for one line. */
  line: number;
  endLine: number;
  text: string;
  /** The author's id (client.welcome's authorId) and name. */
  author: { id: string; name: string };
  at: string; // RFC 3339
}

/** A session's whole review draft, oldest comment first; sent on attach and when it changes. */
export interface ReviewDraftMessage {
  type: 'review.draft';
  sessionId: string;
  comments: ReviewComment[];
  rev: number;
}

/** Where a session's branch stands after an action on it from agentmux (docs/protocol.md, session.branch). */
export interface SessionBranchMessage {
  type: 'session.branch';
  sessionId: string;
  /** commit, merge, push, update or archive. */
  action: string;
  branch: string;
  /** Present for a worktree session, with its ahead and behind counts. */
  base?: string;
  ahead: number;
  behind: number;
  commit?: string;
  merged?: string;
  archived?: boolean;
  remote?: string;
  /** After a push to a known forge: the page that opens a pull request. */
  pullRequestUrl?: string;
  conflicts?: string[];
}

/** A snapshot of a session's tree, taken at the end of an agent's turn, on request, or before a restore. */
export interface Checkpoint {
  id: number;
  time: string; // RFC 3339
  commit: string;
  /** What changed since the checkpoint before (the first: since the commit checked out). */
  files: number;
  insertions: number;
  deletions: number;
  /** The untracked files it left out as too big, biggest first; absent when none. */
  skipped?: SkippedFile[];
  /** How many more it left out than skipped names. */
  skippedMore?: number;
  /** The check script's run on its tree; absent when none ran. */
  check?: CheckResult;
}

export type CheckStatus = 'running' | 'passed' | 'failed' | 'timeout' | 'superseded';

/** A workspace script in force (GET /api/scripts). */
export interface WorkspaceScript {
  name: 'setup' | 'run' | 'archive' | 'check';
  text: string;
  /** agentmux.json, conductor.json, or flag (the server's own: needs no approval). */
  source: string;
  /** The SHA-256 of its text, which an approval names. */
  hash: string;
  approved: boolean;
}

export interface ScriptsResponse {
  file: string | null;
  runMode: 'concurrent' | 'exclusive';
  scripts: WorkspaceScript[];
  /** The page's workspace settings ('' for a script not set there), which win over the file. */
  settings: ScriptSettings;
}

/** The scripts set in the page's workspace settings; '' sets none. */
export interface ScriptSettings {
  setup: string;
  run: string;
  archive: string;
  check: string;
  runMode: '' | 'concurrent' | 'exclusive';
}

/** One run of the workspace's check script. */
export interface CheckResult {
  status: CheckStatus;
  /** -1 while running and when it did not exit by itself. */
  exitCode: number;
  durationMs: number;
  /** The end of its output (at most 8 KiB), as plain text. */
  output: string;
  /** The SHA-256 of the script's text that ran. */
  hash?: string;
}

/** The check of a session's turn. */
export interface SessionCheck extends CheckResult {
  /** The turn's checkpoint, whose tree was checked. */
  checkpoint: number;
  /** Its failure was queued to the agent as a prompt. */
  sent?: boolean;
  /** Its failure was not sent: three in a row were already. */
  held?: boolean;
}

export interface SessionCheckMessage {
  type: 'session.check';
  sessionId: string;
  check?: SessionCheck;
  sendFailures: boolean;
}

/** An untracked file a checkpoint left out as too big to keep (--checkpoint-max-file, --checkpoint-max-total). */
export interface SkippedFile {
  path: string;
  size: number;
  /** file: bigger than the limit of one file; total: the checkpoint's smaller files reached its total without it. */
  reason: 'file' | 'total';
}

export interface SessionCheckpointMessage {
  type: 'session.checkpoint';
  sessionId: string;
  checkpoint: Checkpoint;
}

/** A TCP port listening in the container (GET /api/ports, ports.changed). */
export interface ListeningPort {
  port: number;
  /** The listening process, when the server may read it. */
  pid?: number;
  command?: string;
  /** The session whose agent started the process. */
  sessionId?: string;
  /** Where its preview is, for this page (GET /api/ports only). */
  url?: string;
}

/**
 * The listed ports changed: what changed since this connection's last
 * ports.changed, or, with reset (a connection's first), the whole listing.
 * At most 100 ports are listed, sessions' first; more counts the others.
 */
export interface PortsChangedMessage {
  type: 'ports.changed';
  reset?: boolean;
  /** New to the list, or replacing the entry of the same port; never with a url, which only GET /api/ports gives. */
  added: Omit<ListeningPort, 'url'>[];
  removed: number[];
  more: number;
}

/** What a session's agent reported it spends, in its own figures. */
export interface Usage {
  model?: string;
  costUsd?: number;
  inputTokens?: number;
  outputTokens?: number;
  /** How full the context window is, 0 to 100. */
  contextPercent?: number;
  contextSize?: number;
  /** The account's windows (a subscription's 5-hour and weekly limits). */
  windows?: LimitWindow[];
  source: string;
  updatedAt: string; // RFC 3339
}

export interface LimitWindow {
  /** five_hour or seven_day, as Claude Code names them. */
  name: string;
  usedPercent: number;
  resetsAt?: string; // RFC 3339
}

/** A checkpoint as GET /api/sessions/:id/checkpoints lists it: with what the agent's turns that ended since the checkpoint before spent, when it reports it. */
export interface ListedCheckpoint extends Checkpoint {
  usage?: Spent;
}

/** What some turns of an agent spent, added up. */
export interface Spent {
  turns: number;
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
}

/** What one turn of an agent spent (GET /api/usage). */
export interface TurnUsage {
  turn: number;
  endedAt: string; // RFC 3339
  /** The first checkpoint taken after the turn ended, which holds its tree. */
  checkpoint?: number;
  inputTokens?: number;
  outputTokens?: number;
  costUsd?: number;
}

/** What a viewer, through a read-only link, is shown of its session. */
export interface ViewedSession {
  id: string;
  name: string;
  agent: string;
  status: SessionStatus;
  running: boolean;
  cols: number;
  rows: number;
}

/** share.welcome: a viewer's first message, the link and the one session it shows. */
export interface ShareWelcomeMessage {
  type: 'share.welcome';
  shareId: string;
  /** RFC 3339. */
  expiresAt: string;
  /** Whether the replay holds what came before the current screen. */
  scrollback: boolean;
  session: ViewedSession;
}

/** session.answered: a person answered a waiting session without its terminal (from a hub, or the API). */
export interface AnsweredMessage {
  type: 'session.answered';
  sessionId: string;
  answer: 'allow' | 'deny' | 'reply';
  /** Who answered, as they named themselves: "alice (hub)". */
  by: string;
  permission?: Permission;
  text?: string;
  timestamp: string; // RFC 3339
}

/** session.continued: agentmux sent on a session a usage limit stopped, once the limit reset. */
export interface ContinuedMessage {
  type: 'session.continued';
  sessionId: string;
  /** The prompt typed; empty when a queued prompt went instead. */
  text: string;
  resetsAt?: string; // RFC 3339
  timestamp: string; // RFC 3339
}

/** usage.updated: a session's agent reported anew what it spends. */
export interface UsageMessage {
  type: 'usage.updated';
  sessionId: string;
  usage: Usage;
}

/**
 * A call an agent made to agentmux's MCP tools, done or refused: a line of
 * the activity feed, broadcast as it happens and never replayed.
 */
export interface AgentCallMessage {
  type: 'agent.call';
  /** The calling agent's session. */
  sessionId: string;
  /** The tool, such as start_session. */
  tool: string;
  /** What was done, for people: "planner started 'tests' on feature/tests". */
  text: string;
  /** The session the call was about, if any. */
  targetId?: string;
  /** Why the call was refused or failed, when it was. */
  error?: string;
  timestamp: string; // RFC 3339
}

export type ServerMessage =
  | SessionAttachedMessage
  | TerminalOutputMessage
  | TerminalExitMessage
  | SessionCreatedMessage
  | SessionStatusMessage
  | SessionDestroyedMessage
  | SessionResizedMessage
  | SessionNeedsInputMessage
  | SessionWarningMessage
  | HeartbeatMessage
  | ServerShutdownMessage
  | ErrorMessage
  | FileChangedMessage
  | FileRecentMessage
  | LayoutShiftMessage
  | WorkflowUpdatedMessage
  | SessionDiffMessage
  | ResourceWarningMessage
  | SaveStatusMessage
  | ClientWelcomeMessage
  | SessionParticipantsMessage
  | PromptListMessage
  | PromptQueuedMessage
  | PromptQueuedAckMessage
  | PromptGoneMessage
  | ReviewDraftMessage
  | SessionBranchMessage
  | SessionCheckpointMessage
  | SessionCheckMessage
  | SessionSetupMessage
  | PortsChangedMessage
  | OverlapsChangedMessage
  | AgentCallMessage
  | AnsweredMessage
  | ShareWelcomeMessage
  | PullRequestMessage
  | ContinuedMessage
  | UsageMessage;

// HTTP API bodies.
export interface ResourcesResponse {
  usedBytes: number;
  limitBytes: number;
  percent: number;
  source: string;
  level: MemoryLevel;
  acceptingNewSessions: boolean;
  sessions: { id: string; rssBytes: number }[];
}

export interface ConfigResponse {
  workspace?: string;
  maxSessions?: number;
  /** Sessions the server keeps, running or ended; past it a create is refused (409 SESSION_STORE_FULL). */
  keepSessions?: number;
  version?: string;
  /** Whether the workspace is a git repository git will work in: worktrees need one. */
  gitRepository?: boolean;
  /**
   * When git refuses the workspace because it belongs to another user:
   * why, in words, with what to do.
   */
  gitRefusal?: string;
}

export interface WorkflowResponse {
  workflow: Workflow | null;
  file: string | null;
}

/** GET /api/documents: newest first, at most 100. */
export interface DocumentsResponse {
  documents: { path: string; sessionId?: string; modifiedAt: string }[];
}

/** One file of GET /api/sessions/:id/diff. */
export interface DiffFile extends DiffFileSummary {
  binary: boolean;
  oldMode?: string;
  newMode?: string;
  /** The file's git patch ("diff --git a/... b/..."), maybe cut (then note says so). */
  patch: string;
  note?: string;
}

export interface DiffResponse {
  base: string;
  files: DiffFile[];
  truncated: boolean;
}

/** GET /api/sessions/:id/branch: a worktree session's branch against its base. */
export interface BranchResponse {
  branch: string;
  base: string;
  ahead: number;
  behind: number;
  merged?: string;
}

/** GET /api/sessions/:id/merge: what a merge would do, told before it is done. */
export interface MergePreviewResponse {
  branch: string;
  base: string;
  /** The files the merge itself would conflict in. */
  conflicts: string[];
  /** The sessions whose branches would then conflict with the base, and where. */
  others: { sessionId: string; files: string[] }[];
}

/** GET /api/overlaps. */
export interface OverlapsResponse {
  overlaps: Overlap[];
}

/** POST /api/sessions/:id/update: the base merged into the branch, the conflicts left for the agent. */
export interface UpdateResponse {
  commit: string;
  conflicts: string[] | null;
  promptId?: string;
  position?: number;
}

export interface PushResponse {
  remote: string;
  branch: string;
  /** "" when the remote is on no forge agentmux knows. */
  pullRequestUrl: string;
}

/**
 * GET /api/sessions/:id/checkpoints/:n: what checkpoint n changed since the
 * one before. Its files are the list (the checkpoint's count is their
 * number), without patches: the one patch holds them all.
 */
export interface CheckpointChange extends Omit<Checkpoint, 'files'> {
  parent: string;
  files: DiffFileSummary[];
  patch: string;
  truncated: boolean;
}
