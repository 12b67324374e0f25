import { EventEmitter } from "node:events";
import {
  type ClientRequest,
  Agent as HttpAgent,
  request as httpRequest,
  type IncomingMessage,
} from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";
import type { Socket } from "node:net";
import { TLSSocket } from "node:tls";
import { ulid } from "ulid";
import { refuse } from "../guard/refusals.js";
import { chainDigest, type ExecutionRecord, type RemoteFacts, remoteRecord } from "../identity/index.js";
import { DEFAULT_MAX_MESSAGE_BYTES } from "../relay/framing.js";
import { sameJson, sha256Tag } from "../util/canonical.js";
import { MAX_MESSAGE_DEPTH } from "../util/jsonDepth.js";
import type { Logger } from "../util/log.js";
import type { EpochReason, LinkEvents, LinkGeneration, ServerLink } from "./link.js";
import { type HeaderSpec, headerValueProblem } from "./remoteHeaders.js";
import { type Chain, isObject, isResponseTo, probeChain, readBody } from "./remoteWire.js";
import { SseReader } from "./sse.js";
import { LaunchError } from "./supervisor.js";

/** 2026-07-28: where a result says which server answered. */
const SERVER_INFO_META = "io.modelcontextprotocol/serverInfo";

/**
 * One epoch of a server reached over Streamable HTTP: one upstream session, on connections that
 * presented one certificate chain, answered by a server that described itself one way. Minted
 * here only, never on the server's word: a new session (the server forgot ours, the connection
 * died, a new initialize), a different certificate chain on a new connection, or a different
 * serverInfo each make a new one.
 */
export interface RemoteGeneration extends LinkGeneration {
  reason: EpochReason;
  facts: RemoteFacts;
  /** the Mcp-Session-Id the server gave at initialize (kept in memory only) */
  sessionId: string | null;
  /** requests under way for this epoch: destroyed when it goes down */
  requests: Set<ClientRequest>;
  /** the server-to-client stream (GET), once opened */
  stream: ClientRequest | null;
  /** requests whose headers are being resolved: they keep their order */
  queue: Promise<void>;
}

export interface RemoteOptions {
  label: string;
  url: URL;
  headers: HeaderSpec[];
  configDigest: string;
  log: Logger;
  /**
   * A header secret's value, asked of the vault holder at each use; when it cannot be had, why:
   * the vault is locked, or it holds no secret by that name that may go to this server's host.
   */
  secret: (scope: string) => Promise<{ value: string } | { locked: true } | { missing: string }>;
  maxMessageBytes?: number;
  connectTimeoutMs?: number;
  /**
   * How long the server has to answer initialize (default 15 s). Nothing else is sent to it
   * before: an initialize never answered ends the epoch instead of holding every later request.
   */
  initializeTimeoutMs?: number;
  backoff?: { initialMs: number; maxMs: number };
  crashLoop?: { max: number; windowMs: number };
}

type Message = { id?: unknown; method?: unknown; result?: unknown; error?: unknown };

export class RemoteSupervisor
  extends EventEmitter<LinkEvents<RemoteGeneration>>
  implements ServerLink<RemoteGeneration>
{
  current: RemoteGeneration | null = null;
  private stopping = false;
  private agent: HttpAgent;
  /** sockets whose certificate chain was compared with the epoch's */
  private verified = new WeakMap<Socket, string>();
  private losses: number[] = [];
  private reconnectTimer: NodeJS.Timeout | null = null;
  private readonly https: boolean;
  private readonly maxBytes: number;

  constructor(private readonly o: RemoteOptions) {
    super();
    this.https = o.url.protocol === "https:";
    this.agent = this.newAgent();
    this.maxBytes = o.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  }

  private newAgent(): HttpAgent {
    // No resumed TLS sessions: each new connection shows its whole chain.
    return this.https
      ? new HttpsAgent({ keepAlive: true, maxCachedSessions: 0 })
      : new HttpAgent({ keepAlive: true });
  }

  /** Connects once (for TLS: the handshake shows the chain); throws LaunchError when the server cannot be reached. */
  async start(): Promise<RemoteGeneration> {
    let chain: Awaited<ReturnType<RemoteSupervisor["probe"]>>;
    try {
      chain = await this.probe();
    } catch (e) {
      throw new LaunchError(`cannot reach ${this.o.url.href}: ${(e as Error).message}`);
    }
    return this.mint("launch", chain, null);
  }

  /** A fresh connection to the server: its certificate chain (null for http://). */
  private probe(): Promise<Chain> {
    return probeChain(this.o.url, this.o.connectTimeoutMs ?? 10_000);
  }

  private mint(reason: EpochReason, chain: Chain, previous: RemoteGeneration | null): RemoteGeneration {
    const facts: RemoteFacts = {
      url: this.o.url.href,
      certificateChainSha256: chain?.digest ?? null,
      certificate: chain?.certificate ?? null,
      serverInfo: null,
      protocolVersion: null,
      capabilities: null,
      session: null,
      headerNames: this.o.headers.map((h) => h.name).sort(),
    };
    const epoch = ulid();
    const gen: RemoteGeneration = {
      epoch,
      reason,
      facts,
      record: this.recordOf(epoch, new Date().toISOString(), facts),
      settled: null,
      alive: true,
      sessionId: null,
      requests: new Set(),
      stream: null,
      queue: Promise.resolve(),
    };
    this.current = gen;
    this.emit("up", gen, previous);
    return gen;
  }

  private recordOf(epoch: string, startedAt: string, facts: RemoteFacts): ExecutionRecord {
    return remoteRecord(
      { serverLabel: this.o.label, configDigest: this.o.configDigest, epoch, startedAt },
      facts,
    );
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
    if (m.method === "initialize" && gen.sessionId !== null) {
      // A second initialize would open a second session on the same epoch: it gets an epoch of its own.
      queueMicrotask(() => this.lose(gen, "new-session", "a new initialize starts a new upstream session"));
      return false;
    }
    const body = Buffer.from(text, "utf8");
    gen.queue = gen.queue
      .then(() => this.post(gen, m, body))
      .catch((e) => {
        // the code only: a message about a request can quote what was in its headers
        this.o.log.warn(
          `a request to ${this.o.url.host} could not be made (${(e as NodeJS.ErrnoException).code ?? "error"})`,
        );
        if (gen.alive) this.lose(gen, "new-session", "a request could not be made");
      });
    return true;
  }

  /** The headers of every request: the configured ones (vault values released now), the session's. */
  private async headersFor(
    gen: RemoteGeneration,
  ): Promise<Record<string, string> | { withheld: string; missing: string | null }> {
    const out: Record<string, string> = {};
    for (const h of this.o.headers) {
      if ("value" in h) out[h.name] = h.value;
      else {
        const v = await this.o.secret(h.secret);
        if ("locked" in v) return { withheld: h.secret, missing: null };
        if ("missing" in v) return { withheld: h.secret, missing: v.missing };
        // node would quote a value it refuses in its error message: checked here, never quoted
        const problem = headerValueProblem(v.value);
        if (problem)
          return { withheld: h.secret, missing: `its value ${problem}, so it cannot be sent as a header` };
        out[h.name] = h.format.replace("{}", v.value);
      }
    }
    if (gen.sessionId !== null) out["mcp-session-id"] = gen.sessionId;
    if (gen.facts.protocolVersion !== null) out["mcp-protocol-version"] = gen.facts.protocolVersion;
    return out;
  }

  private async post(gen: RemoteGeneration, m: Message, body: Buffer): Promise<void> {
    if (!gen.alive) return;
    const isRequest = typeof m.method === "string" && m.id !== undefined;
    const headers = await this.headersFor(gen);
    if (!gen.alive) return;
    if ("withheld" in headers) {
      this.o.log.warn(
        `not sent to ${this.o.url.host}: the header secret "${headers.withheld}" cannot be released (${headers.missing ?? "the vault is locked"})`,
      );
      if (isRequest) {
        const e =
          headers.missing === null
            ? refuse.vaultLocked([headers.withheld])
            : refuse.credentialMissing(headers.withheld, headers.missing);
        this.answer(gen, m.id, e.code, e.message, e.data);
      }
      return;
    }
    const req = this.request(gen, "POST", {
      ...headers,
      "content-type": "application/json",
      accept: "application/json, text/event-stream",
      "content-length": String(body.length),
    });
    // The body goes out only once the connection's certificate chain is the epoch's.
    this.whenVerified(gen, req, () => req.end(body));
    let answered = () => {};
    const answer = new Promise<void>((resolve) => {
      answered = resolve;
    });
    req.on("response", (res) => this.onPostResponse(gen, m, isRequest, res, answered));
    // Nothing else is sent until initialize is answered: the session id and the protocol version
    // are learned from it.
    if (m.method === "initialize") await this.untilAnswered(gen, req, answer);
  }

  /**
   * Waits for the initialize answer, not for its connection to close: a server may keep the SSE
   * stream of its answer open (the standard says it should close it, not that it must). An
   * answer that never comes ends the epoch (its requester gets epoch_transition) once the
   * initialize timeout has passed.
   */
  private async untilAnswered(
    gen: RemoteGeneration,
    req: ClientRequest,
    answer: Promise<void>,
  ): Promise<void> {
    const ms = this.o.initializeTimeoutMs ?? 15_000;
    let timer: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      answer.then(() => "answered" as const),
      new Promise<"closed">((resolve) => req.once("close", () => resolve("closed"))),
      new Promise<"timeout">((resolve) => {
        timer = setTimeout(() => resolve("timeout"), ms);
        timer.unref();
      }),
    ]);
    clearTimeout(timer);
    if (outcome !== "timeout" || !gen.alive || this.stopping) return;
    req.destroy();
    this.lose(gen, "new-session", `the server did not answer initialize within ${seconds(ms)}`);
  }

  private request(gen: RemoteGeneration, method: string, headers: Record<string, string>): ClientRequest {
    const u = this.o.url;
    const fn = this.https ? httpsRequest : httpRequest;
    const req = fn(u, { method, headers, agent: this.agent });
    gen.requests.add(req);
    req.on("close", () => gen.requests.delete(req));
    req.on("error", (e) => {
      if (!gen.alive || this.stopping) return;
      this.lose(
        gen,
        "new-session",
        `the connection to ${u.host} failed (${(e as NodeJS.ErrnoException).code ?? e.message})`,
      );
    });
    return req;
  }

  /**
   * Runs `then` once `req`'s socket is known to present the epoch's certificate chain. A
   * socket is looked at once (a kept-alive one was seen before); a different chain ends the
   * epoch before a byte of the request is written.
   */
  private whenVerified(gen: RemoteGeneration, req: ClientRequest, then: () => void): void {
    if (!this.https) {
      then();
      return;
    }
    req.once("socket", (sock: Socket) => {
      const check = () => {
        if (this.verified.get(sock) === gen.facts.certificateChainSha256) {
          then();
          return;
        }
        const chain = chainDigest((sock as TLSSocket).getPeerCertificate(true));
        const digest = chain?.digest ?? null;
        if (digest !== null && digest === gen.facts.certificateChainSha256) {
          this.verified.set(sock, digest);
          return then();
        }
        req.destroy();
        if (gen.alive)
          this.lose(
            gen,
            "certificate-changed",
            `the server presented a different TLS certificate chain (${digest ?? "none"})`,
          );
      };
      const tls = sock as TLSSocket;
      if (tls instanceof TLSSocket && tls.getPeerCertificate()?.raw) check();
      else sock.once("secureConnect", check);
    });
  }

  /** `onAnswered`: called once the request's answer (or what stands for it) has been delivered. */
  private onPostResponse(
    gen: RemoteGeneration,
    m: Message,
    isRequest: boolean,
    res: IncomingMessage,
    onAnswered: () => void,
  ): void {
    if (!gen.alive) return void res.destroy();
    const status = res.statusCode ?? 0;
    if (m.method === "initialize" && status === 200) {
      const sid = res.headers["mcp-session-id"];
      if (typeof sid === "string" && sid !== "") {
        gen.sessionId = sid;
        gen.facts = { ...gen.facts, session: sha256Tag(sid) };
      }
    }
    if (status === 404 && gen.sessionId !== null) {
      res.resume();
      this.lose(gen, "new-session", "the server no longer knows our session (HTTP 404)");
      return;
    }
    // The session is initialized: open the server-to-client stream (requests, notifications, and
    // the first sign of a server that went away between calls).
    if (m.method === "notifications/initialized" && status >= 200 && status < 300) this.openStream(gen);
    const type = String(res.headers["content-type"] ?? "").toLowerCase();
    if (status === 202 || (status >= 200 && status < 300 && !isRequest && !type)) {
      res.resume();
      return;
    }
    if (status >= 200 && status < 300 && type.startsWith("text/event-stream")) {
      let done = !isRequest;
      const answer = () => {
        done = true;
        onAnswered();
        if (m.method === "initialize") this.warnIfLeftOpen(gen, res);
      };
      this.readSse(
        gen,
        m,
        res,
        (msg) => {
          if (isRequest && !done && isResponseTo(msg, m.id)) answer();
        },
        () => {
          if (!done && gen.alive && !this.stopping)
            this.lose(gen, "new-session", `the server's stream ended without answering ${String(m.method)}`);
        },
        (bytes) => {
          // Over the limit on a request's own stream: taken as its answer, so its requester gets
          // message_too_large with its own id (the stream ending then is no lost answer).
          const id = isRequest && !done ? JSON.stringify(m.id) : null;
          this.emit("oversize", bytes, gen, id, false);
          if (id !== null) answer();
        },
      );
      return;
    }
    readBody(res, this.maxBytes, (text, bytes) => {
      if (!gen.alive) return;
      if (text === null) {
        this.emit("oversize", bytes, gen, isRequest ? JSON.stringify(m.id) : null, false);
        return onAnswered();
      }
      const ok = status >= 200 && status < 300;
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : undefined;
      } catch {
        parsed = undefined;
      }
      const list = Array.isArray(parsed) ? parsed : parsed === undefined ? [] : [parsed];
      let answered = false;
      for (const one of list) {
        if (isRequest && isResponseTo(one, m.id)) answered = true;
        // one message: its text as the server wrote it (ids JSON.parse would round or respell)
        if (ok || isResponseTo(one, m.id))
          this.deliver(gen, one, m, Array.isArray(parsed) ? undefined : text);
      }
      if (isRequest && !answered) {
        const e = refuse.upstreamHttpError(status);
        this.answer(gen, m.id, e.code, e.message, e.data);
      } else if (!ok && !isRequest) {
        this.o.log.warn(`the remote server refused a ${String(m.method ?? "response")} (HTTP ${status})`);
      }
      onAnswered();
    });
  }

  /**
   * The stream that carried the initialize answer is still open a second later: said once, since
   * nothing waits on it (what else the server sends on it is still read and delivered).
   */
  private warnIfLeftOpen(gen: RemoteGeneration, res: IncomingMessage): void {
    setTimeout(() => {
      if (gen.alive && !this.stopping && !res.complete && !res.destroyed)
        this.o.log.warn(
          `${this.o.url.host} keeps the SSE stream of its initialize answer open; requests go on without waiting for it to close`,
        );
    }, 1000).unref();
  }

  /** The server-to-client stream: requests and notifications the server sends outside a call. */
  private openStream(gen: RemoteGeneration, opened = Date.now()): void {
    if (!gen.alive || this.stopping || gen.stream) return;
    void this.headersFor(gen).then((headers) => {
      if (!gen.alive || this.stopping || "withheld" in headers) return;
      const req = this.request(gen, "GET", { ...headers, accept: "text/event-stream" });
      gen.stream = req;
      this.whenVerified(gen, req, () => req.end());
      req.on("response", (res) => {
        const status = res.statusCode ?? 0;
        if (status === 405) {
          gen.stream = null;
          return void res.resume(); // the server offers no such stream: sessions are checked per request
        }
        if (status === 404 || (status === 400 && gen.sessionId !== null)) {
          res.resume();
          this.lose(gen, "new-session", `the server no longer knows our session (HTTP ${status})`);
          return;
        }
        if (status !== 200) {
          gen.stream = null;
          return void res.resume();
        }
        this.readSse(
          gen,
          null,
          res,
          () => {},
          () => {
            gen.stream = null;
            if (!gen.alive || this.stopping) return;
            // Ended: the server may only be pruning streams, or it may be gone. Look again.
            const wait = Date.now() - opened < 1000 ? 1000 : 0;
            setTimeout(() => this.openStream(gen), wait).unref();
          },
        );
      });
    });
  }

  private readSse(
    gen: RemoteGeneration,
    sent: Message | null,
    res: IncomingMessage,
    seen: (msg: unknown) => void,
    ended: () => void,
    oversize: (bytes: number) => void = (bytes) => this.emit("oversize", bytes, gen, null, false),
  ): void {
    const reader = new SseReader(
      (e) => {
        if (e.event !== "message" || !gen.alive) return;
        let msg: unknown;
        try {
          msg = JSON.parse(e.data);
        } catch {
          this.o.log.warn("dropped an event from the remote server that is not JSON");
          return;
        }
        seen(msg);
        this.deliver(gen, msg, sent, Array.isArray(msg) ? undefined : e.data);
      },
      oversize,
      this.maxBytes,
    );
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      reader.end();
      ended();
    };
    res.on("data", (b: Buffer) => reader.push(b));
    res.on("end", finish);
    res.on("close", finish);
    res.on("error", finish);
  }

  /**
   * One message from the server to the gateway; an initialize result completes the record.
   * `text`: the message as the server wrote it, when it is the whole of what was read.
   */
  private deliver(gen: RemoteGeneration, msg: unknown, sent: Message | null, text?: string): void {
    if (!gen.alive || gen !== this.current) return;
    if ((sent?.method === "initialize" || sent?.method === "server/discover") && isResponseTo(msg, sent.id)) {
      const result = (msg as { result?: unknown }).result;
      if (isObject(result) && !this.noteSelf(gen, result, sent.method === "initialize")) return;
    }
    let line = text;
    if (line === undefined) {
      // one message of a batch, written again: JSON.stringify throws on a value nested thousands
      // deep, where the gateway would refuse the message anyway (message_too_deep)
      try {
        line = JSON.stringify(msg);
      } catch {
        this.o.log.warn("dropped a message from the remote server nested too deep to be written again");
        const m = msg as { id?: unknown; method?: unknown };
        if (m.method === undefined && (typeof m.id === "number" || typeof m.id === "string")) {
          const e = refuse.responseTooDeep(MAX_MESSAGE_DEPTH, "server");
          this.answer(gen, m.id, e.code, e.message, e.data);
        }
        return;
      }
    }
    this.emit("line", line, gen);
  }

  /**
   * What the server says of itself (an initialize result; in the 2026-07-28 era, each
   * server/discover result) goes into the epoch's record. Said differently within one epoch (a
   * server that changes its serverInfo), it ends the epoch, and the answer is not delivered.
   */
  private noteSelf(gen: RemoteGeneration, result: Record<string, unknown>, initialize: boolean): boolean {
    // legacy: the initialize result's serverInfo; 2026-07-28: server/discover's `_meta` carries it
    const meta = isObject(result._meta) ? result._meta : null;
    const said = result.serverInfo ?? meta?.[SERVER_INFO_META];
    const serverInfo = isObject(said) ? said : null;
    if (gen.facts.serverInfo !== null && !sameJson(gen.facts.serverInfo, serverInfo)) {
      this.lose(gen, "server-info-changed", "the server describes itself differently (serverInfo)");
      return false;
    }
    if (initialize) {
      gen.facts = {
        ...gen.facts,
        serverInfo,
        protocolVersion: typeof result.protocolVersion === "string" ? result.protocolVersion : null,
        capabilities: isObject(result.capabilities) ? result.capabilities : null,
      };
    } else if (gen.facts.serverInfo === null && serverInfo !== null) {
      gen.facts = { ...gen.facts, serverInfo };
    } else return true;
    gen.record = this.recordOf(gen.epoch, gen.record.startedAt, gen.facts);
    gen.settled = true;
    return true;
  }

  /** A JSON-RPC error to the gateway for a request the server did not answer. */
  private answer(gen: RemoteGeneration, id: unknown, code: number, message: string, data: unknown): void {
    this.deliver(gen, { jsonrpc: "2.0", id, error: { code, message, data } }, null);
  }

  // ───────────────────────────── epochs ─────────────────────────────

  /**
   * The epoch ends: every request under way is abandoned (the gateway answers its calls
   * epoch_transition: never retried), and a new epoch is minted once the server can be reached.
   */
  private lose(gen: RemoteGeneration, next: EpochReason, detail: string): void {
    if (!gen.alive || gen !== this.current) return;
    this.end(gen);
    this.emit("down", gen, "exit", detail);
    this.o.log.status(`remote session ended: ${detail}`);
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

  private end(gen: RemoteGeneration): void {
    gen.alive = false;
    for (const r of gen.requests) r.destroy();
    gen.requests.clear();
    gen.stream = null;
    // Kept-alive connections of the old epoch are not reused by the next one.
    this.agent.destroy();
    this.agent = this.newAgent();
  }

  private reconnect(previous: RemoteGeneration, reason: EpochReason, delay: number): void {
    if (this.stopping) return;
    this.reconnectTimer = setTimeout(() => {
      this.reconnectTimer = null;
      if (this.stopping) return;
      this.probe().then(
        (chain) => {
          if (this.stopping) return;
          const why =
            reason === "new-session" && chain?.digest !== previous.facts.certificateChainSha256
              ? "certificate-changed"
              : reason;
          this.mint(why, chain, previous);
        },
        (e) => {
          this.o.log.info(`${this.o.url.host} cannot be reached (${(e as Error).message}); trying again`);
          this.reconnect(previous, reason, Math.min(delay * 2, this.o.backoff?.maxMs ?? 5_000));
        },
      );
    }, delay);
  }

  settle(_gen: RemoteGeneration): void {
    /* the record is completed by the initialize result (noteInitialized) */
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
    await this.deleteSession(cur);
    const chain = await this.probe().catch(() => null);
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
      await this.deleteSession(cur);
    }
    this.agent.destroy();
  }

  /** Tells the server the session is over (DELETE), best effort and briefly. */
  private async deleteSession(gen: RemoteGeneration): Promise<void> {
    if (gen.sessionId === null) return;
    const headers = await this.headersFor(gen).catch(() => null);
    if (headers === null || "withheld" in headers) return;
    await new Promise<void>((resolve) => {
      const fn = this.https ? httpsRequest : httpRequest;
      const req = fn(this.o.url, { method: "DELETE", headers, agent: this.agent, timeout: 1000 });
      req.on("response", (res) => {
        res.resume();
        resolve();
      });
      req.on("timeout", () => req.destroy());
      req.on("error", () => resolve());
      req.on("close", () => resolve());
      req.end();
    });
  }
}

function seconds(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${ms} ms`;
}
