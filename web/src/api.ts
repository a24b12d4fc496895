// The HTTP API (docs/protocol.md section 7). Every failure becomes an
// ApiError carrying the server's code and message, ready to show.

import type { ConfigResponse, DiffResponse, DocumentsResponse, ResourcesResponse, Session, WorkflowResponse } from './types';

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }
}

async function errorFrom(res: Response): Promise<ApiError> {
  const text = await res.text().catch(() => '');
  try {
    const body = JSON.parse(text) as { error?: { code?: string; message?: string } };
    if (body.error?.message) {
      return new ApiError(res.status, body.error.code ?? String(res.status), body.error.message);
    }
  } catch {
    // not JSON: a plain-text 503 during shutdown, a proxy's page...
  }
  const message = text.trim().slice(0, 200) || `${res.status} ${res.statusText}`;
  return new ApiError(res.status, String(res.status), message);
}

async function request(method: string, path: string, body?: unknown): Promise<Response> {
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

async function json<T>(method: string, path: string, body?: unknown): Promise<T> {
  const res = await request(method, path, body);
  return (await res.json()) as T;
}

export interface CreateSessionRequest {
  name?: string;
  worktree?: { branch: string };
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
  /** A workspace file's raw content and type. */
  file: async (path: string) => {
    const res = await request('GET', fileURL(path));
    return { contentType: res.headers.get('Content-Type') ?? '', text: await res.text() };
  },
};

/** The URL of a workspace file's raw content. */
export function fileURL(path: string): string {
  return `api/files?path=${encodeURIComponent(path)}`;
}
