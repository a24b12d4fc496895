// Keeping the session list whole while it is fetched: session events that
// arrive while a GET /api/sessions is in flight are logged and applied
// again on top of its (older) answer, so a session created or ended
// meanwhile is neither lost nor resurrected. Each request in flight keeps
// its own log, by request number.
//
// It touches no DOM and no store: main.ts asks, fills the store with the
// answer, and applies what this returns on top.

/** The requests for the session list in flight, and the events each must not miss. */
export class SessionListSync<M> {
  private readonly logs = new Map<number, M[]>();
  private last = 0;
  /** The newest request whose answer is in the store. */
  private applied = 0;

  /** A GET /api/sessions goes out: returns its number, for answered or failed. */
  begin(): number {
    const req = ++this.last;
    this.logs.set(req, []);
    return req;
  }

  /** A session event came: every request in flight applies it again on top of its answer. */
  log(m: M): void {
    for (const log of this.logs.values()) log.push(m);
  }

  /**
   * Request req answered: returns the events to apply on top of its answer,
   * or null when the answer is stale (a newer one is in the store already).
   * One older than a request still in flight is not stale: the first
   * connection asks again the moment it opens, and the page's first
   * answer, applied at once, shows the screen a round trip sooner; the
   * newer one follows.
   */
  answered(req: number): M[] | null {
    if (req <= this.applied) return null;
    this.applied = req;
    const log = this.logs.get(req) ?? [];
    for (const r of this.logs.keys()) if (r <= req) this.logs.delete(r);
    return log;
  }

  /** Request req failed: it logs no more. */
  failed(req: number): void {
    this.logs.delete(req);
  }
}
