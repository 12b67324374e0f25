import { EventEmitter } from "node:events";
import { reachProblem } from "../util/errno.js";
import type { EpochReason, LinkEvents, ServerLink } from "./link.js";
import { newGeneration, type RemoteGeneration } from "./remoteEpoch.js";
import { type Message, SessionExchanges, type SessionOptions } from "./remoteSession.js";
import { UpstreamConnections } from "./remoteTransport.js";
import { type Chain, isObject } from "./remoteWire.js";
import { LaunchError } from "./supervisor.js";

export type { RemoteGeneration } from "./remoteEpoch.js";

export interface RemoteOptions extends SessionOptions {
  connectTimeoutMs?: number;
  backoff?: { initialMs: number; maxMs: number };
  crashLoop?: { max: number; windowMs: number };
}

/**
 * The link to a server reached over Streamable HTTP (`run --url`): it mints the epochs, ends one
 * when its upstream session is lost, and reaches the server again with backoff. What goes over a
 * session is remoteSession.ts's; the connections and their certificate checks, remoteTransport.ts's.
 */
export class RemoteSupervisor
  extends EventEmitter<LinkEvents<RemoteGeneration>>
  implements ServerLink<RemoteGeneration>
{
  current: RemoteGeneration | null = null;
  /** non-null while the server cannot be reached (see ServerLink.unreachable): why */
  unreachable: string | null = null;
  private stopping = false;
  private readonly connections: UpstreamConnections;
  private readonly session: SessionExchanges;
  private losses: number[] = [];
  /** the last wait before reaching the server again after it was found unreachable (0: none) */
  private unreachableDelay = 0;
  private reconnectTimer: NodeJS.Timeout | null = null;
  /** resolves the wait of a shutdown under way on the upstream session's DELETE (hurry) */
  private hurried: () => void = () => {};

  constructor(private readonly o: RemoteOptions) {
    super();
    this.connections = new UpstreamConnections(o.url, o.connectTimeoutMs ?? 10_000);
    this.session = new SessionExchanges(o, this.connections, {
      isCurrent: (gen) => gen === this.current,
      stopping: () => this.stopping,
      lose: (gen, next, detail) => this.lose(gen, next, detail),
      line: (text, gen, own) => this.emit("line", text, gen, own),
      oversize: (bytes, gen, rawId) => this.emit("oversize", bytes, gen, rawId, false),
      initializeRefused: (gen, why) => this.initializeRefused(gen, why),
      reached: (gen) => {
        if (gen !== this.current) return;
        this.unreachable = null;
        this.unreachableDelay = 0;
      },
    });
  }

  /** Connects once (for TLS: the handshake shows the chain); throws LaunchError when the server cannot be reached. */
  async start(): Promise<RemoteGeneration> {
    let chain: Chain;
    try {
      chain = await this.connections.probe();
    } catch (e) {
      // the sentence `run` ends on, with a period as its others have (a system's text may have one)
      const why = reachProblem(e);
      throw new LaunchError(`cannot reach ${this.o.url.href}: ${why}${/[.!?]$/.test(why) ? "" : "."}`);
    }
    return this.mint("launch", chain, null);
  }

  private mint(reason: EpochReason, chain: Chain, previous: RemoteGeneration | null): RemoteGeneration {
    const gen = newGeneration(this.o, reason, chain);
    // reached: requests wait for the new epoch's catalog again (told at once if it fails too)
    this.unreachable = null;
    this.current = gen;
    this.emit("up", gen, previous);
    return gen;
  }

  // ───────────────────────────── sending ─────────────────────────────

  send(msg: unknown): boolean {
    return this.sendMessage(msg as Message, JSON.stringify(msg));
  }

  /**
   * A message already serialised (a relayed line with its id replaced, an answer under the id as
   * the server wrote it, which JSON.stringify could not write): posted as it is.
   */
  sendText(text: string): boolean {
    let m: unknown;
    try {
      m = JSON.parse(text);
    } catch {
      return false;
    }
    return isObject(m) && this.sendMessage(m as Message, text);
  }

  private sendMessage(m: Message, text: string): boolean {
    const gen = this.current;
    if (!gen?.alive || this.stopping) return false;
    // the epoch's initialize is refused by a front and sent again later: nothing else is queued
    // behind it meanwhile (its sender answers server_unavailable, as for an ended epoch)
    if (this.unreachable !== null) return false;
    return this.session.send(gen, m, text);
  }

  // ───────────────────────────── epochs ─────────────────────────────

  /**
   * The epoch ends: every request under way is abandoned (the gateway answers its calls
   * epoch_transition: never retried), and a new epoch is minted once the server can be reached.
   * (An initialize that a front answers for a server it cannot reach ends nothing: see
   * initializeRefused.)
   */
  private lose(gen: RemoteGeneration, next: EpochReason, detail: string): void {
    if (!gen.alive || gen !== this.current) return;
    this.end(gen);
    this.emit("down", gen, "exit", detail);
    this.o.log.status(`remote session ended: ${detail}`);
    this.unreachableDelay = 0;
    const now = Date.now();
    const windowMs = this.o.crashLoop?.windowMs ?? 30_000;
    const max = this.o.crashLoop?.max ?? 5;
    this.losses = this.losses.filter((t) => now - t < windowMs).concat(now);
    if (this.losses.length >= max) {
      this.emit(
        "gave-up",
        `the remote server dropped ${this.losses.length} sessions within ${Math.round(windowMs / 1000)} s; supervision stopped. Fix the server, then restart your MCP client.`,
      );
      return;
    }
    this.reconnect(gen, next, this.o.backoff?.initialMs ?? 200);
  }

  /**
   * `gen`'s initialize was answered by an HTTP front for a server it cannot reach. No session was
   * opened, so the epoch is kept (minted and recorded once, nothing sent under it but its
   * initialize): the server is said unreachable, and the initialize is sent again after the
   * returned wait, growing as for a server that cannot be connected to. Not a lost session, so
   * not counted toward the crash loop. A new epoch per attempt would add a record to the store
   * and the audit every few seconds for as long as the server is down.
   */
  private initializeRefused(gen: RemoteGeneration, why: string): number {
    const first = this.unreachableDelay === 0;
    this.unreachableDelay = Math.min(
      first ? (this.o.backoff?.initialMs ?? 200) : this.unreachableDelay * 2,
      this.o.backoff?.maxMs ?? 5_000,
    );
    const said = `${why}; initialize is sent again in ${this.unreachableDelay} ms under epoch ${gen.epoch}`;
    if (first) this.o.log.status(said);
    else this.o.log.info(said);
    this.becameUnreachable(why);
    return this.unreachableDelay;
  }

  private end(gen: RemoteGeneration): void {
    gen.alive = false;
    for (const r of gen.requests) r.destroy();
    gen.requests.clear();
    gen.stream = null;
    // Kept-alive connections of the old epoch are not reused by the next one.
    this.connections.renew();
  }

  private reconnect(previous: RemoteGeneration, reason: EpochReason, delay: number): void {
    if (this.stopping) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.stopping) return;
      this.connections.probe().then(
        (chain) => {
          if (this.stopping) return;
          // over http:// there is no chain on either side (null, as the record stores it): a new
          // session then, never a certificate change
          const digest = chain?.digest ?? null;
          const why =
            reason === "new-session" && digest !== previous.facts.certificateChainSha256
              ? "certificate-changed"
              : reason;
          this.mint(why, chain, previous);
        },
        (e) => {
          this.o.log.info(`${this.o.url.host} cannot be reached (${reachProblem(e)}); trying again`);
          this.becameUnreachable(`cannot reach ${this.o.url.href}: ${reachProblem(e)}`);
          this.reconnect(previous, reason, Math.min(delay * 2, this.o.backoff?.maxMs ?? 5_000));
        },
      );
    }, delay);
  }

  /** Says why the server cannot be reached; the gateway answers what waits for it now. */
  private becameUnreachable(why: string): void {
    if (this.stopping) return;
    this.unreachable = why;
    this.emit("unreachable");
  }

  settle(_gen: RemoteGeneration): void {
    /* the record is completed by the initialize result (noteSelf, remoteEpoch.ts) */
  }

  /** Nothing to look at synchronously: connections are checked as they are made, sessions as they answer. */
  checkReplacement(): boolean {
    return false;
  }

  async restart(): Promise<RemoteGeneration | null> {
    const cur = this.current;
    if (this.stopping || !cur) return null;
    this.end(cur);
    this.emit("down", cur, "restart", "a new upstream session was asked for");
    await this.session.deleteSession(cur);
    const chain = await this.connections.probe().catch(() => null);
    return this.mint("restart", chain, cur);
  }

  async shutdown(): Promise<void> {
    if (this.stopping) return;
    this.stopping = true;
    if (this.reconnectTimer) clearTimeout(this.reconnectTimer);
    const cur = this.current;
    if (cur?.alive) {
      this.emit("down", cur, "shutdown", "gateway shutting down");
      cur.alive = false;
      for (const r of cur.requests) r.destroy();
      // the DELETE that ends the upstream session is a courtesy to the server: a hurried
      // shutdown does not wait for it
      const hurried = new Promise<void>((resolve) => {
        this.hurried = resolve;
      });
      await Promise.race([this.session.deleteSession(cur), hurried]);
    }
    this.connections.close();
  }

  /** What the server sends is left unread while the client is backed up (ServerLink.setReading). */
  setReading(on: boolean): void {
    this.session.setReading(on);
  }

  /** Nothing runs here to be killed: the shutdown stops waiting for the upstream session's DELETE. */
  hurry(): void {
    if (!this.stopping) void this.shutdown();
    this.hurried();
  }
}
