// The wire types of docs/protocol.md: the Session JSON, the workflow, and
// every WebSocket message in each direction.

export type SessionStatus = 'active' | 'waiting' | 'idle' | 'error' | 'stopped';

export interface Session {
  id: string;
  name: string;
  status: SessionStatus;
  agent: string;
  command: string[];
  cwd: string;
  createdAt: string;
  lastActivityAt: string;
  exitCode?: number;
  cols: number;
  rows: number;
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

export type LayoutMode = 'terminal' | 'artifact' | 'split';

export type MemoryLevel = 'ok' | 'warning' | 'critical';

export type FileEvent = 'add' | 'change' | 'unlink';

// Client to server.
export type ClientMessage =
  | { type: 'terminal.input'; sessionId: string; data: string }
  | { type: 'terminal.interrupt'; sessionId: string }
  | { type: 'terminal.resize'; sessionId: string; cols: number; rows: number }
  | { type: 'session.attach'; sessionId: string; since?: number }
  | { type: 'session.detach'; sessionId: string }
  | { type: 'session.resume'; sessionId: string }
  | { type: 'heartbeat'; timestamp: number };

// Server to client.
export interface SessionAttachedMessage {
  type: 'session.attached';
  sessionId: string;
  seq: number;
  cols: number;
  rows: number;
  status: SessionStatus;
  reset: boolean;
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
}

export interface SessionDestroyedMessage {
  type: 'session.destroyed';
  sessionId: string;
}

/** Planned (protocol.md, "Not yet available"): the agent waits for the user. */
export interface SessionNeedsInputMessage {
  type: 'session.needsInput';
  sessionId: string;
  message?: string;
  reason?: string;
}

/** Planned: a session has been silent for a long time. */
export interface SessionWarningMessage {
  type: 'session.warning';
  sessionId: string;
  message?: string;
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

export interface LayoutShiftMessage {
  type: 'layout.shift';
  mode: LayoutMode;
  trigger: string;
  path?: string; // workspace-relative
}

export interface WorkflowUpdatedMessage {
  type: 'workflow.updated';
  sessionId?: string;
  workflow: Workflow;
}

export interface ResourceWarningMessage {
  type: 'resource.warning';
  message: string;
  memoryUsagePercent: number;
  isAcceptingNewSessions: boolean;
  level: MemoryLevel;
}

export type ServerMessage =
  | SessionAttachedMessage
  | TerminalOutputMessage
  | TerminalExitMessage
  | SessionCreatedMessage
  | SessionStatusMessage
  | SessionDestroyedMessage
  | SessionNeedsInputMessage
  | SessionWarningMessage
  | HeartbeatMessage
  | ServerShutdownMessage
  | ErrorMessage
  | FileChangedMessage
  | LayoutShiftMessage
  | WorkflowUpdatedMessage
  | ResourceWarningMessage;

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
  version?: string;
}

export interface WorkflowResponse {
  workflow: Workflow | null;
  file: string | null;
}
