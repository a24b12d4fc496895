// A button's popover form, as the pages' name editors behave (agentmux's
// identity editor, views/identity.ts, and the hub's, hub/you.ts): the
// button opens and closes it, Cancel and Esc close it (Esc gives the
// button the focus back), submitting saves, and a press anywhere outside
// the button's wrapper closes it.

import { byId } from './dom';

export interface Popover {
  button: HTMLElement;
  form: HTMLFormElement;
  /** The id of the form's Cancel button. */
  cancelId: string;
  open(): void;
  close(): void;
  save(): void;
}

/** Wires p's events; the popover's own methods do the rest. */
export function wirePopover(p: Popover): void {
  p.button.addEventListener('click', () => (p.form.hidden ? p.open() : p.close()));
  byId(p.cancelId).addEventListener('click', () => p.close());
  p.form.addEventListener('submit', (ev) => {
    ev.preventDefault();
    p.save();
  });
  p.form.addEventListener('keydown', (ev) => {
    if (ev.key === 'Escape') {
      ev.preventDefault();
      p.close();
      p.button.focus();
    }
  });
  document.addEventListener('pointerdown', (ev) => {
    const wrap = p.button.parentElement;
    if (!p.form.hidden && wrap && !wrap.contains(ev.target as Node)) p.close();
  });
}
