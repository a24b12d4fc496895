// What this page knows of the server as a whole: whether it is shutting
// down (server.shutdown), its memory (resource.warning), and its limits on
// sessions (GET /api/config); and from them, whether "+" may create a
// session and what it says when it may not.
//
// It touches no DOM: main.ts feeds it and the tab bar shows its verdict.

/** Used until GET /api/config says otherwise (the server's default). */
export const DEFAULT_MAX_SESSIONS = 4;
/** Sessions kept, running or ended, until GET /api/config says otherwise (the server's default). */
export const DEFAULT_KEEP_SESSIONS = 50;

/** What the "+" button says: why it is disabled (reason), or what a create will meet (note). */
export interface NewSessionVerdict {
  reason: string | null;
  note: string | null;
}

/** The server's state and limits: see the file's comment. */
export class ServerState {
  /** A server.shutdown came, and no connection since. */
  shuttingDown = false;
  /** The last resource.warning refused new sessions. */
  memoryCritical = false;
  memoryPercent = 0;
  /** Sessions that may run at once. */
  maxSessions = DEFAULT_MAX_SESSIONS;
  /** Sessions the server keeps, running or ended. */
  keepSessions = DEFAULT_KEEP_SESSIONS;

  /** A connection opened: whatever shutdown was seen is over, and the server re-sends a memory warning that still holds. */
  connected(): void {
    this.shuttingDown = false;
    this.memoryCritical = false;
  }

  /** resource.warning. */
  memory(percent: number, level: string, accepting: boolean): void {
    this.memoryPercent = percent;
    this.memoryCritical = level === 'critical' || !accepting;
  }

  /** GET /api/config's limits; absent or zero ones keep what is known. */
  limits(maxSessions: number | undefined, keepSessions: number | undefined): void {
    if (maxSessions && maxSessions > 0) this.maxSessions = maxSessions;
    if (keepSessions && keepSessions > 0) this.keepSessions = keepSessions;
  }

  /**
   * Whether "+" may create a session, with the connection up or not, and
   * running of the kept sessions running.
   */
  newSession(isConnected: boolean, running: number, kept: number): NewSessionVerdict {
    let reason: string | null = null;
    if (this.shuttingDown) reason = 'The server is shutting down';
    else if (!isConnected) reason = 'Not connected to the server';
    else if (this.memoryCritical) reason = `Memory is critical (${this.memoryPercent.toFixed(1)}%): new sessions are blocked`;
    else if (running >= this.maxSessions) {
      reason = `Session limit reached: ${running} of ${this.maxSessions} sessions are running. Close or stop one first.`;
    }
    // At the bound on kept sessions "+" stays enabled: its dialog offers
    // to delete the ended sessions when the server refuses the create.
    let note: string | null = null;
    if (kept >= this.keepSessions) {
      const ended = kept - running;
      note = `The server keeps at most ${this.keepSessions} sessions, running or ended, and keeps ${kept}: ` +
        (ended > 0 ? `delete ended sessions first (the dialog offers to delete the ${ended} ended).` : 'close one first.');
    }
    return { reason, note };
  }
}
