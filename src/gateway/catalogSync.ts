import type { KeyObject } from "node:crypto";
import { auditable } from "../audit/events.js";
import {
  ArgumentValidator,
  type CatalogSnapshot,
  diffCatalogs,
  getRevision,
  latestFingerprint,
  recordRevision,
  revisionFingerprint,
  type StoredCatalog,
  snapshotOf,
  storedSnapshot,
  type Tool,
} from "../catalog/index.js";
import { pointToRecord, recordedInChain, revisionRecordKey } from "../catalog/revisionRecords.js";
import type { Response } from "../relay/jsonrpc.js";
import { briefly, type Store, whenUnlocked } from "../store/db.js";
import type { LinkGeneration as Generation } from "../supervisor/link.js";
import { isWellFormedString } from "../util/canonical.js";
import { seconds } from "../util/duration.js";
import { envMs } from "../util/envMs.js";
import type { Logger } from "../util/log.js";
import { redactSchemaDefaults } from "../util/redact.js";
import type { EventSink } from "./events.js";
import { PACE, RelistPace } from "./relistPace.js";
import { NotWritten } from "./unreadInput.js";

export interface CatalogSyncPorts {
  label: string;
  store: Store;
  events: EventSink;
  log: Logger;
  /**
   * the gateway's own request to a generation; null when that generation went away; rejects when
   * no answer came within `timeoutMs` (the request cancelled at the server, a late answer dropped),
   * or at once, NotWritten, while the server reads none of its input (the fetch fails then, as
   * any other: catalog_unavailable, a line on stderr, tried again later)
   */
  request(
    gen: Generation,
    method: string,
    params: Record<string, unknown>,
    timeoutMs: number,
  ): Promise<Response | null>;
  /** whether `gen` is still the generation that answers */
  isCurrent(gen: Generation): boolean;
  /** the worker answered: record the processes that run it */
  settle(gen: Generation): void;
  /** the served revision changed from `before` to `after`: the client must be told */
  changed(before: number, after: number): void;
  /**
   * A fetch of `gen` that was not a re-list ended (its first catalog came, or failed to): what
   * waits for that catalog can be answered now, not only once the fetches coalesced after it end
   * (under a list_changed flood they never do).
   */
  fetched(gen: Generation): void;
  /**
   * A failed fetch of `gen` (its first, or a re-list) is tried again (RELIST_RETRY_*): the gateway
   * fetches as for a list or a list_changed, and reports the fetch's end (held requests answered,
   * the state told).
   */
  refetch(gen: Generation): Promise<void>;
  /**
   * `gen`'s first catalog is served after failed attempts, and `changed` did not tell the client:
   * it must be told all the same (it was refused the catalog meanwhile, and may list only when
   * told to).
   */
  recovered(gen: Generation): void;
}

const MAX_PAGES = 1000;

/**
 * What one catalog may hold across all its pages. Every page is kept until the last one came, so
 * pages that never end (or that are each as large as a message may be) would otherwise grow the
 * gateway's memory until it aborts. Both are far above any real server's catalog (a few hundred
 * tools, well under a megabyte); past either, the fetch fails (catalog_unavailable).
 */
export const MAX_CATALOG_TOOLS = 10_000;
/** counted as the JSON text of the tools kept, and of the cursors seen */
export const MAX_CATALOG_CHARS = 32 * 1024 * 1024;

/**
 * After a failed fetch, how long requests are answered with that failure before the next one
 * tries again: a client that retries at once cannot make the gateway fetch in a tight loop.
 */
export const RETRY_AFTER_MS = 1000;

/**
 * A fetch that failed (its tools/list failed or timed out, or the new revision could not be
 * stored) is tried again on its own after RELIST_RETRY_FIRST_MS, doubling per failure in a row up
 * to RELIST_RETRY_MAX_MS, for as long as its generation answers, whether it was a re-list (the
 * server said its tools changed, and may never say so again) or the generation's first fetch (the
 * client may never list or call again, waiting to be told its tools are there); until one
 * succeeds nothing of that generation's catalog is served (docs/architecture.md, "Wire habits").
 * A failed attempt stores nothing; a re-list that succeeds is a re-list like any other, paced and
 * counted (relistPace.ts), and a first fetch is never paced.
 */
export const RELIST_RETRY_FIRST_MS = 1000;
export const RELIST_RETRY_MAX_MS = 30_000;

/**
 * How long the gateway waits for the server's answer to each of its own tools/list requests (one
 * page): 30 s, or PORTCULLIS_CATALOG_TIMEOUT_MS (tests shorten it; read at each page). Past it the
 * request is cancelled at the server (notifications/cancelled), an answer that still comes is
 * dropped, and the fetch fails like any other ("the server did not answer tools/list within 30 s"):
 * its held requests (a first fetch) are answered catalog_unavailable, and it is tried again on its
 * own (RELIST_RETRY_*), or at a list or call. Without it, a server that took a
 * tools/list and never answered (stuck, hostile, buggy) held every later fetch of the connection
 * behind that one for good.
 */
export const CATALOG_TIMEOUT_MS = 30_000;
const catalogTimeoutMs = (): number => envMs("PORTCULLIS_CATALOG_TIMEOUT_MS", CATALOG_TIMEOUT_MS);

/**
 * How long one catalog fetch (every page of its tools/list, one after the other) may take: 2 min,
 * or PORTCULLIS_CATALOG_DEADLINE_MS (tests shorten it; read at each fetch). Each page keeps its
 * own CATALOG_TIMEOUT_MS, cut short to what is left of the deadline. Past it, the page under way is
 * given up on (cancelled at the server, as at its own timeout) and the fetch fails like any other
 * (`server "LABEL" did not list its tools within 120 s …: N pages of tools/list read`). Without it,
 * a server answering each of MAX_PAGES pages just under the page timeout held the catalog, and
 * every list and call waiting for it, for over eight hours.
 */
export const CATALOG_DEADLINE_MS = 120_000;
const catalogDeadlineMs = (): number => envMs("PORTCULLIS_CATALOG_DEADLINE_MS", CATALOG_DEADLINE_MS);

/** At most this much of the server's own error message is kept in the failure it explains. */
const SERVER_MESSAGE_CHARS = 200;

/**
 * The verified snapshot the gateway serves: the complete tool list (every page)
 * fetched by the gateway itself from one generation, fingerprinted, recorded as a
 * revision, with its argument validator. A fetch that the generation does not
 * live to finish is discarded.
 */
/** How many times a new revision is tried again with its record after another gateway's came first. */
const RECORD_ATTEMPTS = 4;

export class CatalogSync {
  snapshot: CatalogSnapshot | null = null;
  validator: ArgumentValidator | null = null;
  revision: number | null = null;
  private fetchedFrom: Generation | null = null;
  private refreshing = false;
  /** one more fetch asked for while one runs (a list_changed flood collapses into it) */
  private queued: { gen: Generation; serverHasTools: boolean } | null = null;
  /** the served revision whose rewritten row was last said on stderr (servedRevisionRewritten) */
  private rewrittenTold: number | null = null;
  /**
   * the revision (and its fingerprint) this gateway last recorded, or found recorded in the audit
   * chain: its row needs no proof again (see believedRecorded)
   */
  private recorded: { revision: number; fingerprint: string } | null = null;
  /** the revision whose row was last said on stderr not to be believed recorded (recordStoredRow) */
  private unrecordedTold: number | null = null;
  /**
   * the last fetch of `gen` failed: why, and when (the next is not tried before RETRY_AFTER_MS);
   * until one succeeds, `gen`'s catalog is not served, even the one a failed re-list followed
   */
  private failed: { gen: Generation; message: string; at: number } | null = null;
  /**
   * fetches of `gen` that failed in a row, whether the first of them was a re-list, and the timer
   * of the next attempt (null: one runs)
   */
  private retrying: {
    gen: Generation;
    failures: number;
    relist: boolean;
    timer: NodeJS.Timeout | null;
  } | null = null;
  /** how fast re-lists of one generation may record revisions (see relistPace.ts) */
  private readonly pace = new RelistPace<Generation>();
  /** ends the wait of a paced re-list early: another generation needs its catalog */
  private wake: (() => void) | null = null;
  /** the connection is over: no fetch starts any more (stop) */
  private stopped = false;

  constructor(private readonly p: CatalogSyncPorts) {}

  /**
   * The snapshot was fetched from `gen`, and no re-list of `gen` failed since. A re-list of the
   * same generation under way does not make it stale: it is the verified list of the code that
   * runs, and calls keep being served from it (a server that floods list_changed must not starve
   * them); if the re-list finds a new revision, the client is told and the guard refuses calls
   * made against the old one. A re-list that *failed* does: the server said its tools changed
   * and the gateway could not learn how, so calls are not judged against the list it said is
   * outdated (deny first) until a re-list succeeds (retried on its own, RELIST_RETRY_*).
   */
  freshFor(gen: Generation | null): boolean {
    return !!gen && this.fetchedFrom === gen && !!this.snapshot && this.failed?.gen !== gen;
  }

  /**
   * `gen`'s catalog is not served (none fetched yet, or its last re-list failed), nothing is
   * fetching it, and its last fetch did not just fail.
   */
  needs(gen: Generation): boolean {
    return !this.freshFor(gen) && !this.refreshing && this.failedRecently(gen) === null;
  }

  /**
   * Why `gen`'s catalog cannot be served now: its last fetch failed, nothing fetches it again,
   * and it is too soon to try again (RETRY_AFTER_MS). Null otherwise: a request may wait for a
   * fetch (one under way, or the one it starts).
   */
  failedRecently(gen: Generation): string | null {
    const f = this.failed;
    if (f?.gen !== gen || this.refreshing) return null;
    return Date.now() - f.at < RETRY_AFTER_MS ? f.message : null;
  }

  /**
   * Why the last fetch of `gen` failed (its first, or a re-list: either way its catalog is not
   * served until one succeeds); null if it did not.
   */
  failure(gen: Generation): string | null {
    return this.failed?.gen === gen ? this.failed.message : null;
  }

  /** The catalog of an old epoch says nothing about the new code. */
  invalidate(): void {
    this.fetchedFrom = null;
    this.dropRetry("its epoch ended");
    this.wake?.();
  }

  /**
   * The connection is over: no fetch starts any more (a failed one is no longer tried again, a
   * queued or paced one is dropped); one under way ends, for the requests that wait for it.
   */
  stop(): void {
    this.stopped = true;
    this.queued = null;
    this.dropRetry("the connection ends");
    this.wake?.();
  }

  /**
   * Fetches `gen`'s tool list and makes it the served snapshot. Re-lists are
   * coalesced: one fetch in flight, at most one queued after it (the latest
   * generation asked for), however many times this is called meanwhile; and paced
   * (relistPace.ts): a re-list that would come too soon after others that each found a
   * new revision waits, still coalescing, and a generation that spent its budget of
   * revisions is not re-listed again.
   * Resolves true for the call that ran the fetches, false for a coalesced one.
   */
  async refresh(gen: Generation, serverHasTools: boolean): Promise<boolean> {
    if (this.stopped || (this.isRelist(gen) && this.pace.stoppedFor(gen))) return false;
    if (this.refreshing) {
      this.queued = { gen, serverHasTools };
      // a new generation's first fetch never waits behind the pacing of an old one
      if (!this.isRelist(gen)) this.wake?.();
      return false;
    }
    this.refreshing = true;
    try {
      let next: { gen: Generation; serverHasTools: boolean } | null = { gen, serverHasTools };
      while (next) {
        this.queued = null;
        if (this.isRelist(next.gen)) next = await this.paced(next);
        if (next && this.p.isCurrent(next.gen)) {
          const served = this.freshFor(next.gen);
          await this.fetchOnce(next.gen, next.serverHasTools);
          // what waits for this catalog (a first one, or one after a failed re-list) is answered
          // now; a re-list of a served catalog that stays served had nothing waiting
          if (this.queued && !(served && this.freshFor(next.gen))) this.p.fetched(next.gen);
        }
        next = this.stopped ? null : this.queued;
      }
    } finally {
      this.refreshing = false;
    }
    return true;
  }

  /** `gen` already has its verified snapshot: fetching it again is a re-list. */
  private isRelist(gen: Generation): boolean {
    return this.fetchedFrom === gen && !!this.snapshot;
  }

  /**
   * Waits until the pacing lets `want` (a re-list) run. Requests that arrive meanwhile collapse
   * into it; a request for another generation ends the wait and is run instead. Null when the
   * re-list is not to run at all (its generation spent its budget, or went away).
   */
  private async paced(want: { gen: Generation; serverHasTools: boolean }) {
    let next = want;
    for (;;) {
      if (this.stopped || this.pace.stoppedFor(next.gen)) return null;
      const wait = this.pace.delayBefore(next.gen);
      if (wait <= 0) return next;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => this.woken(resolve), wait);
        timer.unref(); // a paced re-list never keeps an ending gateway alive
        this.wake = () => {
          clearTimeout(timer);
          this.woken(resolve);
        };
      });
      const asked = this.queued;
      this.queued = null;
      if (asked) next = asked;
      if (!this.p.isCurrent(next.gen)) return null;
      if (!this.isRelist(next.gen)) return next;
    }
  }

  private woken(resolve: () => void): void {
    this.wake = null;
    resolve();
  }

  private async fetchOnce(gen: Generation, serverHasTools: boolean): Promise<void> {
    const relist = this.isRelist(gen);
    this.attempting(gen);
    try {
      const fetched = serverHasTools ? await this.fetchAll(gen) : { tools: [], pages: 0 };
      if (!fetched || !this.p.isCurrent(gen)) return;
      this.p.settle(gen);
      if (this.failed?.gen === gen) this.failed = null;
      const before = this.revision;
      const changed = await this.apply(
        snapshotOf(fetched.tools, fetched.pages, { previous: this.snapshot }),
        gen,
      );
      // the record waited for the store: the generation may have ended meanwhile (recorded all
      // the same, the revision being that epoch's; served only while it is current)
      if (changed === null) return;
      if (relist) this.paceRelist(gen, changed);
      // (apply told the client when the served revision changed)
      this.retried(gen, before !== null && before !== this.revision);
    } catch (e) {
      const message = (e as Error).message;
      this.failed = { gen, message, at: Date.now() };
      this.retryLater(gen, message, relist);
    }
  }

  /** A fetch of `gen` starts: it is the attempt a pending retry waited for (it supersedes it). */
  private attempting(gen: Generation): void {
    const r = this.retrying;
    if (!r) return;
    if (r.timer !== null) clearTimeout(r.timer);
    r.timer = null;
    if (r.gen !== gen) this.retrying = null;
  }

  /**
   * A fetch of `gen` failed (`relist`: a re-list): it is tried again after a wait
   * (RELIST_RETRY_*), until one succeeds or the generation (or the connection) ends. Said on
   * stderr when the retries start; each further failure only on the debug log. Meanwhile a list
   * or call from RETRY_AFTER_MS on is the next attempt, and supersedes the pending one.
   */
  private retryLater(gen: Generation, message: string, relist: boolean): void {
    if (this.stopped) {
      // the connection is over: said, never tried again
      this.p.log.warn(`cannot fetch the tool catalog: ${message}`);
      return;
    }
    const r = this.retrying?.gen === gen ? this.retrying : { gen, failures: 0, relist, timer: null };
    this.retrying = r;
    r.failures++;
    const wait = Math.min(RELIST_RETRY_FIRST_MS * 2 ** (r.failures - 1), RELIST_RETRY_MAX_MS);
    const what = r.relist ? "re-listing" : "fetching the tool catalog of";
    if (r.failures === 1) {
      const again = `from ${RELIST_RETRY_FIRST_MS / 1000} s, doubling, up to ${RELIST_RETRY_MAX_MS / 1000} s`;
      this.p.log.warn(`cannot fetch the tool catalog: ${message}`);
      this.p.log.status(
        r.relist
          ? `the server said its tools changed and re-listing epoch=${gen.epoch} failed: revision ${this.revision} is no longer served, tools/list and calls are refused (catalog_unavailable) until a re-list succeeds; portcullis re-lists again ${again}`
          : `fetching the tool catalog of epoch=${gen.epoch} failed: tools/list and calls are refused (catalog_unavailable) until a fetch succeeds; portcullis fetches it again ${again}`,
      );
    } else this.p.log.debug(`${what} epoch=${gen.epoch} failed ${r.failures} times in a row: ${message}`);
    if (r.timer !== null) clearTimeout(r.timer);
    r.timer = setTimeout(() => {
      r.timer = null;
      if (this.retrying !== r || !this.p.isCurrent(gen)) return;
      this.p.log.debug(`${what} epoch=${gen.epoch} again (after ${r.failures} failed)`);
      this.p.refetch(gen).catch((e: unknown) => {
        this.p.log.warn(`could not fetch the tool catalog again: ${String((e as Error)?.message ?? e)}`);
      });
    }, wait);
    r.timer.unref(); // a retry never keeps an ending gateway alive
  }

  /**
   * A fetch of `gen` succeeded: a failed fetch it followed is over (said on stderr). After a
   * failed first fetch the client is told the catalog is there, unless `told` (the served
   * revision changed, and the client was told so).
   */
  private retried(gen: Generation, told: boolean): void {
    const r = this.retrying;
    if (r?.gen !== gen) return;
    this.retrying = null;
    const attempts = `${r.failures} failed ${r.failures === 1 ? "attempt" : "attempts"}`;
    this.p.log.status(
      r.relist
        ? `re-listed epoch=${gen.epoch} after ${attempts}: revision ${this.revision} is served`
        : `fetched the tool catalog of epoch=${gen.epoch} after ${attempts}: revision ${this.revision} is served`,
    );
    if (!r.relist && !told) this.p.recovered(gen);
  }

  /** No failed fetch is tried again any more (`why`: on the debug log). */
  dropRetry(why: string): void {
    const r = this.retrying;
    if (!r) return;
    if (r.timer !== null) clearTimeout(r.timer);
    this.retrying = null;
    this.p.log.debug(
      `the failed ${r.relist ? "re-list" : "fetch"} of epoch=${r.gen.epoch} is no longer retried: ${why}`,
    );
  }

  /**
   * Every page of `gen`'s tools/list: its tools, nothing else of the results. The other members
   * of a result (2026-07-28: `_meta`, `cacheScope`, `ttlMs`, `resultType`, whatever a later revision
   * adds) are not covered by the catalog's fingerprint, so none of them is kept or served: the
   * list the client gets is the gateway's (guardedRequests.ts, serveToolsList).
   */
  private async fetchAll(gen: Generation): Promise<{ tools: Tool[]; pages: number } | null> {
    const tools: Tool[] = [];
    const cursors = new Set<string>();
    let cursor: string | undefined;
    let pages = 0;
    let chars = 0;
    // entries without a string name: not kept, said once per fetch with their number (a page may
    // hold millions of them, and a line each queued them all on stderr, in the gateway's memory)
    let nameless = 0;
    // names holding a lone surrogate (`"pay\ud800"`): the store's text columns hold UTF-8, where
    // such a name becomes U+FFFD and two of them one name, so an approval request of one could
    // not name its tool as its review does (and no approval of it could be given): not kept
    let unstorable = 0;
    const deadlineMs = catalogDeadlineMs();
    const deadline = Date.now() + deadlineMs;
    const overdue = () =>
      new Error(
        `server ${JSON.stringify(this.p.label)} did not list its tools within ${seconds(deadlineMs)} (the deadline of one catalog fetch): ${pages} ${pages === 1 ? "page" : "pages"} of tools/list read, ${tools.length} tools so far`,
      );
    for (;;) {
      const params = cursor === undefined ? {} : { cursor };
      const left = deadline - Date.now();
      if (left <= 0) throw overdue();
      const pageMs = catalogTimeoutMs();
      let res: Response | null;
      try {
        res = await this.p.request(gen, "tools/list", params, Math.max(1, Math.min(pageMs, left)));
      } catch (e) {
        // the page was given up on at what was left of the deadline, not at its own timeout (one
        // not written to a server that reads none of its input fails as it is: that is why)
        if (left < pageMs && !(e instanceof NotWritten)) throw overdue();
        throw e;
      }
      if (!res) return null;
      if (res.error) {
        const said = res.error.message;
        const shown = said.length > SERVER_MESSAGE_CHARS ? `${said.slice(0, SERVER_MESSAGE_CHARS)}…` : said;
        throw new Error(`the server answered tools/list with error ${res.error.code}: ${shown}`);
      }
      const result = res.result as { tools?: unknown; nextCursor?: unknown } | undefined;
      if (!result || !Array.isArray(result.tools))
        throw new Error("the server's tools/list result has no tools array");
      pages++;
      for (const t of result.tools) {
        if (typeof t === "object" && t !== null && typeof (t as Tool).name === "string") {
          if (!isWellFormedString((t as Tool).name)) {
            unstorable++;
            continue;
          }
          chars += JSON.stringify(t).length;
          tools.push(t as Tool);
        } else nameless++;
      }
      if (tools.length > MAX_CATALOG_TOOLS)
        throw new Error(
          `the server's tool catalog is too large (over ${MAX_CATALOG_TOOLS} tools after ${pages} pages of tools/list)`,
        );
      if (chars > MAX_CATALOG_CHARS)
        throw new Error(
          `the server's tool catalog is too large (over ${MAX_CATALOG_CHARS / 1024 / 1024} MiB of tool definitions after ${pages} pages of tools/list)`,
        );
      if (typeof result.nextCursor !== "string" || result.nextCursor.length === 0) break;
      if (cursors.has(result.nextCursor))
        throw new Error("the server's tools/list pagination loops (a cursor came back)");
      if (pages >= MAX_PAGES)
        throw new Error(`the server's tools/list pagination does not end (over ${MAX_PAGES} pages)`);
      chars += result.nextCursor.length;
      cursors.add(result.nextCursor);
      cursor = result.nextCursor;
    }
    if (nameless > 0)
      this.p.log.warn(
        `ignored ${nameless} ${nameless === 1 ? "entry" : "entries"} without a string name in the server's tools/list`,
      );
    if (unstorable > 0)
      this.p.log.warn(
        `ignored ${unstorable} ${unstorable === 1 ? "tool whose name holds" : "tools whose names hold"} a lone surrogate (not well-formed Unicode) in the server's tools/list: such a name cannot be stored, approved or recorded as written, so the tool is not in the catalog`,
      );
    return { tools, pages };
  }

  /** Counts a re-list of `gen` against its pacing, and says on stderr when the pacing starts or stops it. */
  private paceRelist(gen: Generation, changed: boolean): void {
    const turn = this.pace.relisted(gen, changed);
    if (turn === "paced")
      this.p.log.status(
        `the server's tool catalog changed on ${PACE.FREE_CHANGES} re-lists in a row: epoch=${gen.epoch}'s next re-lists wait (from ${PACE.FIRST_DELAY_MS} ms, doubling, up to ${PACE.MAX_DELAY_MS / 1000} s) until its catalog is stable`,
      );
    else if (turn === "stopped")
      this.p.log.status(
        `the server's tool catalog changed ${PACE.BUDGET} times within ${PACE.WINDOW_MS / 60_000} minutes: portcullis no longer re-lists epoch=${gen.epoch} on its list_changed; calls are judged against revision ${this.revision} until the server is restarted`,
      );
  }

  /**
   * Makes `snap` the served snapshot; true when it is a new revision, null when `gen` ended while
   * its revision was being recorded (nothing served from it).
   */
  private async apply(snap: CatalogSnapshot, gen: Generation): Promise<boolean | null> {
    const served = this.snapshot;
    const rec = await this.record(snap, gen, served);
    if (!this.p.isCurrent(gen)) return null;
    const before = this.revision;
    this.snapshot = snap;
    this.validator = new ArgumentValidator(snap);
    this.revision = rec.revision;
    this.fetchedFrom = gen;
    if (before !== null && before !== rec.revision) this.p.changed(before, rec.revision);
    return rec.changed;
  }

  /**
   * Records `snap` as a revision, a new one with its `catalog_revised` record in one transaction:
   * the row is the record's condition (under the audit log's write lock), written at once. Stored
   * first and recorded with the audit sink's next group, a revision stayed in the store unrecorded
   * when that group could not be written (another process holding the lock past the busy
   * timeout) or the gateway was killed meanwhile, and no later fetch recorded it: the same
   * catalog again is no change.
   */
  private async record(
    snap: CatalogSnapshot,
    gen: Generation,
    served: CatalogSnapshot | null,
  ): Promise<Revised> {
    const { store, label, events } = this.p;
    // Another gateway of this label recording a revision between the read of the latest one and
    // the write makes the condition refuse (the number would be taken): read again and retry, so
    // that a race also ends with the row and its record in one transaction.
    // The revision this gateway serves is the number of the catalog it served: a row of that
    // number that names another fingerprint was rewritten by another process (a revision's row
    // never changes once written). Made to name the catalog just listed, it would pass that
    // catalog off as the one already served: no change judged (onExpand), none told to the
    // client, none audited. Such a row is not believed: the catalog is recorded anew.
    const rewritten = this.servedRevisionRewritten(served);
    for (let attempt = 0; attempt < RECORD_ATTEMPTS; attempt++) {
      const latest = latestFingerprint(store, label);
      if (latest?.fingerprint === snap.fingerprint && latest.revision !== rewritten) {
        // Any process of the user can insert a row naming the catalog about to be listed: it is
        // another gateway's record of that catalog only when its catalog_revised is found. If
        // not, this gateway records it (an extra record is better than a revision unrecorded).
        if (this.believedRecorded(latest))
          return { revision: latest.revision, changed: false, previous: null };
        const again = await this.recordStoredRow(snap, gen, latest, served);
        if (again === "raced") continue;
        return { revision: latest.revision, changed: false, previous: null };
      }
      const revision = (latest?.revision ?? 0) + 1;
      // the revision served until now is usually the latest: its tools are at hand, and the
      // stored inventory (12 MB for a large catalog) need not be read and parsed again
      const stored =
        latest && served?.fingerprint === latest.fingerprint
          ? {
              revision: latest.revision,
              fingerprint: latest.fingerprint,
              tools: served.listed,
              coverage: served.coverage,
            }
          : latest
            ? getRevision(store, label, latest.revision)
            : null;
      const previous = stored
        ? {
            revision: stored.revision,
            fingerprint: stored.fingerprint,
            tools: stored.tools,
            coverage: stored.coverage,
          }
        : null;
      let wrote = false;
      let raced = false;
      // Waited for as an intent is: while another program holds the store's lock the group is
      // kept and tried again, the event loop free (an explicit flush here held it a busy timeout).
      try {
        await events.emitDurable(
          this.revised(snap, gen, revision, previous, served),
          (seq) => {
            // another gateway of this label recorded a revision since: this record would misnumber it
            if ((latestFingerprint(store, label)?.revision ?? 0) !== revision - 1) {
              raced = true;
              return false;
            }
            wrote = recordRevision(store, label, snap, gen.epoch, rewritten).revision === revision;
            if (wrote) pointToRecord(store, label, revision, seq);
            return wrote;
          },
          this.ownSession(revision, snap),
        );
      } catch {
        // not written (the sink said why): stored below, as before
        break;
      }
      // (its fingerprint only: reading the row whole parsed the inventory just written again)
      if (wrote && revisionFingerprint(store, label, revision) === snap.fingerprint) {
        this.recorded = { revision, fingerprint: snap.fingerprint };
        return { revision, changed: true, previous };
      }
      if (!raced) break;
    }
    // Not written with its record (the sink could not write, or races every time): stored as
    // before, waiting out a lock briefly per attempt (a store that cannot be written fails the
    // fetch), recorded best effort.
    const rec = await whenUnlocked(() => recordRevision(store, label, snap, gen.epoch, rewritten), {
      attempt: briefly(store),
    });
    if (rec.changed) {
      events.emit(
        this.revised(snap, gen, rec.revision, rec.previous, served),
        (seq) => {
          pointToRecord(store, label, rec.revision, seq);
          return true;
        },
        this.ownSession(rec.revision, snap),
      );
      this.recorded = { revision: rec.revision, fingerprint: snap.fingerprint };
    }
    return rec;
  }

  /** The own writer session of the `catalog_revised` of `revision` (src/catalog/revisionRecords.ts). */
  private ownSession(revision: number, snap: CatalogSnapshot): (seq: number) => KeyObject {
    return (seq) => revisionRecordKey(this.p.label, revision, snap.fingerprint, seq);
  }

  /**
   * Whether the latest row, which names the catalog just listed, is known to be recorded in the
   * audit chain: this gateway recorded it (or found it recorded before), or a record the store
   * points to opens as its `catalog_revised` (src/catalog/revisionRecords.ts). A row inserted by
   * another process, or written by a portcullis from before such records were pointed to, or
   * whose record could not be written, is not.
   */
  private believedRecorded(row: { revision: number; fingerprint: string }): boolean {
    const known = this.recorded;
    if (known?.revision === row.revision && known.fingerprint === row.fingerprint) return true;
    const { store, label, events } = this.p;
    const open = events.openOwn?.bind(events);
    if (!open || !recordedInChain(store, label, row.revision, row.fingerprint, open)) return false;
    this.recorded = { revision: row.revision, fingerprint: row.fingerprint };
    return true;
  }

  /**
   * Records the catalog just listed as the revision of the latest row, which names it and whose
   * record was not found (believedRecorded): a `catalog_revised` of that revision, marked
   * `foundUnrecorded`, its diff against the catalog this gateway served (else the stored revision
   * before it), written with the row it points to unless another revision was stored meanwhile
   * ("raced": the caller looks again). Said once per revision on stderr. When the record cannot
   * be written now it is written best effort: the row stands, and the catalog is served.
   */
  private async recordStoredRow(
    snap: CatalogSnapshot,
    gen: Generation,
    row: { revision: number; fingerprint: string },
    served: CatalogSnapshot | null,
  ): Promise<"written" | "raced" | "dropped"> {
    const { store, label, events } = this.p;
    const { revision } = row;
    if (this.unrecordedTold !== revision) {
      this.unrecordedTold = revision;
      this.p.log.warn(
        `the store's catalog revision ${revision} of ${label} names the catalog just listed, but no catalog_revised record of it was found in the audit log (its row was inserted by another process, or written by an older portcullis, or its record was sealed before the keyring's keys were rotated or could not be written): the row is not taken for a record, and this gateway records revision ${revision} itself`,
      );
    }
    const previous =
      served && this.revision !== null && this.revision !== revision
        ? {
            revision: this.revision,
            fingerprint: served.fingerprint,
            tools: served.listed,
            coverage: served.coverage,
          }
        : revision > 1
          ? getRevision(store, label, revision - 1)
          : null;
    const event = {
      ...this.revised(snap, gen, revision, previous, served),
      foundUnrecorded: true,
    };
    let raced = false;
    const still = (seq: number) => {
      const latest = latestFingerprint(store, label);
      if (latest?.revision !== revision || latest.fingerprint !== snap.fingerprint) {
        raced = true;
        return false;
      }
      pointToRecord(store, label, revision, seq);
      return true;
    };
    try {
      if (await events.emitDurable(event, still, this.ownSession(revision, snap))) {
        this.recorded = { revision, fingerprint: snap.fingerprint };
        return "written";
      }
      if (raced) return "raced";
    } catch {
      // not written now (the sink said why): best effort below
    }
    events.emit(event, still, this.ownSession(revision, snap));
    this.recorded = { revision, fingerprint: snap.fingerprint };
    return "dropped";
  }

  /**
   * The number of the revision this gateway serves when its row in the store names another
   * fingerprint than the catalog served (said once per number on stderr), else null.
   */
  private servedRevisionRewritten(served: CatalogSnapshot | null): number | null {
    const number = this.revision;
    if (served === null || number === null) return null;
    const stored = revisionFingerprint(this.p.store, this.p.label, number);
    if (stored === null || stored === served.fingerprint) return null;
    if (this.rewrittenTold !== number) {
      this.rewrittenTold = number;
      this.p.log.warn(
        `the store's catalog revision ${number} of ${this.p.label} no longer names the catalog this gateway served under that number (its row was rewritten by another process): the catalog listed now is recorded as a new revision and judged against the one served`,
      );
    }
    return number;
  }

  private revised(
    snap: CatalogSnapshot,
    gen: Generation,
    revision: number,
    previous: Revised["previous"],
    served: CatalogSnapshot | null,
  ): { type: "catalog_revised"; [k: string]: unknown } {
    // The snapshot served until now is usually the previous revision: diffing against it
    // reuses its fingerprints instead of computing them again from the stored inventory (with its
    // coverage: the names it withheld for entries that could not be fingerprinted, not stored).
    const before =
      previous && served?.fingerprint === previous.fingerprint
        ? served
        : previous
          ? storedSnapshot(previous)
          : null;
    return {
      type: "catalog_revised",
      serverLabel: this.p.label,
      epoch: gen.epoch,
      revision,
      previousRevision: previous?.revision ?? null,
      fingerprint: snap.fingerprint,
      coverage: snap.coverage,
      // the server chose every key in these (auditable: never a string under a secret-like key;
      // redactSchemaDefaults: nor a default, const or examples of a property named like one)
      inventory: auditable(redactSchemaDefaults(snap.listed, { marker: { redacted: true } }) as Tool[]),
      diff: before ? auditable(diffCatalogs(before, snap)) : null,
    };
  }
}

interface Revised {
  revision: number;
  changed: boolean;
  previous: StoredCatalog | null;
}
