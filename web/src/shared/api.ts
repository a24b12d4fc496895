// The HTTP API (docs/protocol.md section 7). Every failure becomes an
// ApiError carrying the server's code and message, ready to show. The
// hub's page calls its own API through request and json.

import type {
  BranchResponse, Checkpoint, CheckpointChange, ListedCheckpoint, ConfigResponse, DiffResponse, DocumentsResponse, MergePreviewResponse, OverlapsResponse, Permission, PushResponse, ResourcesResponse,
  ScriptSettings, ScriptsResponse, Session, UpdateResponse, WorkflowResponse,
} from './types';
import type { CreateShareRequest, CreatedShare, Share } from '../models/shares';
import type { CreatePullRequest, CreatedPullRequest, FixChecksResponse, PullRequestDraft, PullRequestResponse } from '../models/pullrequests';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    /** For MERGE_CONFLICT: the files that conflict. */
    readonly files: string[] = [],
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

async function errorFrom(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string; files?: unknown } };
    if (body.error?.message) {
      const files = Array.isArray(body.error.files) ? body.error.files.filter((f): f is string => typeof f === 'string') : [];
      return new ApiError(res.status, body.error.code ?? String(res.status), body.error.message, files);
    }
  } catch {
    // not JSON: a plain-text 503 during shutdown, a proxy's page...
  }
  const message = text.trim().slice(0, 200) || `${res.status} ${res.statusText}`;
  return new ApiError(res.status, String(res.status), message);
}

/** A request to the server's API, relative to the page; a failure is an ApiError with the server's words. */
export async function request(method: string, path: string, body?: unknown): Promise<Response> {
  let res: Response;
  try {
    res = await fetch(path, {
      method,
      // Everything here is live state; a cached answer is a wrong one
      // (a document rewritten within the second of its last load, say).
      cache: 'no-store',
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? null : JSON.stringify(body),
    });
  } catch (err) {
    throw new ApiError(0, 'NETWORK', `cannot reach the server (${(err as Error).message})`);
  }
  if (!res.ok) throw await errorFrom(res);
  return res;
}

/** Where POST /api/sessions/:id/attachments stored a file. */
export interface AttachmentResponse {
  /** Relative to the session's tree. */
  path: string;
  /** From the root: what is typed at the prompt. */
  absolutePath: string;
}

/**
 * Sends a file to a session's attachments as multipart/form-data (the one
 * route that takes it), in the field "file"; the browser sets the type
 * with its boundary.
 */
export async function attach(sessionId: string, file: Blob, name: string): Promise<AttachmentResponse> {
  const form = new FormData();
  form.append('file', file, name);
  let res: Response;
  try {
    res = await fetch(`${sessionPath(sessionId)}/attachments`, { method: 'POST', cache: 'no-store', credentials: 'same-origin', body: form });
  } catch (err) {
    throw new ApiError(0, 'NETWORK', `cannot reach the server (${(err as Error).message})`);
  }
  if (!res.ok) throw await errorFrom(res);
  return (await res.json()) as AttachmentResponse;
}

/** request, answered with JSON. */
export async function json<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await request(method, path, body);
  return (await res.json()) as T;
}

export interface CreateSessionRequest {
  name?: string;
  worktree?: { branch: string };
  /** A profile: claude, codex, aider, shell; the server's default when left out. */
  agent?: string;
  /** Where it runs, absolute or relative to the workspace. */
  cwd?: string;
}

export interface DeleteSessionOptions {
  /** Remove the session's git worktree as well. */
  removeWorktree?: boolean;
  /** With removeWorktree: even with uncommitted changes, which are lost. */
  force?: boolean;
}

// Paths are relative to the page (api/x, not /api/x): behind a proxy that
// serves agentmux under a path (http://host/proxy/8080/) they stay under it.
export const api = {
  config: () => json<ConfigResponse>('GET', 'api/config'),
  sessions: async () => (await json<{ sessions: Session[] }>('GET', 'api/sessions')).sessions,
  createSession: async (req: CreateSessionRequest) =>
    (await json<{ session: Session }>('POST', 'api/sessions', req)).session,
  /**
   * Destroys a session. With removeWorktree its git worktree goes too
   * (the branch stays); a worktree with uncommitted changes is refused
   * with 409 WORKTREE_DIRTY, and the session is kept, unless force.
   */
  deleteSession: async (id: string, opts: DeleteSessionOptions = {}) => {
    const q = new URLSearchParams();
    if (opts.removeWorktree) {
      q.set('removeWorktree', 'true');
      if (opts.force) q.set('force', 'true');
    }
    const query = q.toString();
    await request('DELETE', `api/sessions/${encodeURIComponent(id)}${query ? `?${query}` : ''}`);
  },
  workflow: () => json<WorkflowResponse>('GET', 'api/workflow'),
  /** The documents under docs/ (the workspace's and its worktrees'), newest first. */
  documents: () => json<DocumentsResponse>('GET', 'api/documents'),
  /**
   * What a session changed in its tree, with patches (409 NOT_A_REPOSITORY
   * when its tree is not in a git repository, 409 UNTRUSTED_REPOSITORY when
   * git refuses it for belonging to another user).
   */
  diff: (id: string) => json<DiffResponse>('GET', `api/sessions/${encodeURIComponent(id)}/diff`),
  resources: () => json<ResourcesResponse>('GET', 'api/resources'),

  // Review to merged (protocol.md, section 7). Commit, merge, update and
  // push run the repository's hooks, as git does from a terminal.
  /** A commit message proposed from the session's change ('' when nothing changed). */
  suggestCommit: async (id: string) => (await json<{ message: string }>('GET', `${sessionPath(id)}/commit`)).message,
  /** Commits everything in the session's tree (409 NOTHING_TO_COMMIT; a refusing hook is 500 GIT_FAILED with its words). */
  commit: (id: string, message: string) => json<{ commit: string; branch: string }>('POST', `${sessionPath(id)}/commit`, { message }),
  /** A worktree session's branch against its base (409 NOT_A_WORKTREE otherwise). */
  branch: (id: string) => json<BranchResponse>('GET', `${sessionPath(id)}/branch`),
  /** What a merge would do, touching nothing: its own conflicts, and the other sessions it would make conflict. */
  mergePreview: (id: string) => json<MergePreviewResponse>('GET', `${sessionPath(id)}/merge`),
  /** Every overlap between sessions' changes (as overlaps.changed says them). */
  overlaps: () => json<OverlapsResponse>('GET', 'api/overlaps'),
  /** Merges the branch into its base (409 MERGE_CONFLICT with files, BASE_DIRTY, NOTHING_TO_MERGE, BASE_MOVED). */
  merge: (id: string, mode: 'merge' | 'squash' | 'rebase') => json<{ commit: string }>('POST', `${sessionPath(id)}/merge`, { mode }),
  /** Merges the base into the branch in its worktree; conflicts are left there and a prompt naming them is queued by author. */
  update: (id: string, author: string) => json<UpdateResponse>('POST', `${sessionPath(id)}/update`, { author }),
  /** Stops the agent and removes its worktree (never the branch); the session stays listed, archived. */
  archive: async (id: string) => (await json<{ session: Session }>('POST', `${sessionPath(id)}/archive`)).session,
  /** Pushes the branch (404 NO_REMOTE, 409 PUSH_REJECTED). */
  push: (id: string, remote: string) => json<PushResponse>('POST', `${sessionPath(id)}/push`, { remote }),
  /** The workspace scripts in force, read from the file now, each with whether it may run. */
  scripts: () => json<ScriptsResponse>('GET', 'api/scripts'),
  /** Keeps the page's workspace scripts, every one given ('' for none). */
  saveScriptSettings: (settings: ScriptSettings) => json<ScriptsResponse>('PUT', 'api/scripts/settings', settings),
  /** Approves the script in force whose text hashes to hash: SCRIPT_CHANGED when the file no longer has it. */
  approveScript: (hash: string) => json<ScriptsResponse>('POST', 'api/scripts/approve', { hash }),
  /** Starts (or restarts) the run script of session id; answers with its run session. */
  startRun: async (id: string) => (await json<{ session: Session }>('POST', `${sessionPath(id)}/run`)).session,
  /** Stops the run script of session id; its run session stays, with its output. */
  stopRun: (id: string) => request('DELETE', `${sessionPath(id)}/run`).then(() => undefined),
  /** Runs a worktree session's setup script again; its agent starts when it succeeds. */
  retrySetup: async (id: string) => (await json<{ session: Session }>('POST', `${sessionPath(id)}/setup`)).session,
  /** Starts an exited session's agent again (its first start, after a setup that did not pass). */
  resume: async (id: string) => (await json<{ session: Session }>('POST', `${sessionPath(id)}/resume`)).session,
  /** Turns sending the session's failed checks to its agent on or off. */
  setSendFailures: async (id: string, on: boolean) =>
    (await json<{ session: Session }>('PATCH', sessionPath(id), { sendFailures: on })).session,
  /** Turns sending the session on at its usage limit's reset on or off. */
  setContinue: async (id: string, on: boolean) =>
    (await json<{ session: Session }>('PATCH', sessionPath(id), { continueAfterLimit: on })).session,
  /** The session's checkpoints, oldest first. */
  checkpoints: async (id: string) => (await json<{ checkpoints: ListedCheckpoint[] }>('GET', `${sessionPath(id)}/checkpoints`)).checkpoints,
  /** Takes a checkpoint now; created is false when the tree is as the last one has it (which is returned). */
  takeCheckpoint: (id: string) => json<{ id: number; checkpoint: Checkpoint; created: boolean }>('POST', `${sessionPath(id)}/checkpoints`),
  checkpointDiff: (id: string, n: number) => json<CheckpointChange>('GET', `${sessionPath(id)}/checkpoints/${n}`),
  /** Writes checkpoint n back into the tree; saved is the checkpoint of the tree as it was, to undo it. */
  restoreCheckpoint: (id: string, n: number) => json<{ restored: number; saved: number }>('POST', `${sessionPath(id)}/checkpoints/${n}/restore`),
  /**
   * Answers a permission request with its dialog's keys, typed only while
   * the session still waits at that same request (409 otherwise), and
   * without taking the session's size.
   */
  answer: async (id: string, data: string, permission: Permission) => {
    await request('POST', `${sessionPath(id)}/input`, { data, permission });
  },
  /** A session's live read-only links (no secrets: the server keeps their hashes). */
  shares: async (id: string) => (await json<{ shares: Share[] }>('GET', `${sessionPath(id)}/shares`)).shares ?? [],
  /** Makes a read-only link; its url's fragment is the secret, shown this once (409 TOO_MANY_SHARES). */
  createShare: (id: string, req: CreateShareRequest) => json<CreatedShare>('POST', `${sessionPath(id)}/shares`, req),
  /** Revokes a link: its viewers are closed at once (404 SHARE_NOT_FOUND). */
  revokeShare: (id: string, shareId: string) =>
    request('DELETE', `${sessionPath(id)}/shares/${encodeURIComponent(shareId)}`).then(() => undefined),
  // Pull requests on the user's behalf (issue 46). The forge's refusals
  // come back in its words (409 FORGE_REFUSED), as do a missing token
  // (409 FORGE_NOT_READY) and a rate limit (429 FORGE_RATE_LIMITED).
  /** The forge the session would use, and its pull request's state (fetched fresh) when one is linked. */
  pullRequest: (id: string) => json<PullRequestResponse>('GET', `${sessionPath(id)}/pull-request`),
  /** What a new pull request would say: title, body, head and base. */
  pullRequestDraft: (id: string) => json<PullRequestDraft>('GET', `${sessionPath(id)}/pull-request/draft`),
  /** Pushes the branch if need be, then links the open pull request of the branch or opens one. */
  openPullRequest: (id: string, req: CreatePullRequest) => json<CreatedPullRequest>('POST', `${sessionPath(id)}/pull-request`, req),
  /** The pull request's unresolved review comments become comments of the session's review draft, brought by by. */
  addressReview: (id: string, by: string) => json<{ comments: number; left?: number }>('POST', `${sessionPath(id)}/pull-request/address-review`, by ? { by } : undefined),
  /** Queues a prompt naming the failing checks, with their logs' tails, by (409 NO_FAILING_CHECKS when none fails). */
  fixChecks: (id: string, by: string) => json<FixChecksResponse>('POST', `${sessionPath(id)}/pull-request/fix-checks`, by ? { by } : undefined),
  /** The address that opens a port's preview signed in: a link that works once, within a minute. */
  previewURL: async (port: number) => (await json<{ url: string }>('POST', `api/ports/${port}/preview`)).url,
  /** A workspace file's raw content and type. */
  file: async (path: string) => {
    const res = await request('GET', fileURL(path));
    return { contentType: res.headers.get('Content-Type') ?? '', text: await res.text() };
  },
};

function sessionPath(id: string): string {
  return `api/sessions/${encodeURIComponent(id)}`;
}

/** The URL of a workspace file's raw content. */
export function fileURL(path: string): string {
  return `api/files?path=${encodeURIComponent(path)}`;
}
