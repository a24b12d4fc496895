// A button's action against the server: one at a time, the view drawn
// again as it starts and ends (its buttons disabled meanwhile), and a
// failure told in a toast that says what did not happen.

import type { ToastKind } from './toast';

/** What an action needs of its view: whether one is under way, and how to draw it. */
export interface ActionHost {
  busy: boolean;
  render(): void;
  toast(message: string, kind?: ToastKind): void;
}

/** Runs work unless an action is under way; failed starts the toast of a failure ("The run did not start"). */
export async function act(host: ActionHost, failed: string, work: () => Promise<void>): Promise<void> {
  if (host.busy) return;
  host.busy = true;
  host.render();
  try {
    await work();
  } catch (err) {
    host.toast(`${failed}: ${err instanceof Error ? err.message : String(err)}`, 'error');
  } finally {
    host.busy = false;
    host.render();
  }
}
