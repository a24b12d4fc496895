// Keys go to the terminal on screen when no other field has the focus:
// after the page loads or reloads, a view switch (Alt+1 from Changes hides
// the button that had it) or a dialog closing, the focus would sit on the
// page's body and what the user types would be lost. Not on a touch
// screen, where the terminal's focus raises the keyboard.
//
// A claim is looked at a frame late, once what changed is drawn: a hidden
// terminal takes no focus. A control the change hid counts as nothing:
// the browser moves the focus off it to the body, but only when it next
// draws. After a reload the terminal waits for its replay: focused before
// the replay turned the program's focus reporting back on, the program
// would never hear of it.

/** How many frames a claim waits for the terminal to catch up: about ten seconds. */
const CLAIM_FRAMES = 600;

export interface FocusClaimDeps {
  /** Whether a terminal is on screen (the layout shows it) and the pointer is not a finger. */
  terminalShown(): boolean;
  /** Whether the terminal on screen has caught up with its program; null when there is none. */
  caughtUp(): boolean | null;
  /** Gives the terminal on screen the focus. */
  focus(): void;
}

export class FocusClaim {
  /** The claim waiting for a frame, if one is: one at a time. */
  private pending: { overButtons: boolean; frames: number } | null = null;

  constructor(private readonly deps: FocusClaimDeps) {}

  /**
   * Claims the focus for the terminal in a frame or so. overButtons lets
   * it take the focus from a button too (a closed dialog hands the focus
   * back to the button that opened it, where Enter would open it again),
   * but never from a field that takes text.
   */
  soon({ overButtons = false } = {}): void {
    const waiting = this.pending;
    this.pending = { overButtons: overButtons || !!waiting?.overButtons, frames: CLAIM_FRAMES };
    if (!waiting) requestAnimationFrame(this.now);
  }

  /** Acts on the claim in this frame, or waits another for the terminal's replay. */
  private readonly now = (): void => {
    const c = this.pending;
    if (!c) return;
    const at = document.activeElement;
    const free = !at || at === document.body || at === document.documentElement || !at.checkVisibility() || (c.overButtons && !takesText(at));
    const caughtUp = this.deps.caughtUp();
    if (!free || caughtUp === null || !this.deps.terminalShown()) {
      this.pending = null;
    } else if (caughtUp) {
      this.pending = null;
      this.deps.focus();
    } else if (--c.frames > 0) {
      requestAnimationFrame(this.now);
    } else {
      this.pending = null;
    }
  };
}

/** Whether keys typed into el are text it keeps: a field, not a button. */
function takesText(el: Element): boolean {
  return el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement || (el instanceof HTMLElement && el.isContentEditable);
}
