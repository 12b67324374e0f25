import type { EventSink } from "../../gateway/events.js";
import { briefly, type Store, writeProblem, writeRefused } from "../../store/db.js";
import { LIST_OF_NAMES, storedJson } from "../../store/storedJson.js";
import type { Logger } from "../../util/log.js";
import type { EgressRecord } from "./proxy.js";

/**
 * The egress record: every destination a server's proxy saw, as an audit event `egress`, and in a
 * plain index table per epoch that `portcullis egress` and the approval review read without the
 * passphrase. Nothing in it is secret: host, port, scheme, method, counts, the scope names
 * released. Both are written every FLUSH_MS: requests alike in every recorded field (same call
 * and call key, epoch, destination, method, outcome, status, scopes) become one `egress` event with their
 * count in `requests`, so a server that calls its API in a loop costs one sealed record per
 * window, not one per request (that record was most of the proxy's cost per request).
 */

interface Pending {
  /** this destination's key in the pending map */
  id: string;
  key: [string, string, string, number, string, string];
  requests: number;
  released: number;
  refused: number;
  scopes: Set<string>;
  first: string;
  last: string;
}

/** How often the index table is written (one transaction for everything seen meanwhile). */
const FLUSH_MS = 200;

/** Requests held for the next epoch, at most; older ones are recorded under no epoch. */
const MAX_HELD = 10_000;

export class EgressRecorder {
  private pending = new Map<string, Pending>();
  private events_ = new Map<string, { r: EgressRecord; requests: number }>();
  private timer: NodeJS.Timeout | null = null;
  /**
   * Requests made while no epoch was live, each with its time. Mostly the last requests of a
   * process that went down, before the next epoch is recorded. The new code's own first requests
   * land here only when its capture leaves the gateway's thread free: the server is spawned as its
   * identity is captured, and a capture that hashes on this thread (a warm start, or fewer than
   * POOL_MIN_FILES files to hash) keeps the proxy from reading any request until the epoch is
   * minted as it ends; a cold tree or a large one is hashed on worker threads, and then the proxy
   * can answer the booting server first. Either way these requests wait for the next epoch
   * (`epochStarted`) instead of being filed under the epoch before it, which would hide from a
   * review that the new code contacted them.
   */
  private held: { r: EgressRecord; at: string }[] = [];
  /** the gateway is closing: no later flush will come to retry a failed one */
  private closed = false;

  constructor(
    private readonly store: Store,
    private readonly label: string,
    private readonly events: EventSink,
    /** how often the record is written (ms) */
    private readonly flushMs = FLUSH_MS,
    /**
     * what a host is recorded as: with the released values taken out (ReleasedValues.scrubHost),
     * since a server may name a host after one, and `portcullis egress` shows hosts to anyone.
     * The method and the withheld placeholder names are the server's words too (a tunnel's
     * request line is read as written, and a placeholder names whatever the server wrote): they
     * go through it as well.
     */
    private readonly hostShown: (host: string) => string = (host) => host,
    /** where a write the file system refuses is said (once per cause: `refusedSaid`) */
    private readonly log?: Pick<Logger, "warn">,
  ) {}

  /**
   * The cause of the last write the file system refused, once said (its reason and store), until
   * a write succeeds: a full disk refuses every batch, every 200 ms, and is said once.
   */
  private refusedSaid: string | null = null;

  /**
   * An epoch is live now: what was held is recorded under it. The code that made those requests
   * is the code that just started, or, for the last requests of a process that was stopping, the
   * one before it: filed under its successor, such a request can only add to what a review shows.
   */
  epochStarted(epoch: string): void {
    const held = this.held;
    this.held = [];
    for (const { r, at } of held) this.record({ ...r, epoch }, at);
  }

  /**
   * Records what is held under no epoch (no epoch came: the gateway is closing), then writes
   * everything; `brief`, waiting BRIEF_WAIT_MS at most for another process's lock (see flush).
   */
  close(o: { brief?: boolean } = {}): void {
    this.closed = true;
    const held = this.held;
    this.held = [];
    for (const { r, at } of held) this.add(r, at);
    this.flush(o);
  }

  record(r: EgressRecord, at = new Date().toISOString()): void {
    r = {
      ...r,
      host: this.hostShown(r.host),
      method: this.hostShown(r.method),
      withheld: r.withheld.map((name) => this.hostShown(name)),
    };
    if (r.epoch === null) {
      this.held.push({ r, at });
      if (this.held.length > MAX_HELD) {
        const oldest = this.held.shift() as { r: EgressRecord; at: string };
        this.add(oldest.r, oldest.at);
      }
      return;
    }
    this.add(r, at);
  }

  private add(r: EgressRecord, now: string): void {
    const ek = `${r.epoch}\n${r.call}\n${r.callKey}\n${r.host}\n${r.port}\n${r.scheme}\n${r.method}\n${r.outcome}\n${r.status}\n${r.released.join(",")}\n${r.withheld.join(",")}`;
    const alike = this.events_.get(ek);
    if (alike) alike.requests++;
    else this.events_.set(ek, { r, requests: 1 });
    const key: Pending["key"] = [this.label, r.epoch ?? "", r.host, r.port, r.scheme, r.method];
    const k = `${r.epoch}\n${r.host}\n${r.port}\n${r.scheme}\n${r.method}`;
    const p = this.pending.get(k) ?? {
      id: k,
      key,
      requests: 0,
      released: 0,
      refused: 0,
      scopes: new Set(),
      first: now,
      last: now,
    };
    p.requests++;
    if (r.released.length > 0) p.released++;
    if (r.outcome === "refused") p.refused++;
    for (const s of r.released) p.scopes.add(s);
    if (now < p.first) p.first = now;
    if (now > p.last) p.last = now;
    this.pending.set(k, p);
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush({ brief: true }), this.flushMs);
      this.timer.unref();
    }
  }

  /**
   * Writes the index's counts and emits the egress events. `brief` (the timer's flushes): waits
   * BRIEF_WAIT_MS at most for another process's lock, what is not written being kept for the next
   * batch; a program that keeps the store locked (a transaction left open) does not hold the
   * gateway's event loop a busy timeout at every batch.
   */
  flush(o: { brief?: boolean } = {}): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    for (const { r, requests } of this.events_.values())
      this.events.emit({
        type: "egress",
        serverLabel: this.label,
        epoch: r.epoch,
        host: r.host,
        port: r.port,
        scheme: r.scheme,
        method: r.method,
        outcome: r.outcome,
        ...(r.status !== undefined ? { status: r.status } : {}),
        released: r.released,
        withheld: r.withheld,
        call: r.call,
        ...(r.callKey !== undefined ? { callKey: r.callKey } : {}),
        requests,
      });
    this.events_.clear();
    if (this.pending.size === 0) return;
    const batch = [...this.pending.values()];
    this.pending.clear();
    try {
      const get = this.store.prepare(
        "SELECT scopes_json FROM egress_destinations WHERE server_label = ? AND epoch = ? AND host = ? AND port = ? AND scheme = ? AND method = ?",
      );
      const upsert = this.store.prepare(
        `INSERT INTO egress_destinations
           (server_label, epoch, host, port, scheme, method, requests, released, refused, scopes_json, first_at, last_at)
         VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (server_label, epoch, host, port, scheme, method) DO UPDATE SET
           requests = requests + excluded.requests, released = released + excluded.released,
           refused = refused + excluded.refused, scopes_json = excluded.scopes_json, last_at = excluded.last_at`,
      );
      // IMMEDIATE: the write lock first, waited for as any writer waits (busy_timeout; briefly from
      // the timer, the batch kept when it does not come). A deferred
      // transaction reads first, and SQLite does not wait when a reader must become a writer: any
      // other process writing at that moment (an `approve`, a command opening the store) failed it
      // at once, and the counts were lost.
      const write = this.store.transaction(() => {
        for (const p of batch) {
          const had = get.get(...p.key) as { scopes_json: unknown } | undefined;
          // a column another process damaged is written anew from this batch's scopes: its
          // counts are kept, where a parse that threw lost every batch of the destination
          const read = had
            ? storedJson(had.scopes_json, "egress_destinations", "scopes_json", LIST_OF_NAMES)
            : null;
          const scopes = new Set<string>(read?.ok ? read.value : []);
          for (const s of p.scopes) scopes.add(s);
          upsert.run(
            ...p.key,
            p.requests,
            p.released,
            p.refused,
            JSON.stringify([...scopes].sort()),
            p.first,
            p.last,
          );
        }
      });
      if (o.brief) briefly(this.store)(() => write.immediate());
      else write.immediate();
      this.refusedSaid = null;
    } catch (e) {
      // The audit events carry the same facts, but the index is what `portcullis egress` and a
      // review read: what was not written is kept and tried again with the next batch.
      this.refused(e, batch);
      this.requeue(batch);
    }
  }

  /**
   * A batch the file system refused (a full disk, the file size limit, a read-only store), said
   * as the audit sink says a record it could not write: the store's sentence and the one thing to
   * do (writeProblem), once per cause until a write succeeds; at the end (`closed`), what is
   * dropped unwritten is said too. A store locked by another process is not said: the next batch
   * takes it.
   */
  private refused(e: unknown, batch: Pending[]): void {
    const failure = writeRefused(e);
    if (!failure || !this.log) return;
    const whole = writeProblem(e).replace(/([^.])$/, "$1.");
    if (this.closed) {
      const n = batch.length;
      this.log.warn(
        `egress: ${n} destination${n === 1 ? "" : "s"} seen since the last write not written to the index (portcullis egress, an approval's review) as the gateway ends; the audit's egress records hold them: ${whole}`,
      );
      return;
    }
    const key = `${failure.reason} ${failure.path}`;
    if (this.refusedSaid === key) return;
    this.refusedSaid = key;
    this.log.warn(
      `egress: cannot write the destination index (portcullis egress, an approval's review): ${whole} Its counts are kept and written once the store takes them; not said again until then.`,
    );
  }

  private requeue(batch: Pending[]): void {
    if (this.closed) return;
    for (const p of batch) {
      const q = this.pending.get(p.id);
      if (!q) {
        this.pending.set(p.id, p);
        continue;
      }
      q.requests += p.requests;
      q.released += p.released;
      q.refused += p.refused;
      for (const s of p.scopes) q.scopes.add(s);
      if (p.first < q.first) q.first = p.first;
      if (p.last > q.last) q.last = p.last;
    }
    if (!this.timer) {
      this.timer = setTimeout(() => this.flush({ brief: true }), this.flushMs);
      this.timer.unref();
    }
  }
}

export interface DestinationRow {
  serverLabel: string;
  epoch: string;
  host: string;
  port: number;
  scheme: string;
  method: string;
  requests: number;
  released: number;
  refused: number;
  scopes: string[];
  firstAt: string;
  lastAt: string;
}

interface Row {
  server_label: string;
  epoch: string;
  host: string;
  port: number;
  scheme: string;
  method: string;
  requests: number;
  released: number;
  refused: number;
  scopes_json: string;
  first_at: string;
  last_at: string;
}

function toRow(r: Row): DestinationRow {
  // a damaged column (not JSON, or no list of names) is shown as none
  const read = storedJson(r.scopes_json, "egress_destinations", "scopes_json", LIST_OF_NAMES);
  const scopes = read.ok ? read.value : [];
  return {
    serverLabel: r.server_label,
    epoch: r.epoch,
    host: r.host,
    port: r.port,
    scheme: r.scheme,
    method: r.method,
    requests: r.requests,
    released: r.released,
    refused: r.refused,
    scopes,
    firstAt: r.first_at,
    lastAt: r.last_at,
  };
}

/** Every destination recorded, for one server label or all, oldest epoch first. */
export function listDestinations(store: Store, label?: string): DestinationRow[] {
  const rows = (
    label
      ? store
          .prepare("SELECT * FROM egress_destinations WHERE server_label = ? ORDER BY first_at, host, port")
          .all(label)
      : store.prepare("SELECT * FROM egress_destinations ORDER BY server_label, first_at, host, port").all()
  ) as Row[];
  return rows.map(toRow);
}

/** "host:port" destinations an epoch contacted. */
export function destinationsOfEpoch(store: Store, epoch: string): Set<string> {
  const rows = store
    .prepare("SELECT DISTINCT host, port FROM egress_destinations WHERE epoch = ?")
    .all(epoch) as {
    host: string;
    port: number;
  }[];
  return new Set(rows.map((r) => (r.host.includes(":") ? `[${r.host}]:${r.port}` : `${r.host}:${r.port}`)));
}
