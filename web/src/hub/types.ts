// What the hub's API says (the contract of issue 44: GET api/inbox, the
// WebSocket's "inbox" message, POST api/inbox/answer). Kept here rather
// than in shared/types.ts, which is agentmux's protocol, checked against
// docs/protocol.md.

import type { Limit, Permission } from '../shared/types';

/** A workspace the hub follows: an agentmux it asks for its sessions. */
export interface InboxWorkspace {
  /** Where the hub reaches it; the workspace's identity in every request. */
  url: string;
  /** Its --name (its hostname by default); the URL's host until it answered once. */
  name: string;
  /** Where a browser reaches its own UI. */
  openUrl: string;
  reachable: boolean;
  /** Why it is not reachable: "refused", "token rejected", "timeout", or the error's text. */
  error?: string;
  /** When it was last reached or lost (RFC 3339). */
  since?: string;
  /** How many sessions it has (0 while unreachable). */
  sessions: number;
}

/** A session of a workspace, as the inbox lists it. */
export interface InboxSession {
  /** The workspace's url (InboxWorkspace.url). */
  workspace: string;
  workspaceName: string;
  id: string;
  name: string;
  agent: string;
  /** active, waiting, limited, idle, error, stopped (agentmux's SessionStatus). */
  status: string;
  /** Whether the agent's process runs. */
  running?: boolean;
  needsInput: boolean;
  /** What the agent asks to be allowed, while it waits at a permission request. */
  permission?: Permission;
  /** Why it waits ("the agent asks: Proceed?"). */
  reason?: string;
  /** Since when it waits (RFC 3339). */
  waitingSince?: string;
  /** The usage limit that stops the agent, while it does (status limited). */
  limit?: Limit;
  branch?: string;
  /** The lines the agent added and deleted. */
  additions?: number;
  deletions?: number;
  lastActivityAt: string;
  /** The workspace's own UI at this session (?session=ID). */
  openUrl: string;
}

/** GET api/inbox, and the WebSocket's message on every change. */
export interface InboxSnapshot {
  workspaces: InboxWorkspace[];
  sessions: InboxSession[];
}

export interface InboxMessage extends InboxSnapshot {
  type: 'inbox';
}

/** Allow or Deny the permission shown, or a reply typed as text, then Enter. */
export type Answer = 'allow' | 'deny' | { text: string };

/** POST api/inbox/answer: 204, or 404 / 409 / 502 / 400 with agentmux's error body. */
export interface AnswerRequest {
  workspace: string;
  sessionId: string;
  answer: Answer;
  /** The permission the page showed: required with allow and deny, so that another one is not answered. */
  permission?: Permission;
  /** Who answers: the name the user chose. */
  by?: string;
}
