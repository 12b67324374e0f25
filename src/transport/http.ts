import { randomBytes } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { forwardingHeader } from "../util/forwarded.js";
import type { Logger } from "../util/log.js";
import { SparingWarnings } from "../util/sparingWarnings.js";
import {
  allowedOrigins,
  bearerMatches,
  hostOriginProblem,
  hostsOfSockets,
  isThisMachine,
  type ListenAddress,
  unauthenticatedPeerProblem,
} from "./httpAccess.js";
import { readJsonBody } from "./httpBody.js";
import { capConnections } from "./httpConnections.js";
import { HttpSession, type HttpSession as Session, type SessionHooks } from "./httpSession.js";
import { parseEventId } from "./httpSse.js";
import { protocolVersionProblem } from "./httpVersion.js";

/** The client behind a connection, as the operating system tells it (never as the client says). */
export interface Peer {
  /** the connecting process, when it could be found from the socket */
  pid: number | null;
  /**
   * its start time, read while it held the socket (pid and start time name one process: the run's
   * chain, read later, must start at this one, not at another that reused the pid); null with pid
   */
  startTime: string | null;
  /** why `pid` is null, in one sentence */
  why: string | null;
  remoteAddress: string;
}

export interface HttpFrontOptions {
  address: ListenAddress;
  /** null: --no-auth (loopback only, checked by the caller; on Linux only this user's processes are served) */
  token: string | null;
  /**
   * The command that shows the token, with the front's state directory when it is not the
   * default: a client refused 401 was told 'portcullis status', which looks in the default one
   * (or its own PORTCULLIS_HOME) and does not list this front when it was started elsewhere.
   */
  tokenCommand?: string;
  maxMessageBytes: number;
  maxSessions: number;
  idleTimeoutMs: number;
  log: Logger;
  /**
   * Finds the connecting process from the socket (`src/identity/proc.ts` on Linux). It may take a
   * moment (a socket several processes hold is looked at again): the connection's requests wait.
   */
  findPeer(
    ours: { address: string; port: number },
    theirs: { address: string; port: number },
  ): Peer | Promise<Peer>;
  /**
   * The identity of a connecting process (pid and start time), or null when it is not known. It
   * groups a modern-era client's requests (they carry no session id: one process, one session, so
   * its approvals hold across its requests), and binds a legacy session to the process that
   * opened it.
   */
  processKey(peer: Peer): string | null;
  /** A new session: start a gateway and a server for it. */
  open(session: Session, peer: Peer): SessionHooks;
}

const PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion";

/**
 * The Streamable HTTP front at `http://HOST:PORT/mcp`: access checks on every request, then
 * sessions. A legacy client's `initialize` opens a session (its id in `Mcp-Session-Id`); a modern
 * (2026-07-28) client's requests, which carry no session, share one session per connecting
 * process. Each session is one gateway, one supervised server, one agent run. Transport problems
 * are HTTP statuses; everything the gateway says, refusals included, is a JSON-RPC body with 200.
 */
export class HttpFront {
  private server: Server | null = null;
  private readonly sessions = new Map<string, Session>();
  /**
   * Every session whose end has not finished, in the map or not: one leaves the map when its end
   * answered what was open (or a modern client's next request opened its successor under the same
   * key while its gateway still answered what it held), and its run and server end after that.
   * The front's close waits for them all, so the store is not closed under a run still ending.
   */
  private readonly unfinished = new Set<Session>();
  private closing = false;
  private hosts = new Set<string>();
  private origins = new Set<string>();
  private reaper: NodeJS.Timeout | null = null;
  private readonly peers = new WeakMap<Socket, Peer>();
  private readonly lookups = new WeakMap<Socket, Promise<Peer>>();
  private readonly keys = new WeakMap<Peer, string | null>();
  private readonly connectionIds = new WeakMap<Socket, number>();
  private connections = 0;

  constructor(private readonly o: HttpFrontOptions) {}

  /** Listens; resolves with the port (useful with port 0). */
  async listen(): Promise<number> {
    const server = createServer((req, res) => {
      this.handle(req, res).catch((e) => {
        this.o.log.warn(`http: ${req.method} failed: ${(e as Error).message}`);
        if (!res.headersSent) refuse(req, res, 500, "internal error", -32603);
        else res.end();
      });
    });
    server.keepAliveTimeout = 60_000;
    // Every header is read: node keeps the first 2000 by default and drops the rest unseen, and
    // 2000 short ones fit in its 16 KiB head, so an Origin or a proxy's X-Forwarded-* written
    // after them escaped the checks below. The head's size still bounds what is kept.
    server.maxHeadersCount = 0;
    // Connections are descriptors, held before any check has read a byte: capped, so that a client
    // opening them without end cannot run the gateway out of descriptors (EMFILE ended it). One
    // past the cap is closed as it is accepted; the log says so, thinned (httpConnections.ts).
    capConnections([server], "http", (line) => this.o.log.warn(line));
    // No token: whose process connected is the only gate left (httpAccess.ts). Checked as each
    // connection is accepted, before node's HTTP parser has read a byte of it (the bytes arrive
    // in a later turn of the event loop), and a refused one is closed unread: no response is
    // written, since one written before the request is read can be lost to the reset the close
    // sends, and the other user's process is owed nothing. The user learns why from the log.
    // With a token the token is the gate, as for a client of another machine (docs/security.md).
    if (this.o.token === null) {
      // (another user's process may connect in a loop: its lines are thinned, not its refusals)
      const refusals = new SparingWarnings((line) => this.o.log.warn(line));
      server.on("connection", (s: Socket) => {
        const problem = unauthenticatedPeerProblem(s);
        if (problem === null) return;
        refusals.say(problem, `http: closed a connection unread: ${problem}`);
        s.destroy();
      });
    }
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(this.o.address.port, this.o.address.host, () => {
        server.off("error", reject);
        resolve();
      });
    });
    const bound = server.address() as AddressInfo;
    const port = bound.port;
    // the address the socket holds (`localhost` given: the one it resolved to), as the console's
    this.hosts = hostsOfSockets([bound.address], port);
    this.origins = allowedOrigins(this.hosts);
    this.reaper = setInterval(
      () => this.reapIdle(),
      Math.max(1_000, Math.min(60_000, this.o.idleTimeoutMs / 4)),
    );
    this.reaper.unref();
    return port;
  }

  get sessionCount(): number {
    return this.sessions.size;
  }

  /**
   * Stops accepting, ends every session (each answers what its gateway still owes first, then its
   * server stops), closes the socket.
   */
  async close(): Promise<void> {
    if (this.closing) return;
    this.closing = true;
    if (this.reaper) clearInterval(this.reaper);
    await Promise.all([...this.unfinished].map((s) => s.end()));
    const server = this.server;
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  private reapIdle(): void {
    const now = Date.now();
    for (const s of this.sessions.values()) {
      // one whose end is under way (its gateway answering what it held) is not ended again
      if (s.idle && !s.isEnded && now - s.lastUsed > this.o.idleTimeoutMs) {
        this.o.log.info(`http: session ${s.id.slice(0, 8)}… idle for ${this.o.idleTimeoutMs} ms: ended`);
        void s.end();
      }
    }
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? "").split("?")[0];
    const problem = hostOriginProblem(req.headers.host, header(req, "origin"), this.hosts, this.origins);
    if (problem) return refuse(req, res, 403, `${problem}: refused (DNS rebinding protection)`);
    // A local reverse proxy that rewrites Host to ours would pass a rebound page on, and the client
    // identified by its socket would be the proxy: the front is never meant to sit behind one.
    const forwarded = forwardingHeader(req.headers);
    if (forwarded)
      return refuse(
        req,
        res,
        403,
        `refused: this request carries ${forwarded}, so a proxy passed it on; this server answers only clients connected to it directly (DNS rebinding protection)`,
      );
    if (path !== "/mcp") return refuse(req, res, 404, "not found: the MCP endpoint is /mcp");
    if (this.o.token !== null && !bearerMatches(header(req, "authorization"), this.o.token)) {
      res.setHeader("www-authenticate", 'Bearer realm="portcullis"');
      // a token given and refused is said so: an old one pasted, not a missing header
      return refuse(
        req,
        res,
        401,
        header(req, "authorization") === undefined
          ? `a bearer token is required (see ${this.o.tokenCommand ?? "'portcullis status'"} for it)`
          : `the bearer token given is not this gateway's (see ${this.o.tokenCommand ?? "'portcullis status'"} for it)`,
      );
    }
    // the connecting process, found before anything of the request is taken (every request of the
    // connection waits for the one lookup); a connection that closed meanwhile is not served
    await this.lookUp(req.socket);
    if (req.destroyed || res.destroyed) return;
    if (this.closing) return refuse(req, res, 503, "shutting down");
    if (req.method === "POST") return this.post(req, res);
    if (req.method === "GET") return this.get(req, res);
    if (req.method === "DELETE") return this.delete(req, res);
    res.setHeader("allow", "GET, POST, DELETE");
    return plain(res, 405, `method ${req.method} not allowed`);
  }

  private async post(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const type = (header(req, "content-type") ?? "").split(";")[0]!.trim().toLowerCase();
    if (type !== "application/json")
      return rpcError(res, 415, -32600, "Content-Type must be application/json");
    const accept = (header(req, "accept") ?? "").toLowerCase();
    if (!accept.includes("application/json") || !accept.includes("text/event-stream"))
      return rpcError(res, 406, -32600, "Accept must list both application/json and text/event-stream");
    // a refused body that answers a server's request still ends that request (its session's)
    const body = await readJsonBody(req, this.o.maxMessageBytes, (id, problem) => {
      const sessionId = header(req, "mcp-session-id");
      const session = sessionId === undefined ? undefined : this.sessionOf(req, sessionId);
      session?.answerRefused(id, problem);
    });
    if (!body.ok) return rpcError(res, body.status, body.code, body.message, body.data);
    const msg = body.message;

    const isRequest = typeof msg.method === "string" && msg.id !== undefined;
    const sessionId = header(req, "mcp-session-id");
    let session: Session | undefined;
    if (sessionId !== undefined) {
      session = this.sessionOf(req, sessionId);
      if (!session) return rpcError(res, 404, -32001, "Session not found");
      if (msg.method === "initialize")
        return rpcError(
          res,
          400,
          -32600,
          "this session is already initialized; send initialize without Mcp-Session-Id",
        );
      const problem = versionProblem(req, "legacy", session.negotiatedVersion);
      if (problem) return rpcError(res, 400, -32000, problem);
    } else if (msg.method === "initialize" && isRequest) {
      // no version to check yet: initialize is where it is negotiated
      const opened = this.openSession(req, "legacy");
      if (typeof opened === "string") return rpcError(res, 503, -32000, opened);
      session = opened;
      res.setHeader("mcp-session-id", session.id);
    } else if (msg.method === "server/discover" || isModern(msg)) {
      // checked before a session (and its server) is started for it
      const problem = versionProblem(req, "modern", null);
      if (problem) return rpcError(res, 400, -32000, problem);
      const opened = this.modernSession(req);
      if (typeof opened === "string") return rpcError(res, 503, -32000, opened);
      session = opened;
    } else {
      return rpcError(
        res,
        400,
        -32000,
        "Bad Request: Mcp-Session-Id header is required (send initialize first)",
      );
    }
    if (isRequest)
      session.request(msg as typeof msg & { id: string | number; method: string }, res, body.text);
    else {
      session.notify(msg, body.text, req.socket);
      res.writeHead(202).end();
    }
  }

  private get(req: IncomingMessage, res: ServerResponse): void {
    const refusal = this.getRefusal(req, res);
    if (refusal) plain(res, refusal[0], refusal[1]);
  }

  /** Serves a GET (a stream), or says why not: [status, text]. */
  private getRefusal(req: IncomingMessage, res: ServerResponse): [number, string] | null {
    if (!(header(req, "accept") ?? "").toLowerCase().includes("text/event-stream"))
      return [406, "Accept must list text/event-stream"];
    const sessionId = header(req, "mcp-session-id");
    if (sessionId === undefined) return [405, "GET needs a session (Mcp-Session-Id)"];
    const session = this.sessionOf(req, sessionId);
    if (!session) return [404, "Session not found"];
    const problem = versionProblem(req, session.era, session.negotiatedVersion);
    if (problem) return [400, problem];
    const last = header(req, "last-event-id");
    if (last !== undefined) {
      const at = parseEventId(last);
      return at && session.resume(at.stream, at.seq, res) ? null : [404, "no such event stream to resume"];
    }
    return session.openStandalone(res) ? null : [409, "this session's GET stream is already open"];
  }

  private async delete(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const sessionId = header(req, "mcp-session-id");
    if (sessionId === undefined) return plain(res, 400, "DELETE needs Mcp-Session-Id");
    const session = this.sessionOf(req, sessionId);
    if (!session) return plain(res, 404, "Session not found");
    const problem = versionProblem(req, session.era, session.negotiatedVersion);
    if (problem) return plain(res, 400, problem);
    await session.end();
    res.writeHead(200).end();
  }

  private openSession(req: IncomingMessage, era: "legacy" | "modern", key?: string): Session | string {
    if (this.sessions.size >= this.o.maxSessions)
      return `too many sessions (${this.o.maxSessions} open): end one (DELETE) or raise --listen-max-sessions`;
    const id = key ?? randomBytes(16).toString("hex");
    const peer = this.peerOf(req);
    const log = this.o.log;
    const session = new HttpSession(
      id,
      era,
      this.keyOf(peer),
      (s) => {
        if (this.sessions.get(s.id) === s) this.sessions.delete(s.id);
        // its end is under way (end() gives the same promise): forgotten once it is over
        void s.end().finally(() => this.unfinished.delete(s));
      },
      log,
    );
    this.sessions.set(id, session);
    this.unfinished.add(session);
    session.hooks = this.o.open(session, peer);
    return session;
  }

  /**
   * The session a request's Mcp-Session-Id names: a legacy session only, and only for the
   * process that opened it. A modern-era session has no id on the wire: the key it is kept
   * under is the front's own (`modern-conn-N` for a client not identified, a counter anyone
   * could guess), so a key sent by a client never names one, whatever the method. Another
   * process that learnt a legacy id (it holds the token too) does not get that run's grants; for
   * it the session does not exist. Not checked when the opener's process was not known.
   */
  private sessionOf(req: IncomingMessage, id: string): Session | undefined {
    const session = this.sessions.get(id);
    if (session?.era !== "legacy") return undefined;
    if (session.owner === null) return session;
    return this.keyOf(this.peerOf(req)) === session.owner ? session : undefined;
  }

  private modernSession(req: IncomingMessage): Session | string {
    const peer = this.peerOf(req);
    // A process not identified has a session per connection: two such processes must never
    // share one (and its grants) because they connect from the same address.
    const key = `modern-${this.keyOf(peer) ?? `conn-${this.connectionId(req.socket)}`}`;
    const open = this.sessions.get(key);
    if (open && !open.isEnded) return open;
    return this.openSession(req, "modern", key);
  }

  /** A number for each connection, for the sessions of processes that are not identified. */
  private connectionId(s: Socket): number {
    let id = this.connectionIds.get(s);
    if (id === undefined) {
      id = ++this.connections;
      this.connectionIds.set(s, id);
    }
    return id;
  }

  /** The peer's process key, read once per peer (a connection's peer is read once). */
  private keyOf(peer: Peer): string | null {
    if (!this.keys.has(peer)) this.keys.set(peer, this.o.processKey(peer));
    return this.keys.get(peer) ?? null;
  }

  /** The connection's peer, as lookUp found it (handle waits for it before any request is taken). */
  private peerOf(req: IncomingMessage): Peer {
    return (
      this.peers.get(req.socket) ?? {
        pid: null,
        startTime: null,
        why: "the connecting process was not looked up",
        remoteAddress: req.socket.remoteAddress ?? "",
      }
    );
  }

  /** Finds the connection's peer, once per connection (its requests share the one lookup). */
  private lookUp(s: Socket): Promise<Peer> {
    let found = this.lookups.get(s);
    if (!found) {
      found = (async () => {
        let peer: Peer;
        try {
          peer = await this.findPeerOf(s);
        } catch (e) {
          peer = {
            pid: null,
            startTime: null,
            why: `the connecting process could not be looked up (${(e as Error).message})`,
            remoteAddress: s.remoteAddress ?? "",
          };
        }
        this.peers.set(s, peer);
        return peer;
      })();
      this.lookups.set(s, found);
    }
    return found;
  }

  /**
   * Read once per connection (a keep-alive connection is one client process). Looked up for a
   * connection from any address of this machine, not only loopback: a local client that dials
   * the machine's own LAN address (`--listen 0.0.0.0:P`) is a local process too, and left
   * unidentified its legacy session would be bound to no process.
   */
  private findPeerOf(s: Socket): Peer | Promise<Peer> {
    const remoteAddress = s.remoteAddress ?? "";
    if (!isThisMachine(remoteAddress))
      return {
        pid: null,
        startTime: null,
        why: `the client connected from ${remoteAddress}, not this machine`,
        remoteAddress,
      };
    return this.o.findPeer(
      { address: s.localAddress ?? "", port: s.localPort ?? 0 },
      { address: remoteAddress, port: s.remotePort ?? 0 },
    );
  }
}

/** The request's MCP-Protocol-Version, checked against what a session of `era` supports. */
function versionProblem(
  req: IncomingMessage,
  era: "legacy" | "modern",
  negotiated: string | null,
): string | null {
  return protocolVersionProblem(header(req, "mcp-protocol-version"), era, negotiated);
}

function isModern(msg: { params?: unknown }): boolean {
  const meta = (msg.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  return typeof meta?.[PROTOCOL_VERSION_META] === "string";
}

function header(req: IncomingMessage, name: string): string | undefined {
  const v = req.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/**
 * A transport refusal before the request was read: a POST is answered with a JSON-RPC error
 * (id null), since a client parses every answer to its POST as JSON-RPC; GET, DELETE and other
 * methods get the same status with one line of text (docs/refusals.md).
 */
function refuse(
  req: IncomingMessage,
  res: ServerResponse,
  status: number,
  text: string,
  code = -32000,
): void {
  if (req.method === "POST") rpcError(res, status, code, text);
  else plain(res, status, text);
}

function plain(res: ServerResponse, status: number, text: string): void {
  res.writeHead(status, { "content-type": "text/plain; charset=utf-8" }).end(`${text}\n`);
}

/** A transport error with a JSON-RPC body (id null: the request was not taken). */
function rpcError(res: ServerResponse, status: number, code: number, message: string, data?: unknown): void {
  const error: Record<string, unknown> = { code, message };
  if (data !== undefined) error.data = data;
  res
    .writeHead(status, { "content-type": "application/json" })
    .end(JSON.stringify({ jsonrpc: "2.0", id: null, error }));
}
