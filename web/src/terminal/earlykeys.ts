// Keys typed while the page loads: after a reload a person goes on typing
// where they were, but the terminal takes the focus only once it has
// replayed its program's screen (focusclaim.ts), a few hundred
// milliseconds that would swallow the first keys. Until the terminal first
// takes the focus, keys typed with nothing focused are kept here, in
// order, and handed to it then.
//
// Only what reads the same in every mode of a program is kept: text,
// Enter, Tab and Backspace (which takes back a kept character, else is
// kept as DEL). Arrows and function keys depend on modes the replay has
// not set yet; with a modifier a key is a shortcut of the page or the
// browser's. Nothing is kept once a field or control has the focus, and
// at most MAX_BYTES.

/** At most this much is kept: a burst of typing, not a paste. */
const MAX_BYTES = 1024;
/** Keys typed this long after the page loaded are no longer the ones it swallowed. */
const KEEP_MS = 15_000;

export class EarlyKeys {
  private keys = '';
  private on = true;
  private readonly until = performance.now() + KEEP_MS;

  /** Starts keeping keys; enabled says whether this page should (not on a touch screen). */
  constructor(enabled: boolean) {
    if (!enabled) {
      this.on = false;
      return;
    }
    window.addEventListener('keydown', this.onKey, { capture: true });
    document.addEventListener('focusin', this.onFocus, { capture: true });
  }

  /**
   * The terminal has the focus: returns what was kept for it and keeps
   * no more.
   */
  take(): string {
    const keys = this.keys;
    this.stop();
    return keys;
  }

  private stop(): void {
    if (!this.on) return;
    this.on = false;
    this.keys = '';
    window.removeEventListener('keydown', this.onKey, { capture: true });
    document.removeEventListener('focusin', this.onFocus, { capture: true });
  }

  private readonly onFocus = (ev: FocusEvent): void => {
    // A field or control the user chose: what they type is theirs; the
    // terminal's own focus is take's.
    if (ev.target instanceof Element && !ev.target.closest('.xterm')) this.stop();
  };

  private readonly onKey = (ev: KeyboardEvent): void => {
    if (performance.now() > this.until) {
      this.stop();
      return;
    }
    const at = document.activeElement;
    if (ev.isComposing || ev.ctrlKey || ev.metaKey || ev.altKey || (at && at !== document.body && at !== document.documentElement)) return;
    let data: string | null = null;
    if (ev.key === 'Enter') data = '\r';
    else if (ev.key === 'Tab') data = '\t';
    else if (ev.key === 'Backspace') {
      if (this.keys && !this.keys.endsWith('\r')) {
        this.keys = [...this.keys].slice(0, -1).join('');
        ev.preventDefault();
        return;
      }
      data = '\x7f';
    } else if ([...ev.key].length === 1) data = ev.key;
    if (data === null || this.keys.length + data.length > MAX_BYTES) return;
    this.keys += data;
    ev.preventDefault();
  };
}
