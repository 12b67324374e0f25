import * as http from "node:http";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import * as https from "node:https";
import { isIP, connect as netConnect, type Socket } from "node:net";
import { type Duplex, pipeline, Transform } from "node:stream";
import { createSecureContext, rootCertificates, type SecureContext, TLSSocket } from "node:tls";
import { acceptedFromOther } from "../../identity/otherUser.js";
import { connectionCap, SharedConnectionCap } from "../../transport/httpConnections.js";
import type { Logger } from "../../util/log.js";
import { SparingWarnings } from "../../util/sparingWarnings.js";
import type { CredentialSpec } from "../credentials.js";
import { EchoScrubber, headWithoutEchoes, spellingsOf } from "./echo.js";
import {
  CLOSED_MID_REQUEST,
  errorResponse,
  HOP,
  onlyDeclaredMisdirected,
  serveTunnel,
  upgradesToWebSocket,
  WEBSOCKET_REFUSED,
} from "./exchange.js";
import { HolderClient } from "./holderClient.js";
import {
  type Destination,
  destinationText,
  hostMatches,
  misdirection,
  parseAuthority,
  withoutTrailingDot,
} from "./hosts.js";
import { MAX_HEAD_BYTES } from "./http1.js";
import { interimWarning, relayInterim } from "./interim.js";
import {
  type RefusedWriting,
  readOnPastRefusal,
  readPastRefusedWrites,
  refusedWriting,
  refusedWritingWarning,
} from "./refusedWrites.js";
import { releaser } from "./release.js";
import { decoding, IDENTITY_ONLY } from "./rewrite.js";
import { upstreams } from "./upstreams.js";

/**
 * The egress proxy of one gateway: the server's HTTP(S) goes through it (proxy variables and a
 * preload set at spawn). It reads requests to the hosts an HTTP-delivered credential declares
 * (absolute-form http://, and inside CONNECT tunnels, TLS terminated with a leaf the vault holder
 * mints) and puts the real value in place of the placeholder, in headers and the URL only, when a
 * call covering that scope is in flight in the current epoch and the holder (unlocked, its stored
 * policy naming the host) releases it (see release.ts: once per call, scope and host). Inside a
 * tunnel only request heads are parsed and the bytes go on over the proxy's own kept-alive
 * connections (exchange.ts); absolute-form requests, rarer, go through Node's HTTP client. Other destinations are tunnelled untouched, or refused with
 * `egress: "declared-only"`. Every destination is reported to `onRecord`.
 */

/** Where the proxy listens: its own address, which no tunnel may lead back to (reachedItself). */
const PROXY_ADDRESS = "127.0.0.1";
/** RFC 5842's status for a request that would loop. */
const LOOP_DETECTED = 508;
const ITSELF = "that is this egress proxy itself; a tunnel through it to it is refused";
const selfRefused = (dest: Destination) =>
  ({ host: dest.host, port: dest.port, outcome: "refused", status: LOOP_DETECTED }) as const;

/** HTTPS's port: what is sent there goes over TLS (see PLAIN_TO_HTTPS_PORT). */
const HTTPS_PORT = 443;
const PLAIN_TO_HTTPS_PORT =
  "plain HTTP to port 443: the proxy carries requests to port 443 over TLS only, so that no released credential crosses the network in clear; use https://, nothing was sent";
export interface CallInFlight {
  callId: string;
  /** the call's `callKey` in the audit: an egress record made for the call carries it */
  callKey?: number;
  epoch: string;
  scopes: readonly string[];
  /** unique per forwarded call in the gateway (a client may send one request id twice); else callId */
  key?: string;
}

export interface EgressRecord {
  host: string;
  port: number;
  method: string;
  /** http / https: read by the proxy; tunnel: passed through unread */
  scheme: "http" | "https" | "tunnel";
  released: string[];
  /** placeholders seen in the request that were not replaced */
  withheld: string[];
  call: string | null;
  /** the `callKey` of the call a release was made for (with `call`): ties the record to its call */
  callKey?: number;
  epoch: string | null;
  outcome: "forwarded" | "tunnelled" | "refused" | "failed";
  status?: number;
}

export interface EgressProxyOptions {
  stateDir: string;
  /** the server's `deliver: "http"` credentials (config side; the holder checks its stored policy) */
  credentials: readonly CredentialSpec[];
  mode: "record" | "declared-only";
  /** the current epoch and the calls in flight (maintained by the gateway) */
  calls(): { epoch: string | null; inFlight: Iterable<CallInFlight> };
  /** extra CA certificates (PEM) trusted for upstreams, besides Node's roots: the user's NODE_EXTRA_CA_CERTS */
  extraCa?: string;
  /** how long an upstream may take to connect or answer (ms) */
  timeoutMs?: number;
  onRecord(r: EgressRecord): void;
  /** a value was put into a request: the scrubber learns it (never logged, never stored) */
  onReleased?(scope: string, value: string): void;
  /** a release was recorded (scope, host, call, epoch) */
  onReleaseRecord?(r: { scope: string; host: string; call: string; callKey?: number; epoch: string }): void;
  log: Logger;
  /** a host as the log may show it: with the released values taken out (ReleasedValues.scrubHost) */
  shownHost?: (host: string) => string;
}

export interface EgressProxy {
  port: number;
  url: string;
  close(): Promise<void>;
}

/**
 * Whether a request read in absolute form was cut short by its client: its connection ended (a
 * FIN, or closed) before the body was whole, so that it can never be
 */
function cutShort(req: IncomingMessage): boolean {
  return (
    !req.complete &&
    (req.destroyed || req.socket === null || req.socket.readableEnded || req.socket.destroyed)
  );
}

/**
 * The connections every egress proxy of this process holds together: under `run --listen` each
 * session has a proxy of its own, and capped each on its own, the servers of several sessions
 * flooding theirs at once ran the gateway out of descriptors (a new session's proxy could not
 * listen, a request could dial no upstream). An eighth of the descriptor limit in connections,
 * each counted as two for the upstream it may dial, so a quarter of the descriptors
 * (src/transport/httpConnections.ts): beside a front's half, a quarter is left to the process's
 * own (its servers' pipes, the store, the keyring). Made at the first proxy's start, when the
 * limit is read.
 */
let sharedCap: SharedConnectionCap | null = null;
function egressConnections(): SharedConnectionCap {
  sharedCap ??= new SharedConnectionCap(connectionCap(undefined, 2, 1 / 4), "egress");
  return sharedCap;
}

export async function startEgressProxy(o: EgressProxyOptions): Promise<EgressProxy> {
  const timeoutMs = o.timeoutMs ?? 30_000;
  // how absolute form writes an interim answer, found at start: said when there is none (interim.ts)
  const noInterim = interimWarning();
  if (noInterim !== null) o.log.warn(noInterim);
  const ca = o.extraCa ? [...rootCertificates, o.extraCa] : undefined;
  const agents = {
    http: new http.Agent({ keepAlive: true }),
    // verified whatever the environment says (NODE_TLS_REJECT_UNAUTHORIZED=0 turns off only node's default)
    https: new https.Agent({ keepAlive: true, rejectUnauthorized: true, ...(ca ? { ca } : {}) }),
  };
  // Node keys its pool of TLS connections by every TLS option, the ~150 root certificates of `ca`
  // included, joined into one string per request; one agent with one set of options needs only
  // the destination.
  (agents.https as unknown as { getName: (o: https.RequestOptions) => string }).getName = (opts) =>
    `${opts.host}:${opts.port}:${opts.servername ?? ""}`;
  // an answer written before the upstream reset a connection whose request body it left unread
  // is read and given on, not lost with the write that met the reset (refusedWrites.ts): where a
  // feature test proves the way works on this Node, said when it does not. The test (a loopback
  // connection, 5 to 60 ms) runs while the server starts, not before; every connection to an
  // upstream that would be made before it ends waits for it: an absolute-form request's (forward),
  // a tunnel's the proxy reads (the pool's, upstreams.ts) and one's passed through untouched
  // (afterPastRefusalsFound). Made before, it was as Node makes it for its whole life, the test's
  // answer notwithstanding, and whether an answer written before a reset reached the client
  // depended on how loaded the machine was (at load 20 the first upload's 413 came back a 502).
  const pastRefusals: RefusedWriting = { works: false, tls: false };
  let pastRefusalsKnown = false;
  // (the test answers, never throws)
  const pastRefusalsTested = refusedWriting().then((proven) => {
    Object.assign(pastRefusals, proven);
    pastRefusalsKnown = true;
    return pastRefusals;
  });
  void pastRefusalsTested
    .then(async () => {
      const noPastRefusals = await refusedWritingWarning();
      if (noPastRefusals !== null) o.log.warn(noPastRefusals);
    })
    .catch(() => {}); // (a warning that cannot be written is lost)
  readPastRefusedWrites(agents.http, () => pastRefusals.works);
  readPastRefusedWrites(agents.https, () => pastRefusals.tls);
  const leaves = new Map<string, { ctx: SecureContext; until: number }>();
  const holder = new HolderClient(o.stateDir);
  const pool = upstreams(o.extraCa, () => pastRefusalsTested);
  const open = new Set<Duplex>();
  /**
   * For each request read and not yet recorded (its answer still coming, or none yet), what
   * records it at once: close() calls them before it cuts the connections, so a shutdown loses
   * no record (the gateway's recorder writes its last when the proxy is closed)
   */
  const unfinished = new Set<() => void>();

  const record = (
    r: Omit<EgressRecord, "released" | "withheld" | "call" | "epoch"> & Partial<EgressRecord>,
  ) => {
    try {
      o.onRecord({
        released: [],
        withheld: [],
        call: null,
        ...r,
        // A request read by the proxy is recorded when its answer comes, under the epoch it was
        // begun in. One begun while no epoch was live takes the epoch live now: the recorder
        // holds a request of no epoch for the epoch that starts next, and when the answer came
        // after that epoch started, it waited for the one after it (or was recorded under none),
        // and the new code's review missed the host.
        epoch: r.epoch ?? o.calls().epoch,
      });
    } catch (e) {
      // the host is the server's choice, and may be named after a released value
      const host = o.shownHost ? o.shownHost(r.host) : r.host;
      o.log.warn(`egress: cannot record ${host}:${r.port}: ${(e as Error).message}`);
    }
  };

  const substitute = releaser({ ...o, holder });

  /** One request read by the proxy (absolute-form, or inside a tunnel), sent on to `dest`. */
  const forward = async (
    req: IncomingMessage,
    res: ServerResponse,
    dest: Destination,
    scheme: "http" | "https",
    path: string,
  ): Promise<void> => {
    // the upstream connection is made as the feature test found (above)
    if (!pastRefusalsKnown) await pastRefusalsTested;
    const names: string[] = [];
    const values: string[] = [];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const name = req.rawHeaders[i]!;
      if (HOP.has(name.toLowerCase())) continue;
      names.push(name);
      values.push(req.rawHeaders[i + 1]!);
    }
    const parts = { url: path, headers: values, values: new Map<string, string>() };
    const isDeclared = o.credentials.some((c) => hostMatches(c.hosts, dest));
    const s = isDeclared
      ? await substitute(dest, parts)
      : { released: [], withheld: [], call: null, epoch: o.calls().epoch };
    // a name's trailing dot dropped from the Host, as the proxy matched and dials it (hosts.ts)
    const headers: [string, string][] = names.map((n, i) => [
      n,
      n.toLowerCase() === "host" ? withoutTrailingDot(parts.headers[i]!) : parts.headers[i]!,
    ]);
    // every answer while a value is released for a call in flight, from any host (a declared one
    // or not: another host of the service may hold the key too), as an answer may echo them
    // (release.ts, echoes), is read to take the values out: asked for uncompressed (rewrite.ts)
    const spellings = substitute.echoes() ?? (parts.values.size > 0 ? spellingsOf(parts.values) : null);
    const sent = spellings
      ? [
          ...headers.filter(([n]) => n.toLowerCase() !== "accept-encoding"),
          ["Accept-Encoding", IDENTITY_ONLY] as [string, string],
        ]
      : headers;
    const base = { host: dest.host, port: dest.port, method: req.method ?? "GET", scheme, ...s };
    // The client's FIN came while the request was prepared (the release rule asked the holder),
    // its body short of its framing: it can never be finished, and nothing of it is sent (Node's
    // server answered the FIN with the 400 already: clientError). Before, the request went on to
    // an upstream connection that waited, the head held for a body that could not come, until the
    // timeout, the request unrecorded until then.
    if (cutShort(req)) {
      record({ ...base, outcome: "failed" });
      return;
    }
    // the upstream picks the site from the Host header, not from the connection: a value goes
    // only with a request whose Host names the destination (hosts.ts, misdirection)
    // under "declared-only", any request: the site it names must be declared (domain fronting)
    const misdirected =
      s.released.length > 0 || o.mode === "declared-only"
        ? misdirection(dest, scheme, path, names, values)
        : null;
    if (misdirected !== null) {
      if (s.released.length > 0) {
        record({ ...base, outcome: "failed" });
        return fail(res, 421, `a request with a released value and ${misdirected}`);
      }
      record({ ...base, outcome: "refused", status: 421 });
      return fail(res, 421, onlyDeclaredMisdirected(misdirected));
    }
    let upstream: http.ClientRequest;
    try {
      upstream = (scheme === "https" ? https : http).request({
        host: dest.host,
        port: dest.port,
        method: req.method,
        path: parts.url,
        headers: sent.flat(),
        agent: scheme === "https" ? agents.https : agents.http,
        // SNI names a host, never an address (RFC 6066)
        ...(scheme === "https" && isIP(dest.host) === 0 ? { servername: dest.host } : {}),
        timeout: timeoutMs,
      });
    } catch (e) {
      record({ ...base, outcome: "failed" });
      return fail(res, 400, `the request could not be sent on: ${(e as Error).message}`);
    }
    /** the request's one record, from here on: its answer's end or its failure, whichever comes */
    let recorded = false;
    const once = (r: Parameters<typeof record>[0]) => {
      if (recorded) return;
      recorded = true;
      unfinished.delete(abandoned);
      record(r);
    };
    let answered: number | null = null;
    // cut by the proxy's close: forwarded as far as it went, or failed if no answer came
    const abandoned = () =>
      once(
        answered === null
          ? { ...base, outcome: "failed" }
          : { ...base, outcome: "forwarded", status: answered },
      );
    unfinished.add(abandoned);
    upstream.on("timeout", () => upstream.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    upstream.on("error", (e) => {
      // (once the answer came, its body's end records it: cut, as this error cuts it)
      if (answered === null) once({ ...base, outcome: "failed" });
      const timedOut = /no answer within/.test(e.message);
      const midBody = req.complete ? undefined : req;
      fail(res, timedOut ? 504 : 502, `${destinationText(dest)}: ${e.message}`, midBody);
    });
    // an answer's head, interim or final, read as the client will get it (echo.ts)
    const clean = (v: string) =>
      spellings ? headWithoutEchoes(Buffer.from(v, "latin1"), spellings).toString("latin1") : v;
    upstream.on("information", (info) => relayInterim(req, res, info, clean));
    // A 101 the request cannot have asked for (its Upgrade header is a hop's, not sent on): as in
    // a tunnel (exchange.ts), a 502, recorded failed. Unheard, Node's client dropped the upstream
    // connection with no 'response' nor 'error': the client waited for ever, its request unrecorded.
    upstream.on("upgrade", (_up, socket) => {
      socket.destroy();
      once({ ...base, outcome: "failed" });
      fail(res, 502, `${destinationText(dest)}: a protocol switch the request did not ask for`);
    });
    upstream.on("response", (up) => {
      const status = up.statusCode ?? 502;
      answered = status;
      // of an answer to a request that carried a value, every header and the body are read and
      // given on with the value taken out (echo.ts), the body in chunks Node frames for the
      // client; an answer without a body (HEAD, 204, 304) has only its head read
      const bodyless = req.method === "HEAD" || status === 204 || status === 304 || status < 200;
      const raw: string[] = [];
      const codings: string[] = [];
      for (let i = 0; i + 1 < up.rawHeaders.length; i += 2) {
        const n = up.rawHeaders[i]!;
        const lower = n.toLowerCase();
        if (lower === "connection" || lower === "keep-alive") continue;
        // A name that holds a released value (an upstream may build one from the request: a
        // key is a token, as a name is): the header is dropped. Written as read, it gave the key
        // back; its placeholder is no token, and Node would refuse the head (all headers lost).
        if (clean(n) !== n) continue;
        const v = up.rawHeaders[i + 1]!;
        if (spellings && !bodyless) {
          // the body's length changes, and it is given on decoded
          if (lower === "content-length" || lower === "transfer-encoding") continue;
          if (lower === "content-encoding") {
            for (const c of v.split(",")) if (c.trim() !== "") codings.push(c.trim().toLowerCase());
            continue;
          }
        }
        raw.push(n, clean(v));
      }
      const decoded = spellings && !bodyless ? decoding(codings) : { decoder: null };
      if ("refused" in decoded) {
        up.destroy();
        once({ ...base, outcome: "failed" });
        return fail(res, 502, `${destinationText(dest)}: ${decoded.refused}`);
      }
      // (a body given on undecoded keeps naming its coding: identity)
      if (spellings && !bodyless && decoded.decoder === null)
        for (const c of codings) raw.push("Content-Encoding", c);
      const rewritten = spellings !== null && !bodyless;
      try {
        res.writeHead(status, up.statusMessage ? clean(up.statusMessage) : undefined, raw);
      } catch {
        res.writeHead(status);
      }
      // recorded once the body ends, passed through or rewritten: any failure first (the
      // upstream's, the decoder's) ends the answer unfinished, and it is recorded as failed (what
      // a scrubber kept never given on); a client that went away first had the answer forwarded
      // as far as it went. Which came first decides: the pipeline's teardown of the other streams
      // follows, with errors of its own. (Recorded at its head, a passed-through answer the
      // upstream cut partway was `forwarded`, as if the server had got all of it.)
      let first: "cut" | "left" | null = null;
      up.on("aborted", () => (first ??= "cut"));
      up.on("error", () => (first ??= "cut"));
      decoded.decoder?.on("error", () => (first ??= "cut"));
      res.on("close", () => {
        if (!res.writableFinished) first ??= "left";
      });
      const done = (e: Error | null | undefined) => {
        once({ ...base, outcome: e && first === "cut" ? "failed" : "forwarded", status });
        if (e) res.destroy();
        // answered before the request's body was whole (a 413, a 401): the rest is not sent on,
        // and the upstream's connection, holding part of a request, is not kept; the rest is read
        // and dropped, as Node's server does with a body nobody reads, so that the client's writes
        // do not block and the connection serves its next request. Before, the body went on being
        // piped into a request that was over: the client's writes blocked and its connection hung.
        if (!req.complete) {
          req.unpipe(upstream);
          upstream.destroy();
          req.resume();
        }
      };
      if (!rewritten) {
        pipeline(up, res, done);
        return;
      }
      const scrubber = new EchoScrubber(spellings);
      const scrub = new Transform({
        transform: (chunk: Buffer, _enc, cb) => cb(null, scrubber.push(chunk)),
        flush: (cb) => cb(null, scrubber.end()),
      });
      if (decoded.decoder) pipeline(up, decoded.decoder, scrub, res, done);
      else pipeline(up, scrub, res, done);
    });
    req.pipe(upstream);
    req.on("error", () => upstream.destroy());
  };

  /** A request handled asynchronously: an unexpected error answers 502, never reaches the gateway. */
  const safely = (res: ServerResponse, p: Promise<void>) =>
    void p.catch((e: unknown) =>
      fail(res, 502, `the proxy could not handle this request: ${(e as Error)?.message ?? e}`),
    );

  /**
   * An error answer. `midBody`: the client is still sending the request's body (the upstream
   * failed meanwhile): the rest is read and dropped, as Node's server does with a body nobody
   * reads, and the connection kept, its framing intact. Closed instead, the connection was reset
   * under the client's next write, which often lost the answer with it (RFC 9112 §9.6).
   */
  const fail = (res: ServerResponse, status: number, why: string, midBody?: IncomingMessage) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    if (midBody) {
      midBody.unpipe();
      midBody.resume();
    }
    const body = `portcullis egress: ${why}\n`;
    try {
      res.writeHead(status, {
        "content-type": "text/plain; charset=utf-8",
        "content-length": Buffer.byteLength(body),
        ...(midBody ? {} : { connection: "close" }),
      });
      res.end(body);
    } catch {
      res.destroy();
    }
  };

  /** Requests read inside a tunnel to a declared host (plain HTTP, or TLS terminated here). */
  const readTunnel = (stream: Duplex, dest: Destination, scheme: "http" | "https") =>
    serveTunnel(stream, {
      dest,
      scheme,
      timeoutMs,
      upstreams: pool,
      onlyDeclared: o.mode === "declared-only",
      release: substitute,
      echoes: substitute.echoes,
      record: (r) => record({ host: dest.host, port: dest.port, ...r }),
      unfinished,
    });

  const clientError = (err: Error, socket: Duplex) => {
    if (!socket.writable) return socket.destroy();
    const code = (err as { code?: string }).code;
    // the same answer as a head too large inside a tunnel (exchange.ts)
    if (code === "HPE_HEADER_OVERFLOW")
      return refuseRaw(
        socket,
        431,
        "Request Header Fields Too Large",
        `a request head over ${MAX_HEAD_BYTES} bytes`,
      );
    // a FIN amid a request (Node's parser at the end of its input), worded as in a tunnel
    if (code === "HPE_INVALID_EOF_STATE") return refuseRaw(socket, 400, "Bad Request", CLOSED_MID_REQUEST);
    refuseRaw(socket, 400, "Bad Request", `not a well-formed HTTP/1.1 request (${code ?? err.message})`);
  };

  const leafContext = async (host: string): Promise<SecureContext | null> => {
    const cached = leaves.get(host);
    if (cached && cached.until > Date.now()) return cached.ctx;
    const r = await holder.ask({ op: "leaf", host });
    if (r?.ok !== true || typeof r.cert !== "string" || typeof r.key !== "string") return null;
    const ctx = createSecureContext({ cert: r.cert, key: r.key });
    const until = typeof r.notAfter === "string" ? Date.parse(r.notAfter) - 3600_000 : Date.now() + 3600_000;
    leaves.set(host, { ctx, until });
    return ctx;
  };

  const refuseRaw = (socket: Duplex, status: number, text: string, why: string) =>
    socket.end(errorResponse(status, text, why));

  /**
   * Whether a connection the proxy made reached the proxy itself. Judged by the address it
   * connected to, after the name was resolved, not by how the destination was written: every
   * spelling of this machine (`localhost`, `127.1`, `2130706433`, `0.0.0.0`, `[::ffff:127.0.0.1]`,
   * the machine's own name, a DNS name that resolves to 127.0.0.1 now and elsewhere a second
   * later) ends at one address. A tunnel to itself would let a server nest CONNECT in CONNECT
   * through one socket of its own, each level two more sockets of the gateway's, without end.
   */
  let listening = 0;
  const reachedItself = (up: Socket) =>
    up.remotePort === listening && (up.remoteAddress ?? "").replace(/^::ffff:/i, "") === PROXY_ADDRESS;

  /**
   * `dial` once the feature test has ended (at once after it), so that the tunnel's connection to
   * its upstream is made as the test found (above); not at all if the client's connection closed
   * meanwhile (the client's bytes wait in its socket, unread: Node's server hands over a CONNECT's
   * socket paused).
   */
  const afterPastRefusalsFound = (socket: Duplex, dial: () => void) => {
    if (pastRefusalsKnown) return dial();
    void pastRefusalsTested.then(() => {
      if (!socket.destroyed) dial();
    });
  };

  const tunnelUntouched = (socket: Duplex, head: Buffer, dest: Destination) =>
    afterPastRefusalsFound(socket, () => dialUntouched(socket, head, dest));
  const dialUntouched = (socket: Duplex, head: Buffer, dest: Destination) => {
    const up = netConnect({ host: dest.host, port: dest.port });
    // an answer written before the upstream reset the connection under the client's bytes is
    // given on, then the tunnel's end (refusedWrites.ts)
    if (pastRefusals.works) readOnPastRefusal(up);
    let connected = false;
    up.setTimeout(timeoutMs, () => {
      if (!connected) up.destroy(new Error(`no connection within ${timeoutMs} ms`));
    });
    up.once("connect", () => {
      if (reachedItself(up)) {
        up.destroy();
        record({ ...selfRefused(dest), method: "CONNECT", scheme: "tunnel" });
        refuseRaw(socket, LOOP_DETECTED, "Loop Detected", `${destinationText(dest)}: ${ITSELF}`);
        return;
      }
      connected = true;
      up.setTimeout(0);
      record({ host: dest.host, port: dest.port, method: "CONNECT", scheme: "tunnel", outcome: "tunnelled" });
      socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
      if (head.length) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
    });
    up.on("error", (e) => {
      if (!connected) {
        record({ host: dest.host, port: dest.port, method: "CONNECT", scheme: "tunnel", outcome: "failed" });
        refuseRaw(
          socket,
          /within/.test(e.message) ? 504 : 502,
          "Bad Gateway",
          `${destinationText(dest)}: ${e.message}`,
        );
      } else socket.destroy();
    });
    socket.on("error", () => up.destroy());
    socket.on("close", () => up.destroy());
  };

  /** A tunnel to a declared host: read what comes through it (TLS terminated with the holder's leaf). */
  const tunnelRead = (socket: Socket, head: Buffer, dest: Destination) => {
    socket.setNoDelay(true);
    socket.write("HTTP/1.1 200 Connection Established\r\n\r\n");
    const dispatch = async (first: Buffer) => {
      socket.pause();
      socket.unshift(first);
      if (first[0] !== 0x16) {
        // Port 443 is HTTPS's: a server that speaks plain HTTP there through the tunnel would have
        // the credential sent over the network in clear (and refused by the host anyway)
        if (dest.port === HTTPS_PORT) {
          socket.end(errorResponse(400, "Bad Request", PLAIN_TO_HTTPS_PORT));
          return;
        }
        // plain HTTP inside the tunnel (undici tunnels http:// too)
        readTunnel(socket, dest, "http");
        socket.resume();
        return;
      }
      const ctx = await leafContext(dest.host).catch(() => null);
      if (!ctx) {
        // A value released earlier in a call still in flight (the vault locked since, as `lock`
        // stops new releases, not the call): the answers from here could carry it back, and
        // unread they cannot be scrubbed (release.ts, echoes). Closed, nothing sent or given.
        if (substitute.echoes() !== null) {
          record({
            host: dest.host,
            port: dest.port,
            method: "CONNECT",
            scheme: "tunnel",
            outcome: "refused",
          });
          socket.destroy();
          return;
        }
        // no CA or a locked vault: nothing could be released anyway; pass the bytes through
        tunnelUntouchedAfter(socket, dest);
        return;
      }
      const tls = new TLSSocket(socket, { isServer: true, secureContext: ctx });
      tls.on("error", () => socket.destroy());
      readTunnel(tls, dest, "https");
    };
    // whatever goes wrong in there closes this tunnel, never the gateway
    const run = (first: Buffer) => dispatch(first).catch(() => socket.destroy());
    if (head.length > 0) void run(head);
    else {
      // a client that half-closes before its first byte will send nothing: the tunnel is ended
      // (before, it was left open for ever, waiting for a byte that could not come)
      const endedEmpty = () => socket.end();
      socket.once("end", endedEmpty);
      socket.once("data", (chunk: Buffer) => {
        socket.off("end", endedEmpty);
        void run(chunk);
      });
    }
  };

  /** The 200 has been sent and bytes are buffered: connect and pass everything through. */
  const tunnelUntouchedAfter = (socket: Socket, dest: Destination) =>
    afterPastRefusalsFound(socket, () => dialUntouchedAfter(socket, dest));
  const dialUntouchedAfter = (socket: Socket, dest: Destination) => {
    const up = netConnect({ host: dest.host, port: dest.port });
    if (pastRefusals.works) readOnPastRefusal(up);
    up.setTimeout(timeoutMs, () => up.destroy());
    up.once("connect", () => {
      // (the 200 is sent: the tunnel is closed, not answered)
      if (reachedItself(up)) {
        up.destroy();
        record({ ...selfRefused(dest), method: "CONNECT", scheme: "tunnel" });
        socket.destroy();
        return;
      }
      up.setTimeout(0);
      record({ host: dest.host, port: dest.port, method: "CONNECT", scheme: "tunnel", outcome: "tunnelled" });
      up.pipe(socket);
      socket.pipe(up);
      socket.resume();
    });
    up.on("error", () => {
      record({ host: dest.host, port: dest.port, method: "CONNECT", scheme: "tunnel", outcome: "failed" });
      socket.destroy();
    });
    socket.on("close", () => up.destroy());
  };

  // the same bound on a request head as inside a tunnel (exchange.ts), not node's 16 KiB
  const server: Server = createServer({ maxHeaderSize: MAX_HEAD_BYTES }, (req, res) => {
    // absolute-form: GET http://host:port/path HTTP/1.1
    let url: URL;
    try {
      url = new URL(req.url ?? "");
    } catch {
      return fail(res, 400, `not an absolute http:// URL: ${JSON.stringify((req.url ?? "").slice(0, 200))}`);
    }
    // http://, and https:// too: some clients (axios) send it absolute-form instead of CONNECT;
    // the proxy then speaks TLS to the upstream itself, verifying it as for a tunnel
    if (url.protocol !== "http:" && url.protocol !== "https:")
      return fail(res, 400, `only http:// and https:// URLs are proxied, not ${url.protocol}`);
    // as in a tunnel (exchange.ts): not carried, refused before anything is released or sent
    if (upgradesToWebSocket(req.headers.upgrade)) return fail(res, 501, WEBSOCKET_REFUSED);
    const scheme = url.protocol === "https:" ? "https" : "http";
    const dest = parseAuthority(`${url.hostname}:${url.port || (scheme === "https" ? "443" : "80")}`);
    if (!dest) return fail(res, 400, `not a host name or address: ${JSON.stringify(url.host.slice(0, 200))}`);
    const declared = o.credentials.some((c) => hostMatches(c.hosts, dest));
    // to a declared host, where a credential may be released (the tunnel's reader refuses the same)
    if (declared && scheme === "http" && dest.port === HTTPS_PORT) return fail(res, 400, PLAIN_TO_HTTPS_PORT);
    if (o.mode === "declared-only" && !declared) {
      record({
        host: dest.host,
        port: dest.port,
        method: req.method ?? "GET",
        scheme,
        outcome: "refused",
        status: 403,
      });
      return fail(res, 403, `${destinationText(dest)} is not a declared host (egress "declared-only")`);
    }
    safely(res, forward(req, res, dest, scheme, `${url.pathname}${url.search}`));
  });
  // A client's FIN after a whole request is a half-close, not an abort (RFC 9112 §9.6): its answer
  // is still given on, and the connection ended after it (as in a tunnel, exchange.ts). Node's
  // server by default takes the FIN for an abort: it ended the connection at once, unanswered, and
  // the request went on to the upstream and was cut there (recorded failed). This switch (Node's
  // own, on its server since 0.x: `httpAllowHalfOpen`) marks the answer under way the last.
  (server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true;
  server.on("clientError", (err, socket) => clientError(err, socket));
  server.on("connect", (req: IncomingMessage, socket: Socket, head: Buffer) => {
    open.add(socket);
    socket.on("close", () => open.delete(socket));
    socket.on("error", () => socket.destroy());
    const dest = parseAuthority(req.url ?? "");
    if (!dest)
      return refuseRaw(
        socket,
        400,
        "Bad Request",
        `CONNECT needs host:port with a host name or address and a port 1-65535, not ${JSON.stringify((req.url ?? "").slice(0, 200))}`,
      );
    const readable = o.credentials.some((c) => hostMatches(c.hosts, dest));
    if (readable) return tunnelRead(socket, head, dest);
    if (o.mode === "declared-only") {
      record({
        host: dest.host,
        port: dest.port,
        method: "CONNECT",
        scheme: "tunnel",
        outcome: "refused",
        status: 403,
      });
      return refuseRaw(
        socket,
        403,
        "Forbidden",
        `${destinationText(dest)} is not a declared host (egress "declared-only")`,
      );
    }
    tunnelUntouched(socket, head, dest);
  });
  const refusals = new SparingWarnings((line) => o.log.warn(line));
  server.on("connection", (s: Socket) => {
    // Connections are descriptors, held before a byte is read: capped, with every other egress
    // proxy of this process (egressConnections), before anything is read for this one (the
    // kernel's table, below, is a file opened), so that servers opening them without end cannot
    // run their gateway out of descriptors. One past the cap is closed here, unread.
    if (!egressConnections().admit(s, (line) => o.log.warn(line))) return;
    // Loopback is this machine, not this user: any local user's process can connect to
    // 127.0.0.1:PORT, and one of another user's that named a declared host with the placeholder
    // while a call runs would have the user's credential sent with its request, the answer its
    // own. The server the proxy is for runs as the user; a connection whose other end the kernel
    // does not list as a live socket of the user is closed before a byte of it is read (Linux:
    // identity/otherUser.ts): another user's, or one whose process wrote its request and closed
    // before the proxy accepted it (no owner is listed then, and its request would be acted on).
    const other = acceptedFromOther(s);
    if (other !== null) {
      // (another user's process may connect in a loop: its lines are thinned, not its refusals)
      refusals.say(
        "uid" in other ? `uid ${other.uid}` : "unlisted",
        "uid" in other
          ? `egress: closed a connection from another user's process (uid ${other.uid}): the proxy is for this gateway's server only`
          : "egress: closed a connection whose process the kernel does not list as this user's (it closed already, or /proc/net/tcp cannot be read): the proxy is for this gateway's server only",
      );
      s.destroy();
      return;
    }
    open.add(s);
    s.on("close", () => open.delete(s));
  });

  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, PROXY_ADDRESS, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const port = (server.address() as { port: number }).port;
  listening = port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const abandon of [...unfinished]) abandon();
        for (const s of open) s.destroy();
        agents.http.destroy();
        agents.https.destroy();
        pool.close();
        substitute.close();
        holder.close();
        server.close(() => resolve());
      }),
  };
}
