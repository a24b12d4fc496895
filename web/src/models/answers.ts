// What an agent's permission dialog takes as Allow and Deny, for the
// agents whose dialog we have seen. Shared by the answer card (cards.ts)
// and the notifications (notify.ts), which hand the keys to the service
// worker in the notification's data.

import type { Permission } from '../shared/types';

/** The keys that answer a permission dialog. */
export interface PermissionKeys {
  allow: string;
  deny: string;
}

/**
 * Claude Code 2.1's dialog ("Do you want to create plan.md?") lists
 * "1. Yes" first and "No" last, its number depending on the dialog
 * (3 for a new file, after "Yes, allow all edits"); Esc cancels it, which
 * Claude reports as the user rejecting the tool. A digit picks its choice
 * wherever the highlight is, so "1" allows even if someone moved it; Esc
 * denies in every variant of the dialog.
 */
const CLAUDE: PermissionKeys = { allow: '1', deny: '\x1b' };

/**
 * The keys for an agent's permission dialog, or null when we do not know
 * its dialog: then the user answers in the terminal. Only Claude Code's
 * hooks report permission requests today.
 */
export function permissionKeys(agent: string): PermissionKeys | null {
  return agent === 'claude' ? CLAUDE : null;
}

/** Who asks, as a person reads it: "Claude" for Claude Code, else the session's agent. */
export function agentLabel(agent: string): string {
  if (agent === 'claude') return 'Claude';
  if (agent === 'codex') return 'Codex';
  return agent === 'custom' || agent === '' ? 'The agent' : agent;
}

/** Tools whose summary is what they act on (a file, a URL): "on <summary>"; others (a command): ": <summary>". */
const ACTS_ON = new Set(['Write', 'Edit', 'MultiEdit', 'Read', 'NotebookEdit', 'WebFetch']);

/** "Claude wants to use Write on docs/plan.md", as the server words its reason. */
export function describePermission(agent: string, p: Permission): string {
  const base = `${agentLabel(agent)} wants to use ${p.tool}`;
  if (!p.summary) return base;
  return ACTS_ON.has(p.tool) ? `${base} on ${p.summary}` : `${base}: ${p.summary}`;
}

/** The reason a question-mark guess or a hook gives a question: its text follows. */
const ASKS = /^the agent asks: /;

/** The question a waiting session's reason quotes ("the agent asks: Proceed?" is "Proceed?"), or null when it quotes none. */
export function askedQuestion(reason: string): string | null {
  return ASKS.test(reason) ? reason.replace(ASKS, '') : null;
}
