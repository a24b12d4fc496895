// The overlaps between sessions' changes (overlaps.changed, GET
// /api/overlaps): two sessions in different trees of one repository that
// change the same file, and whether their lines meet. Seen from one
// session (of): the others it overlaps with and in which files, the
// words that say so (overlapText), and the lines of its own diff to mark
// (marks, markedLines).
//
// It touches no DOM: the tabs, the Changes view's banner and its diff,
// and the merge dialog render from it.

import type { Overlap, OverlapHunk } from '../shared/types';

/** A file one session shares with another, from the first one's side. */
export interface SharedFile {
  path: string;
  /** Their changes of it meet: a merge of both would conflict. */
  lines: boolean;
  /** They count from different versions of it: lines not compared. */
  basesDiffer: boolean;
}

/** Another session a session overlaps with, and the files they share, sorted. */
export interface OverlapWith {
  other: string;
  files: SharedFile[];
}

type Listener = () => void;

/** The whole list of overlaps, as the server last said it. */
export class Overlaps {
  private list: Overlap[] = [];
  private readonly listeners: Listener[] = [];

  /** Called after every change of the list. */
  subscribe(fn: Listener): void {
    this.listeners.push(fn);
  }

  set(list: Overlap[]): void {
    this.list = list;
    for (const fn of this.listeners) fn();
  }

  all(): readonly Overlap[] {
    return this.list;
  }

  /** The sessions sessionId overlaps with, each with its files, in order of the others' ids. */
  of(sessionId: string): OverlapWith[] {
    return overlapsOf(this.list, sessionId);
  }

  /** The hunks of sessionId's change of path that meet another session's. */
  marks(sessionId: string, path: string): OverlapHunk[] {
    return this.list
      .filter((o) => o.path === path && o.sessions.includes(sessionId))
      .flatMap((o) => (o.hunks ?? []).filter((h) => h.sessionId === sessionId));
  }
}

/** overlaps.of, for a list. */
export function overlapsOf(list: readonly Overlap[], sessionId: string): OverlapWith[] {
  const byOther = new Map<string, SharedFile[]>();
  for (const o of list) {
    const i = o.sessions.indexOf(sessionId);
    if (i < 0 || o.sessions.length !== 2) continue;
    const other = o.sessions[1 - i]!;
    if (other === sessionId) continue;
    const files = byOther.get(other) ?? [];
    files.push({ path: o.path, lines: o.lines, basesDiffer: !!o.basesDiffer });
    byOther.set(other, files);
  }
  return [...byOther.keys()].sort().map((other) => ({
    other,
    files: byOther.get(other)!.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0)),
  }));
}

/** How many files a sentence names before "and N more". */
const NAMED_FILES = 5;

/**
 * The sentences that say whom a session overlaps with, one per other
 * session: "Also changed by 'b': src/a.go (same lines), README.md". The
 * same lines come first; nameOf gives a session's name.
 */
export function overlapText(withs: readonly OverlapWith[], nameOf: (id: string) => string): string[] {
  return withs.map((w) => {
    const files = [...w.files].sort((a, b) => Number(b.lines) - Number(a.lines));
    const named = files.slice(0, NAMED_FILES).map((f) => f.path + (f.lines ? ' (same lines)' : ''));
    const more = files.length > NAMED_FILES ? `, and ${files.length - NAMED_FILES} more` : '';
    return `Also changed by '${nameOf(w.other)}': ${named.join(', ')}${more}`;
  });
}

/** Reports whether any of the files shared with any session has lines that meet. */
export function anyLines(withs: readonly OverlapWith[]): boolean {
  return withs.some((w) => w.files.some((f) => f.lines));
}

/** One line of a unified diff as the diff view numbers it: in the base (old) and in the tree (new). */
export interface NumberedLine {
  kind: 'add' | 'del' | 'ctx';
  /** The line's number in the base, for a deleted or context line. */
  old?: number;
  /** Its number in the tree, for an added or context line. */
  new?: number;
}

/**
 * Reports whether a line of a session's diff lies in one of its hunks
 * that meet another session's: an added line by its number in the tree,
 * a deleted one by its number in the base. Context lines never are.
 */
export function isMarked(line: NumberedLine, hunks: readonly OverlapHunk[]): boolean {
  if (line.kind === 'add' && line.new !== undefined) {
    const n = line.new;
    return hunks.some((h) => h.newLines > 0 && n >= h.newStart && n < h.newStart + h.newLines);
  }
  if (line.kind === 'del' && line.old !== undefined) {
    const n = line.old;
    return hunks.some((h) => h.oldLines > 0 && n >= h.oldStart && n < h.oldStart + h.oldLines);
  }
  return false;
}

/** What the merge dialog says before a merge (GET /api/sessions/:id/merge), with the uncommitted overlaps. */
export interface MergeWarning {
  /** conflicts: the merge or a later one conflicts; overlaps: only uncommitted changes overlap; clear: nothing to say. */
  state: 'conflicts' | 'overlaps' | 'clear';
  title: string;
  items: string[];
}

/**
 * The merge dialog's warning: the files the merge itself conflicts in, or
 * the sessions whose branches will conflict once it is merged, and the
 * other sessions whose uncommitted changes meet this one's (which a merge
 * of theirs, once committed, may conflict on).
 */
export function mergeWarning(
  preview: { base: string; conflicts: readonly string[]; others: readonly { sessionId: string; files: readonly string[] }[] },
  uncommitted: readonly OverlapWith[],
  nameOf: (id: string) => string,
): MergeWarning {
  const list = (files: readonly string[]) => files.slice(0, NAMED_FILES).join(', ') + (files.length > NAMED_FILES ? `, and ${files.length - NAMED_FILES} more` : '');
  if (preview.conflicts.length > 0) {
    return { state: 'conflicts', title: `This merge conflicts with ${preview.base} in: ${list(preview.conflicts)}.`, items: [] };
  }
  const predicted = new Set(preview.others.map((o) => o.sessionId));
  const items = preview.others.map((o) => `'${nameOf(o.sessionId)}' will conflict in ${list(o.files)}`);
  for (const w of uncommitted) {
    const meet = w.files.filter((f) => f.lines).map((f) => f.path);
    if (meet.length > 0 && !predicted.has(w.other)) items.push(`'${nameOf(w.other)}' changes the same lines, not yet committed: ${list(meet)}`);
  }
  if (preview.others.length > 0) {
    return { state: 'conflicts', title: `Once this is merged, merging these into ${preview.base} will conflict:`, items };
  }
  if (items.length > 0) return { state: 'overlaps', title: 'Other sessions change the same lines:', items };
  return { state: 'clear', title: `No other session's branch will conflict with ${preview.base} after this merge.`, items: [] };
}
