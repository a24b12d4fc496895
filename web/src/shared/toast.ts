// Short messages in the corner: errors the server sent, results of actions.

import { byId, h } from './dom';

const SHOW_MS = 5_000;
const DEDUPE_MS = 3_000;

const recent = new Map<string, number>();

export type ToastKind = 'info' | 'warning' | 'error';

export function toast(message: string, kind: ToastKind = 'info'): void {
  const now = Date.now();
  const last = recent.get(message);
  if (last !== undefined && now - last < DEDUPE_MS) return;
  recent.set(message, now);
  const stack = byId('toasts');
  const el = h('div', { class: `toast toast-${kind}`, 'data-testid': 'toast', 'data-kind': kind, role: kind === 'info' ? 'status' : 'alert' }, message);
  const close = h('button', { type: 'button', class: 'toast-close', 'aria-label': 'Dismiss', text: '×' });
  close.addEventListener('click', () => el.remove());
  el.append(close);
  stack.append(el);
  while (stack.childElementCount > 4) stack.firstElementChild?.remove();
  window.setTimeout(() => {
    el.remove();
    if (recent.get(message) === now) recent.delete(message);
  }, SHOW_MS);
}
