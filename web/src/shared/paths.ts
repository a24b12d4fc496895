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

/** Characters that draw nothing or reorder what follows (as the server's textrule.Invisible says). */
const INVISIBLE = /[\p{Cf}\p{Zl}\p{Zp}\u034f\u180b-\u180f\u115f\u1160\u3164\uffa0]/u;
const CONTROL = /\p{Cc}/u;

/**
 * A file's or branch's name as it may be shown: as it is when it is all
 * text, else quoted with every control and invisible character escaped
 * (\x1b, \u202e), as the server names such files in prompts
 * (textrule.Shown). A name is anyone's choice: a bidi override in one
 * would show "exe.txt" for a file named "txt.exe".
 */
export function shownName(name: string): string {
  if (!CONTROL.test(name) && !INVISIBLE.test(name)) return name;
  let out = '"';
  for (const ch of name) {
    const cp = ch.codePointAt(0)!;
    if (ch === '"' || ch === '\\') out += `\\${ch}`;
    else if (ch === '\n') out += '\\n';
    else if (ch === '\t') out += '\\t';
    else if (CONTROL.test(ch) && cp < 0x80) out += `\\x${cp.toString(16).padStart(2, '0')}`;
    else if (CONTROL.test(ch) || INVISIBLE.test(ch)) out += `\\u${cp.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/**
 * A path split for showing, as splitPath splits it: a name that
 * shownName escapes is shown whole, quoted, as one name.
 */
export function shownParts(p: string): { dir: string; name: string } {
  const shown = shownName(p);
  return shown === p ? splitPath(p) : { dir: '', name: shown };
}
