import type { CatalogSnapshot } from "../catalog/index.js";
import type { ListedCatalog } from "../guard/guard.js";
import type { Id, Request } from "../relay/jsonrpc.js";
import type { LinkGeneration as Generation } from "../supervisor/link.js";
import { sameJson } from "../util/canonical.js";
import { CLIENT_CAPABILITIES_META, type Era, hasTools, pickModernMeta, withMeta } from "./protocol.js";

/**
 * A resource subscription of the client's (resources/subscribe) that a server process accepted:
 * what it asked, under which id (as the client wrote it), and the process that holds it.
 */
export interface ResourceSubscription {
  uri: string;
  /** the request's params without its `_meta` (the envelope is the session's, added when sent) */
  params: Record<string, unknown>;
  idText: string;
  gen: Generation;
}

/**
 * One subscription of the client's to tool-list changes (a subscriptions/listen that asked for
 * toolsListChanged), as the session holds it: its id, and the object itself as its token. A client
 * may reuse an id once its listen is over (cancelled, answered), so what ends a listen after an
 * await (a decision that returns late) names it by this token, never by its id: the id may name
 * the client's next listen by then.
 */
export interface OpenListen {
  readonly id: Id;
}

/**
 * What the gateway knows of its client's session, whatever server process is behind it:
 * the era it speaks, its handshake (kept to bring a new process to the same place), the
 * modern-era envelope and subscriptions, and what it last listed (for per-tool staleness).
 * Only the Gateway of that client writes it; it outlives every epoch.
 */
export class ClientSession {
  private era_: Era | null = null;
  /** the client's own initialize request, replayed to a replaced legacy worker */
  private initRequest: Request | null = null;
  /**
   * what the server's answer to it said, as the gateway reads it: its protocolVersion and
   * capabilities, and `exact`, the numbers there that re-serialising would change, with their
   * exact values (exactReadNumbers): the client got them as written
   */
  private negotiated: { protocolVersion: unknown; capabilities: unknown; exact: readonly string[] } | null =
    null;
  /**
   * the params of the client's initialize a server answered (what `negotiated` came from): the
   * handshake replayed to a new process. Not the latest the client sent: one sent again may be
   * carried to the next process, unanswered, while that process is brought to the session's state
   */
  private negotiatedParams: Record<string, unknown> | null = null;
  private clientInitialized = false;
  /**
   * The client's latest initialize was answered epoch_transition by the gateway (its process, or
   * a remote server's session, went away holding it) and nothing was negotiated: the client is
   * told to send initialize again, and until it does it is where a client that never sent one is.
   */
  private initializeLost_ = false;
  /** the _meta envelope of the client's latest modern request, reused for the gateway's own requests */
  private modernMeta: Record<string, unknown> | null = null;
  /** the era is modern only because the client's first request was server/discover (onRequest) */
  private eraByProbe = false;
  private discovered: unknown = null;
  /** the numbers of the first server/discover answer's capabilities re-serialising would change (exactReadNumbers) */
  private discoveredExact: readonly string[] = [];

  private listeningGen: Generation | null = null;
  /** what this client last listed completely (revision and each tool's fingerprint) */
  private seen_: ListedCatalog | null = null;
  private clientListens: OpenListen[] = [];
  /**
   * The client's resource subscriptions a process accepted and it has not unsubscribed, by uri.
   * A new process holds none of them: they are re-opened there (Gateway.reopenSubscriptions).
   */
  private readonly resourceSubs = new Map<string, ResourceSubscription>();
  /** the client's latest logging/setLevel a process accepted (its params without `_meta`) */
  private logLevel: Record<string, unknown> | null = null;

  get era(): Era | null {
    return this.era_;
  }

  /** What this client last listed completely, or null before its first complete tools/list. */
  get seen(): ListedCatalog | null {
    return this.seen_;
  }

  /** The ids of the client's open subscriptions to tool-list changes (modern era). */
  get listenIds(): readonly Id[] {
    return this.clientListens.map((l) => l.id);
  }

  /**
   * A client request arrived: its first request fixes the era; a modern one refreshes the envelope.
   * A `server/discover` first is the 2026-07-28 era only provisionally: a client in the SDK's
   * `auto` mode probes with it on the session's own pipe, and on a legacy server's error falls back
   * to `initialize` there. That `initialize` makes the session legacy (its handshake is then the
   * one replayed, its capabilities the ones read); the first other request, a ping aside, fixes
   * the modern era.
   */
  onRequest(msg: Request): void {
    if (!this.era_) {
      if (msg.method === "initialize") this.era_ = "legacy";
      else if (msg.method === "server/discover" || pickModernMeta(msg)) this.era_ = "modern";
      else this.era_ = "legacy";
      this.eraByProbe = this.era_ === "modern" && msg.method === "server/discover";
    } else if (this.eraByProbe && msg.method === "initialize") {
      this.era_ = "legacy";
      this.eraByProbe = false;
      this.modernMeta = null;
    } else if (this.eraByProbe && msg.method !== "server/discover" && msg.method !== "ping") {
      this.eraByProbe = false;
    }
    if (this.era_ === "modern") this.modernMeta = pickModernMeta(msg) ?? this.modernMeta;
  }

  /** Whether the era is still only what a `server/discover` probe made it (see onRequest). */
  get eraByProbeOnly(): boolean {
    return this.eraByProbe;
  }

  /**
   * Whether the client speaks the legacy era and has not sent initialize (or its only one was lost
   * to an epoch change, unanswered by any server): nothing it asks of the catalog can be served,
   * and nothing will be fetched, until it sends one.
   */
  get awaitsInitialize(): boolean {
    return this.era_ === "legacy" && (this.initRequest === null || this.initializeLost_);
  }

  /**
   * Whether a server answered the legacy client's initialize and the client has not sent
   * notifications/initialized: the gateway asks the server nothing (its catalog included) until it
   * does, so what is held for the catalog waits on the client itself.
   */
  get awaitsInitializedNotice(): boolean {
    return this.era_ === "legacy" && this.negotiated !== null && !this.clientInitialized;
  }

  /** Keeps the client's initialize request, to replay on a new legacy process. */
  keepInitialize(msg: Request): void {
    this.initRequest = msg;
    this.initializeLost_ = false;
  }

  /**
   * The client's initialize was answered epoch_transition (no process answered it). Before
   * anything was negotiated, the client has no handshake to replay and sends its own again.
   */
  initializeLost(): void {
    if (this.negotiated === null) this.initializeLost_ = true;
  }

  /** Whether the client's only initialize was lost (see initializeLost) and it has not sent another. */
  get lostInitialize(): boolean {
    return this.initializeLost_;
  }

  /** Whether a server answered the client's initialize (legacy): its handshake can be replayed. */
  get hasNegotiated(): boolean {
    return this.negotiated !== null;
  }

  /** The client sent notifications/initialized. */
  markInitialized(): void {
    this.clientInitialized = true;
  }

  /**
   * The server answered the client's initialize: what was negotiated (`exact`: the numbers in it
   * the gateway reads that re-serialising would change, exactReadNumbers of the answer's text).
   */
  noteNegotiated(
    result: unknown,
    params: Record<string, unknown> | undefined,
    exact: readonly string[],
  ): void {
    const r = result as { protocolVersion?: unknown; capabilities?: unknown };
    this.negotiated = { protocolVersion: r.protocolVersion, capabilities: r.capabilities, exact };
    this.negotiatedParams = params ?? (this.initRequest?.params as Record<string, unknown> | undefined) ?? {};
  }

  /**
   * The server answered a server/discover of the client: the first answer's capabilities are kept
   * (with `exact`, as noteNegotiated's).
   */
  noteDiscovered(result: unknown, exact: readonly string[]): void {
    if (this.discovered !== null) return;
    this.discovered = (result as { capabilities?: unknown }).capabilities ?? null;
    this.discoveredExact = exact;
  }

  /** The client's listen `id` is open (to tool-list changes): its token, which `listenEnded` takes. */
  listenOpened(id: Id): OpenListen {
    const open: OpenListen = { id };
    this.clientListens.push(open);
    return open;
  }

  /** The client's open listen under `id` now, if any: its token, taken while the id is surely its own. */
  listenOf(id: Id): OpenListen | undefined {
    return this.clientListens.find((l) => l.id === id);
  }

  /**
   * The client's listen under `id` is over, as the client ends it (its cancellation), or the server
   * (its answer to the listen), handled as it arrives: the id is still that listen's. Whatever ends
   * a listen later names it by its token.
   */
  listenClosed(id: Id): void {
    this.clientListens = this.clientListens.filter((l) => l.id !== id);
  }

  /** The listen `open` is over (not any later listen under its id); nothing when it already is. */
  listenEnded(open: OpenListen | undefined): void {
    if (open !== undefined) this.clientListens = this.clientListens.filter((l) => l !== open);
  }

  /** A process accepted the client's subscription (its own, or one re-opened there). */
  subscribed(sub: ResourceSubscription): void {
    this.resourceSubs.set(sub.uri, sub);
  }

  /** The client unsubscribed from `uri` (or the gateway dropped its subscription). */
  unsubscribed(uri: unknown): void {
    if (typeof uri === "string") this.resourceSubs.delete(uri);
  }

  /** A process accepted the client's logging/setLevel (its params without `_meta`): the latest is kept. */
  levelSet(params: Record<string, unknown>): void {
    this.logLevel = params;
  }

  /**
   * The params of the client's latest logging/setLevel a process accepted, or null: a new process
   * logs at its own default until it is told again (Gateway.reconnect tells it).
   */
  get level(): Record<string, unknown> | null {
    return this.logLevel;
  }

  /** The client's subscriptions that `gen` does not hold (held by an earlier process). */
  subscriptionsNotOn(gen: Generation): ResourceSubscription[] {
    return [...this.resourceSubs.values()].filter((s) => s.gen !== gen);
  }

  /**
   * What became of `sub` while it was being re-opened: "kept" (still the client's), "gone" (the
   * client unsubscribed meanwhile), or "replaced" (the client subscribed to its uri again).
   */
  subscriptionNow(sub: ResourceSubscription): "kept" | "gone" | "replaced" {
    const now = this.resourceSubs.get(sub.uri);
    return now === sub ? "kept" : now === undefined ? "gone" : "replaced";
  }

  /** The client listed the whole catalog at `revision`. */
  listed(revision: number, snapshot: CatalogSnapshot): void {
    this.seen_ = {
      revision,
      fingerprints: new Map([...snapshot.byName].map(([name, e]) => [name, e.fingerprint])),
    };
  }

  /** Whether the session allows the gateway's own requests (a legacy one only after its handshake). */
  canFetch(): boolean {
    // a probe alone fixes nothing: the client may still fall back to initialize (onRequest)
    if (this.era_ === "modern") return !this.eraByProbe;
    return this.era_ === "legacy" && this.clientInitialized && this.negotiated !== null;
  }

  /**
   * The list_changed notifications a new process owes a legacy client: one for prompts and one for
   * resources, each when the negotiated capabilities announce that list's changes (`listChanged`).
   * The gateway lists neither, so it cannot tell whether a new process's lists differ.
   */
  otherListsChanged(): string[] {
    if (this.era_ !== "legacy" || !this.clientInitialized) return [];
    const caps = this.negotiated?.capabilities as
      | { prompts?: { listChanged?: unknown }; resources?: { listChanged?: unknown } }
      | undefined;
    const out: string[] = [];
    if (caps?.prompts?.listChanged === true) out.push("notifications/prompts/list_changed");
    if (caps?.resources?.listChanged === true) out.push("notifications/resources/list_changed");
    return out;
  }

  /** Whether the server's tools are to be listed (modern: always; legacy: when it negotiated tools). */
  serverHasTools(): boolean {
    return this.era_ === "modern" || hasTools(this.negotiated?.capabilities);
  }

  /**
   * True once per generation in the modern era: the gateway then opens its own subscription to
   * `gen`'s list changes.
   */
  startListening(gen: Generation): boolean {
    if (this.era_ !== "modern" || this.eraByProbe || this.listeningGen === gen) return false;
    this.listeningGen = gen;
    return true;
  }

  /** The gateway's own subscription to `gen` could not be sent: startListening is true for it again. */
  notListening(gen: Generation): void {
    if (this.listeningGen === gen) this.listeningGen = null;
  }

  /** `params` as the gateway's own request carries them (with the client's modern envelope). */
  paramsFor(params: Record<string, unknown>): Record<string, unknown> {
    return this.era_ === "modern" && this.modernMeta ? withMeta(params, this.modernMeta) : params;
  }

  /**
   * The client's initialize params to replay on a new process, or null when there is no handshake
   * to replay: none was sent, or none was answered (its process went away holding it, and the
   * client was told so: it sends its own initialize again; a replay would have nothing to compare
   * its answer with, and end the connection as if the server negotiated something else).
   */
  replayInitialize(): Record<string, unknown> | null {
    if (this.era_ !== "legacy" || !this.initRequest || this.negotiated === null) return null;
    return this.negotiatedParams ?? {};
  }

  /**
   * Whether a new process's initialize result negotiates what the client already has. `exact`:
   * the numbers of that answer that re-serialising would change (exactReadNumbers of its text),
   * compared with the first answer's as exactly as the client read them.
   */
  sameNegotiation(result: unknown, exact: readonly string[]): boolean {
    const r = result as { protocolVersion?: unknown; capabilities?: unknown };
    return (
      this.negotiated !== null &&
      sameJson(r.protocolVersion ?? null, this.negotiated.protocolVersion ?? null) &&
      sameJson(r.capabilities ?? null, this.negotiated.capabilities ?? null) &&
      sameJson(exact, this.negotiated.exact)
    );
  }

  /**
   * The capabilities the client declared: in the initialize a server answered (legacy), in its
   * request envelope (modern). Not the latest initialize the client sent: one sent again that a
   * server refused, or that was lost with its process, declared capabilities no server agreed to
   * (a client that asks for URL elicitation again, refused, would still be sent to the console).
   * Null before any initialize was answered.
   */
  clientCapabilities(): unknown {
    if (this.era_ === "modern") return this.modernMeta?.[CLIENT_CAPABILITIES_META] ?? null;
    if (this.negotiated === null) return null;
    return (this.negotiatedParams as { capabilities?: unknown } | null)?.capabilities ?? null;
  }

  /** Whether the client ran server/discover (a new process must then advertise the same). */
  get hasDiscovered(): boolean {
    return this.discovered !== null;
  }

  /** Whether a new process's server/discover answer advertises what the first did (`exact`: as sameNegotiation's). */
  sameDiscovery(capabilities: unknown, exact: readonly string[]): boolean {
    return sameJson(capabilities ?? null, this.discovered ?? null) && sameJson(exact, this.discoveredExact);
  }
}
