// What the sessions' agents report they spend (a Session's usage, kept
// fresh by usage.updated), put in words: a tab's short figure ("ctx 12%
// $0.42") with its tooltip, and the account's windows for the status bar
// ("5h 81% · resets in 1h29m"). The windows are one account's, whichever
// session's agent reported them: the newest report of each holds.
//
// It touches no DOM: the tabs (views/tabs.ts) and the status bar
// (views/usage.ts) render from it. The figures are the agent's own;
// nothing here estimates one it did not report.

import type { Limit, LimitWindow, Spent, Usage } from '../shared/types';

/** How a share used reads: amber from WARNING_PERCENT, red from CRITICAL_PERCENT. */
export type UsageLevel = 'ok' | 'warning' | 'critical';

export const WARNING_PERCENT = 75;
export const CRITICAL_PERCENT = 90;

export function usageLevel(percent: number): UsageLevel {
  if (percent >= CRITICAL_PERCENT) return 'critical';
  if (percent >= WARNING_PERCENT) return 'warning';
  return 'ok';
}

/** "$0.42", "$12.30"; whole dollars from $100 on. */
export function formatCost(usd: number): string {
  return usd >= 100 ? `$${Math.round(usd)}` : `$${usd.toFixed(2)}`;
}

/** "950", "20.3k", "204k", "1.2M": a token count in three figures or so. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 1e6) return n < 1e5 ? `${trim1(n / 1e3)}k` : `${Math.round(n / 1e3)}k`;
  return n < 1e8 ? `${trim1(n / 1e6)}M` : `${Math.round(n / 1e6)}M`;
}

/** One decimal, without a trailing ".0". */
function trim1(x: number): string {
  return (Math.round(x * 10) / 10).toFixed(1).replace(/\.0$/, '');
}

/** The session's tokens, in and out, or null when the agent reported neither. */
function totalTokens(u: Usage): number | null {
  if (u.inputTokens === undefined && u.outputTokens === undefined) return null;
  return (u.inputTokens ?? 0) + (u.outputTokens ?? 0);
}

/**
 * A tab's figure, in two parts, each '' when not reported: the context
 * used ("ctx 12%") and what the session spent, its cost ("$0.42") or,
 * without one, its tokens ("20.3k tok").
 */
export interface UsageFigure {
  context: string;
  spend: string;
}

export function usageFigure(u: Usage): UsageFigure {
  const tokens = totalTokens(u);
  return {
    context: u.contextPercent === undefined ? '' : `ctx ${Math.round(u.contextPercent)}%`,
    spend: u.costUsd !== undefined ? formatCost(u.costUsd) : tokens !== null ? `${formatTokens(tokens)} tok` : '',
  };
}

const count = (n: number) => n.toLocaleString('en-US');

/**
 * Every figure the agent reported, a line each, for a tooltip: the model,
 * the cost, the tokens, the context and when it reported. clock says a
 * moment (the page's local time by default).
 */
export function usageDetails(u: Usage, clock: (d: Date) => string = (d) => d.toLocaleTimeString()): string {
  const lines: string[] = [];
  if (u.model) lines.push(`Model: ${u.model}`);
  if (u.costUsd !== undefined) lines.push(`Cost: $${u.costUsd.toFixed(2)} so far (the agent's estimate)`);
  if (u.inputTokens !== undefined || u.outputTokens !== undefined) {
    const parts = [];
    if (u.inputTokens !== undefined) parts.push(`${count(u.inputTokens)} in`);
    if (u.outputTokens !== undefined) parts.push(`${count(u.outputTokens)} out`);
    lines.push(`Tokens: ${parts.join(', ')}`);
  }
  if (u.contextPercent !== undefined) {
    const pct = `${Math.round(u.contextPercent)}%`;
    lines.push(u.contextSize ? `Context: ${pct} of ${formatTokens(u.contextSize)} tokens used` : `Context: ${pct} used`);
  } else if (u.contextSize) {
    lines.push(`Context: ${formatTokens(u.contextSize)} tokens`);
  }
  const at = Date.parse(u.updatedAt);
  if (Number.isFinite(at)) lines.push(`Updated ${clock(new Date(at))}`);
  return lines.join('\n');
}

/** A line for the tab's own tooltip, where the figure may have no room: "Sonnet 4.5 · $0.42 · context 12%". */
export function usageSummary(u: Usage): string {
  const f = usageFigure(u);
  return [u.model ?? '', f.spend, f.context.replace(/^ctx /, 'context ')].filter(Boolean).join(' · ');
}

// ---- The account's windows -------------------------------------------------

/** A window as the newest report across the sessions has it. */
export interface AccountWindow extends LimitWindow {
  /** The session whose agent reported it, and when (its usage's updatedAt). */
  sessionId: string;
  updatedAt: string;
}

/** The windows Claude Code names, in the order the status bar shows them. */
const WINDOW_ORDER = ['five_hour', 'seven_day'];

/**
 * Each window of the account from the newest report that has it: the
 * sessions all run on one account, and a session that reported last
 * knows best. The 5-hour window first, then the weekly, then any other
 * by name.
 */
export function newestWindows(sessions: Iterable<{ id: string; usage?: Usage }>): AccountWindow[] {
  const best = new Map<string, { w: AccountWindow; at: number }>();
  for (const s of sessions) {
    const u = s.usage;
    if (!u?.windows) continue;
    const at = Date.parse(u.updatedAt);
    for (const w of u.windows) {
      const seen = best.get(w.name);
      // A tie keeps the first; an unreadable time loses to any other.
      if (seen && !(at > seen.at || (Number.isNaN(seen.at) && !Number.isNaN(at)))) continue;
      best.set(w.name, { w: { ...w, sessionId: s.id, updatedAt: u.updatedAt }, at });
    }
  }
  const rank = (name: string) => {
    const i = WINDOW_ORDER.indexOf(name);
    return i < 0 ? WINDOW_ORDER.length : i;
  };
  return [...best.values()]
    .map((b) => b.w)
    .sort((a, b) => rank(a.name) - rank(b.name) || a.name.localeCompare(b.name));
}

/** "5h", "7d": the window's short name. */
export function windowLabel(name: string): string {
  return name === 'five_hour' ? '5h' : name === 'seven_day' ? '7d' : name;
}

/** "5-hour window": the window's name in a sentence. */
export function windowName(name: string): string {
  return name === 'five_hour' ? '5-hour window' : name === 'seven_day' ? '7-day window' : `${name} window`;
}

const MINUTE = 60_000;

/**
 * How long until a moment, in whole minutes rounded down, as the status
 * bar says it: "1h26m", "26m", "<1m"; from a day on "3d4h".
 */
export function countdown(ms: number): string {
  const minutes = Math.floor(Math.max(0, ms) / MINUTE);
  if (minutes < 1) return '<1m';
  const h = Math.floor(minutes / 60);
  const m = minutes % 60;
  if (h < 1) return `${m}m`;
  if (h < 24) return `${h}h${m}m`;
  return `${Math.floor(h / 24)}d${h % 24}h`;
}

/** What the status bar shows of a window at a moment. */
export interface WindowShown {
  /** "5h 81%", or "5h" once its reset time has passed. */
  figure: string;
  /** "resets in 1h29m", "reset" once passed, '' with no reset time. */
  resets: string;
  /** The share's level; ok once reset, as its share is from before. */
  level: UsageLevel;
  /** The reset time has passed since the report: its share no longer holds. */
  reset: boolean;
}

export function windowShown(w: LimitWindow, now: number): WindowShown {
  const label = windowLabel(w.name);
  const resetsAt = w.resetsAt ? Date.parse(w.resetsAt) : NaN;
  if (Number.isFinite(resetsAt) && resetsAt <= now) {
    return { figure: label, resets: 'reset', level: 'ok', reset: true };
  }
  return {
    figure: `${label} ${Math.round(w.usedPercent)}%`,
    resets: Number.isFinite(resetsAt) ? `resets in ${countdown(resetsAt - now)}` : '',
    level: usageLevel(w.usedPercent),
    reset: false,
  };
}

/**
 * A window's sentence for the tooltip: "5-hour window: 81% used, resets
 * at 23:00 (in 1h29m)".
 */
export function windowDetails(w: LimitWindow, now: number, clock: (d: Date) => string = (d) => d.toLocaleString()): string {
  const pct = `${Math.round(w.usedPercent)}%`;
  const resetsAt = w.resetsAt ? Date.parse(w.resetsAt) : NaN;
  if (!Number.isFinite(resetsAt)) return `${windowName(w.name)}: ${pct} used`;
  const when = clock(new Date(resetsAt));
  if (resetsAt <= now) return `${windowName(w.name)}: started afresh at ${when} (${pct} was used before)`;
  return `${windowName(w.name)}: ${pct} used, resets at ${when} (in ${countdown(resetsAt - now)})`;
}

/**
 * How long from now until what windowShown says of these windows
 * changes: the next minute a countdown crosses (or a reset time), or
 * null when no countdown runs.
 */
export function nextChange(windows: LimitWindow[], now: number): number | null {
  let next: number | null = null;
  for (const w of windows) {
    const resetsAt = w.resetsAt ? Date.parse(w.resetsAt) : NaN;
    if (!Number.isFinite(resetsAt) || resetsAt <= now) continue;
    // Whole minutes rounded down: the text changes when the time left
    // crosses a whole minute, and once more at the reset itself.
    const left = resetsAt - now;
    const wait = left % MINUTE || MINUTE;
    next = next === null ? wait : Math.min(next, wait);
  }
  return next;
}

/** What a tab or the switcher shows of a session's status: "limited · 1h29m" while a usage limit stops it. */
export function statusShown(s: { status: string; limit?: Limit }, now: number): string {
  if (s.status !== 'limited' || !s.limit?.resetsAt) return s.status;
  const left = Date.parse(s.limit.resetsAt) - now;
  return left > 0 ? `limited · ${countdown(left)}` : 'limited · reset';
}

/** A limit in words, for a tooltip: the agent's, when it resets, and what agentmux will do then. */
export function limitDetails(l: Limit, now: number, clock: (d: Date) => string = (d) => d.toLocaleString()): string {
  const lines = [`Stopped at the account's usage limit: ${l.message}`];
  if (!l.resetsAt) {
    lines.push('The agent did not say when it resets.');
    return lines.join('\n');
  }
  const at = new Date(l.resetsAt);
  const left = at.getTime() - now;
  lines.push(left > 0 ? `Resets at ${clock(at)} (in ${countdown(left)}).` : `Reset at ${clock(at)}.`);
  if (l.continuedAt) lines.push(`agentmux sent it on at ${clock(new Date(l.continuedAt))}.`);
  else lines.push(l.continue ? 'agentmux sends it on once the limit resets.' : 'It waits for you: continuing at the reset is off.');
  return lines.join('\n');
}

/** Milliseconds until a limited session's countdown changes, or null when none of them shows one. */
export function nextLimitChange(sessions: Iterable<{ status: string; limit?: Limit }>, now: number): number | null {
  let next: number | null = null;
  for (const s of sessions) {
    if (s.status !== 'limited' || !s.limit?.resetsAt) continue;
    const left = Date.parse(s.limit.resetsAt) - now;
    if (left <= 0) continue;
    const wait = (left % MINUTE) + 1;
    if (next === null || wait < next) next = wait;
  }
  return next;
}

/** What a checkpoint's turns spent, short: "1.2k tok · $0.05", the cost left out when the agent reports none. */
export function spentFigure(sp: Spent): string {
  const tokens = (sp.inputTokens ?? 0) + (sp.outputTokens ?? 0);
  const parts = [];
  if (sp.inputTokens !== undefined || sp.outputTokens !== undefined) parts.push(`${formatTokens(tokens)} tok`);
  if (sp.costUsd !== undefined) parts.push(formatCost(sp.costUsd));
  return parts.join(' · ');
}

/** The same in words, for a tooltip. */
export function spentDetails(sp: Spent): string {
  const lines = [sp.turns === 1 ? 'The turn that ended here spent:' : `The ${sp.turns} turns that ended here spent:`];
  if (sp.inputTokens !== undefined) lines.push(`${sp.inputTokens.toLocaleString()} input tokens (cache reads and writes included)`);
  if (sp.outputTokens !== undefined) lines.push(`${sp.outputTokens.toLocaleString()} output tokens`);
  if (sp.costUsd !== undefined) lines.push(`${formatCost(sp.costUsd)}, as the agent estimates it`);
  return lines.join('\n');
}
