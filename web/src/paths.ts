// Workspace-relative paths. file.changed carries absolute paths, while
// GET /api/files, layout.shift and the UI's data-path use paths relative to
// the workspace. How the root is known:
//
//  1. GET /api/config returns `workspace`, the root the server watches.
//     This is the normal case, and it is exact.
//  2. A server without /api/config: the root is learned from one file seen
//     both ways. layout.shift (relative) follows the file.changed
//     (absolute) for the same document, and GET /api/workflow names its
//     file relative to the workspace, which file.changed reports when it is
//     written. If /ws/docs/a.md and docs/a.md name the same file, the root
//     is /ws. No guessing from common prefixes: a wrong root would show
//     wrong paths and open wrong files.
//
// Until the root is known, relative() answers null and the activity feed
// shows absolute paths; it re-renders when the root arrives.

const MAX_REMEMBERED = 200;

export class WorkspaceRoot {
  private root: string | null = null;
  private readonly absolute: string[] = [];
  private readonly relatives: string[] = [];
  private readonly listeners: (() => void)[] = [];

  onLearned(fn: () => void): void {
    this.listeners.push(fn);
  }

  /** The root, from GET /api/config. */
  set(root: string): void {
    const clean = root.length > 1 ? root.replace(/\/+$/, '') : root;
    if (clean === this.root) return;
    this.root = clean;
    for (const fn of this.listeners) fn();
  }

  /** An absolute path from file.changed. */
  seenAbsolute(abs: string): void {
    if (this.root !== null) return;
    remember(this.absolute, abs);
    for (const rel of this.relatives) if (this.tryPair(abs, rel)) return;
  }

  /** A workspace-relative path from layout.shift or GET /api/workflow. */
  seenRelative(rel: string): void {
    if (this.root !== null || !rel) return;
    remember(this.relatives, rel);
    for (let i = this.absolute.length - 1; i >= 0; i--) if (this.tryPair(this.absolute[i]!, rel)) return;
  }

  private tryPair(abs: string, rel: string): boolean {
    if (!abs.endsWith(`/${rel}`)) return false;
    this.set(abs.slice(0, abs.length - rel.length - 1) || '/');
    return true;
  }

  /** The workspace-relative form of an absolute path, or null when unknown or outside. */
  relative(abs: string): string | null {
    if (this.root === null) return null;
    const prefix = this.root.endsWith('/') ? this.root : `${this.root}/`;
    return abs.startsWith(prefix) ? abs.slice(prefix.length) : null;
  }
}

function remember(list: string[], item: string): void {
  if (list.includes(item)) return;
  list.push(item);
  if (list.length > MAX_REMEMBERED) list.shift();
}

/** Splits a path into its directory (with the trailing slash) and its name. */
export function splitPath(p: string): { dir: string; name: string } {
  const i = p.lastIndexOf('/');
  return i < 0 ? { dir: '', name: p } : { dir: p.slice(0, i + 1), name: p.slice(i + 1) };
}

/**
 * A markdown document under docs/, as the server's layout.shift sees it:
 * the workspace's, or a session worktree's (.worktrees/<dir>/docs/...).
 */
export function isDoc(rel: string): boolean {
  return /^(?:\.worktrees\/[^/]+\/)?docs\/.*\.md$/i.test(rel);
}
