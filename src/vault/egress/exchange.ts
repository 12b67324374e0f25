import type { Duplex } from "node:stream";
import { headWithoutEchoes, type Spelling, spellingsOf, withoutValues } from "./echo.js";
import {
  type Destination,
  destinationText,
  misdirection,
  targetWithoutTrailingDot,
  withoutTrailingDot,
} from "./hosts.js";
import {
  BodyMeter,
  badHeaderValue,
  closes,
  type Framing,
  HttpError,
  headEnd,
  MAX_HEAD_BYTES,
  parseRequestHead,
  parseResponseHead,
  type RequestHead,
  requestFraming,
  responseFraming,
} from "./http1.js";
import type { Released } from "./release.js";
import { coded, IDENTITY_ONLY, planRewrite, RewrittenBody, withLength } from "./rewrite.js";
import type { Upstream, Upstreams } from "./upstreams.js";

/**
 * The data path inside a tunnel to a declared host (the bytes already decrypted when it is
 * HTTPS): requests are read one at a time, and of each only the head is parsed, since the
 * placeholders live in the target and the header values. The head is rewritten (placeholders
 * replaced where the release rule allows, hop-by-hop headers dropped) and written to a kept-alive
 * connection of the proxy's own to the upstream, in one write with whatever body came with it;
 * the rest of the body and the response's bytes pass through untouched, measured only to know
 * where each message ends. Of the response, only the status line and the framing are read (for
 * the record and to know when the connection is free again), except in the answer to a request
 * that carried a released value: there every echo of the value is taken out of the head and the
 * body, which is then given on whole with its length written again (when it all came with its
 * head, uncoded) or in chunks of the proxy's own (echo.ts, rewrite.ts).
 */

/** Request headers that concern the hop to the proxy, never forwarded upstream. */
export const HOP = new Set([
  "proxy-connection",
  "proxy-authorization",
  "connection",
  "keep-alive",
  "te",
  "upgrade",
]);

const EMPTY = Buffer.alloc(0);

/**
 * Whether a request asks to become a WebSocket (`Upgrade: websocket`, any case, in a list). Other
 * upgrades (`h2c`) are dropped with the header, as HTTP lets a server ignore them: the client
 * goes on in HTTP/1.1.
 */
function asksWebSocket(head: RequestHead): boolean {
  for (let i = 0; i < head.names.length; i++)
    if (head.names[i]!.toLowerCase() === "upgrade" && upgradesToWebSocket(head.values[i])) return true;
  return false;
}

/** Whether an Upgrade header's value names the WebSocket protocol (`websocket`, any case, in a list). */
export function upgradesToWebSocket(value: string | undefined): boolean {
  return value?.split(",").some((t) => t.trim().toLowerCase().startsWith("websocket")) ?? false;
}

export const WEBSOCKET_REFUSED =
  "a WebSocket upgrade: the egress proxy carries HTTP/1.1 requests to a declared host, not WebSockets; nothing was sent";
/** Methods a request of which may be sent twice (RFC 9110 §9.2.2). */
const IDEMPOTENT = new Set(["GET", "HEAD", "OPTIONS", "TRACE", "PUT", "DELETE"]);

export interface ExchangeOptions {
  dest: Destination;
  scheme: "http" | "https";
  timeoutMs: number;
  upstreams: Upstreams;
  /**
   * `egress: "declared-only"`: every request must name the destination wherever it names a host,
   * a value in it or not (misdirected below)
   */
  onlyDeclared?: boolean;
  release(
    dest: Destination,
    parts: { url: string; headers: string[]; values?: Map<string, string> },
  ): Promise<Released>;
  /**
   * The spellings of the values released for calls still in flight, to any host (release.ts,
   * echoes), or null: every answer is scrubbed of them, whatever its request carried
   */
  echoes?(): Spelling[] | null;
  record(r: {
    method: string;
    scheme: "http" | "https";
    outcome: "forwarded" | "failed" | "refused";
    status?: number;
    released: string[];
    withheld: string[];
    call: string | null;
    callKey?: number;
    epoch: string | null;
  }): void;
  /**
   * Where a tunnel keeps, while it is open, what records its request in flight at once (as
   * abandoned): the proxy calls them all as it closes, before the gateway's recorder writes its
   * last, so that no request is left unrecorded by a shutdown that cuts it
   */
  unfinished?: Set<() => void>;
}

/**
 * Under `egress: "declared-only"`, a request to a declared host that names another site: the
 * upstream picks the site from the request (a CDN, a PaaS router fronting many), so it would
 * reach a host nobody declared (domain fronting), recorded under the declared one.
 */
export const onlyDeclaredMisdirected = (why: string) =>
  `egress "declared-only" and ${why}: the site it names is not a declared host, nothing was sent`;

/** A client's FIN before its request was whole (a head or a body short of its framing). */
export const CLOSED_MID_REQUEST =
  "the client closed its sending side before its request was whole; the request was not completed";

/** An error answer to the client, then the tunnel is closed. */
export function errorResponse(status: number, text: string, why: string): string {
  const body = `portcullis egress: ${why}\n`;
  return `HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
}

/**
 * Whether a request's body is whole with the bytes that came with its head and those after it
 * (a malformed body is not: it is refused)
 */
function wholeWith(framing: Framing, rest: Buffer, after: Buffer): boolean {
  const meter = new BodyMeter(framing);
  try {
    meter.take(rest, 0);
    if (!meter.done) meter.take(after, 0);
  } catch {
    return false;
  }
  return meter.done;
}

/** Serves the requests that come through one tunnel, until either side closes it. */
export function serveTunnel(client: Duplex, o: ExchangeOptions): void {
  /** bytes from the client not yet sent on: the next request's head, or one sent early */
  let buffered: Buffer = EMPTY;
  /** "head": reading a request head; "busy": preparing one; "body": sending its body; "wait": its answer */
  let phase: "head" | "body" | "busy" | "wait" = "head";
  let meter: BodyMeter | null = null;
  let upstream: Upstream | null = null;
  /**
   * The request being prepared ("busy": the release rule, a connection to the upstream), nothing
   * of it sent yet: its framing and the body bytes that came with its head (what came after them
   * is in `buffered`), and whether the client's FIN cut it short meanwhile
   */
  let preparing: { framing: Framing; rest: Buffer; cut: boolean } | null = null;
  /**
   * The request written to the upstream and not yet recorded (its answer not come): recorded as
   * failed when the tunnel closes first. A server that reset its tunnel the moment its request
   * went out (a value in it or not) left no record of it: the kept connection was discarded, and
   * with it the only handler that would have recorded the request.
   */
  let unrecorded: (() => void) | null = null;
  let closed = false;
  // the client is paused only when something must wait: a full upstream, or requests piling up
  let paused = false;
  const pause = () => {
    if (paused) return;
    paused = true;
    client.pause();
  };
  const resume = () => {
    if (!paused) return;
    paused = false;
    client.resume();
  };

  const recordNow = () => unrecorded?.();
  o.unfinished?.add(recordNow);
  const finish = (how: "end" | "destroy") => {
    if (closed) return;
    closed = true;
    o.unfinished?.delete(recordNow);
    unrecorded?.();
    upstream?.discard();
    if (how === "end") {
      client.end();
      drain();
    } else client.destroy();
  };
  /**
   * The proxy ended its side: what the client still sends (the rest of a body the upstream
   * answered before it was whole) is read and dropped until its FIN, as RFC 9112 §9.6 has a
   * server close in stages. Before, a client paused for the upstream's connection (gone now)
   * stayed paused: its writes blocked, the tunnel held open until it gave up.
   */
  const drain = () => {
    paused = false;
    client.resume();
  };
  client.on("error", () => finish("destroy"));
  client.on("close", () => finish("destroy"));
  /**
   * The client sent its FIN: nothing more will come from it, but it may still read (a half-close,
   * which curl and a client that calls `end()` after its request make, is no abort: RFC 9112
   * §9.6). A request it sent whole is answered, the answer given on, and the tunnel ended after
   * the last; with no request under way it is ended at once. (Before, only a full close or an
   * error ended a tunnel: a half-closed one that had asked to keep the connection stayed open for
   * ever, answered or not.) The FIN is not passed on to the upstream: the proxy's connection to it
   * is its own, and many servers (Node's among them) take a FIN for an abort and drop the answer.
   */
  let ended = false;
  /** the current request's answer has begun to be given on */
  let answering = false;
  const whenEnded = () => {
    if (closed) return;
    if (phase === "head") {
      // idle: ended; a head begun can never be whole now, as Node's server answers in absolute form
      if (buffered.length === 0) return finish("end");
      return refuse(400, "Bad Request", CLOSED_MID_REQUEST);
    }
    // A request being prepared that the FIN leaves short of its framing is refused now and never
    // sent: nothing of it has gone, and it cannot be finished. (Before, its head, the released
    // value in it, and the body so far went to the upstream once prepared, and were cut there.)
    // One the bytes the proxy holds make whole is sent and answered (exchange).
    if (phase === "busy") {
      if (preparing && !wholeWith(preparing.framing, preparing.rest, buffered)) {
        preparing.cut = true;
        refuse(400, "Bad Request", CLOSED_MID_REQUEST);
      }
      return;
    }
    // a body that can never be whole: cut, the upstream's connection (holding part of it) dropped,
    // unless its answer came early and is being given on (it ends the tunnel when it is whole)
    if (phase === "body" && !answering) refuse(400, "Bad Request", CLOSED_MID_REQUEST);
    // "wait": the request is answered
  };
  client.on("end", () => {
    ended = true;
    whenEnded();
  });

  const refuse = (status: number, text: string, why: string) => {
    if (closed) return;
    closed = true;
    o.unfinished?.delete(recordNow);
    unrecorded?.();
    upstream?.discard();
    client.end(errorResponse(status, text, why));
    drain();
  };

  const sendBody = (d: Buffer): void => {
    const n = meter!.take(d, 0);
    let full = false;
    if (n > 0 && upstream && !upstream.socket.write(n === d.length ? d : d.subarray(0, n))) {
      full = true;
      pause();
      upstream.socket.once("drain", resume);
    }
    if (meter!.done) phase = "wait";
    if (n < d.length) {
      // the next request, sent before this one's answer: kept until then
      buffered = Buffer.concat([buffered, d.subarray(n)]);
      pause();
    } else if (!full && !meter!.done) {
      // the rest of the body may come: the client flows. (A body that came with its head while
      // the request was prepared was kept, the client paused past a head's worth of it, and
      // nothing resumed it once the kept part was sent: a body over 64 KiB sent in one go
      // stalled, and the upstream, waiting for the rest, timed out: a 504.)
      resume();
    }
  };

  client.on("data", (d: Buffer) => {
    if (closed) return;
    if (phase === "body") {
      try {
        sendBody(d);
      } catch (e) {
        refuse(400, "Bad Request", `a malformed request body (${(e as Error).message})`);
      }
      return;
    }
    buffered = buffered.length === 0 ? d : Buffer.concat([buffered, d]);
    if (phase === "head") nextRequest();
    else if (buffered.length > MAX_HEAD_BYTES) pause();
  });

  const nextRequest = (): void => {
    // empty lines before a request line are ignored (RFC 9112 §2.2), as Node's server does in
    // absolute form: some clients end a body with an extra CRLF. Before, the next request was
    // refused as malformed, and a FIN after such a line was taken for a request cut short.
    let skip = 0;
    while (buffered[skip] === 0x0d && buffered[skip + 1] === 0x0a) skip += 2;
    if (skip > 0) buffered = buffered.subarray(skip);
    const end = headEnd(buffered);
    if (end < 0) {
      if (buffered.length > MAX_HEAD_BYTES)
        refuse(431, "Request Header Fields Too Large", `a request head over ${MAX_HEAD_BYTES} bytes`);
      return;
    }
    let head: RequestHead;
    let framing: Framing;
    try {
      head = parseRequestHead(buffered.subarray(0, end));
      framing = requestFraming(head);
    } catch (e) {
      if (!(e instanceof HttpError)) throw e;
      refuse(400, "Bad Request", `not a well-formed HTTP/1.1 request (${e.message})`);
      return;
    }
    if (asksWebSocket(head)) {
      // Only HTTP/1.1 is read here: with its Upgrade header dropped (a hop's), the request would
      // reach the host as a plain GET, with whatever the release rule puts in it, for an answer
      // the client cannot use. Refused before anything is released or sent.
      refuse(501, "Not Implemented", WEBSOCKET_REFUSED);
      return;
    }
    const rest = buffered.subarray(end);
    buffered = EMPTY;
    phase = "busy";
    preparing = { framing, rest, cut: false };
    exchange(head, framing, rest).catch((e: unknown) =>
      refuse(502, "Bad Gateway", `the proxy could not handle this request: ${(e as Error)?.message ?? e}`),
    );
  };

  const exchange = async (
    head: RequestHead,
    framing: Framing,
    rest: Buffer,
    retried = false,
  ): Promise<void> => {
    const names: string[] = [];
    const values: string[] = [];
    for (let i = 0; i < head.names.length; i++) {
      if (HOP.has(head.names[i]!.toLowerCase())) continue;
      names.push(head.names[i]!);
      values.push(head.values[i]!);
    }
    const parts = { url: head.target, headers: values, values: new Map<string, string>() };
    const s = await o.release(o.dest, parts);
    const base = { method: head.method, scheme: o.scheme, ...s };
    // the tunnel closed meanwhile: nothing sent; a request the client's FIN cut short is failed
    const cutShort = () => {
      if (preparing?.cut) o.record({ ...base, outcome: "failed" });
    };
    if (closed) return cutShort();
    // a value that would end a header line is never written into one
    if (s.released.length > 0 && parts.headers.some(badHeaderValue)) {
      o.record({ ...base, outcome: "failed" });
      return refuse(
        400,
        "Bad Request",
        "a released value cannot be written into a header (it holds a control character or a character that is not one byte)",
      );
    }
    // the upstream picks the site from the Host header and an absolute target, not from the
    // connection: a value goes only with a request that names the destination (hosts.ts)
    const misdirected =
      s.released.length > 0 || o.onlyDeclared
        ? misdirection(o.dest, o.scheme, head.target, names, values)
        : null;
    if (misdirected !== null) {
      if (s.released.length > 0) {
        o.record({ ...base, outcome: "failed" });
        return refuse(421, "Misdirected Request", `a request with a released value and ${misdirected}`);
      }
      o.record({ ...base, outcome: "refused", status: 421 });
      return refuse(421, "Misdirected Request", onlyDeclaredMisdirected(misdirected));
    }
    // a name's trailing dot dropped where the request names a site, as the proxy matched and dialled it
    let text = `${head.method} ${targetWithoutTrailingDot(parts.url)} HTTP/1.${head.minor}\r\n`;
    // every answer while a value is released for a call in flight, to this host or another (not
    // only to this request: an upstream may give the key back to another, and another host of the
    // service may hold it), as an answer may echo them; none: the answer passes as it came
    const spellings = o.echoes?.() ?? (parts.values.size > 0 ? spellingsOf(parts.values) : null);
    // an answer read to take the values out is asked for uncompressed (rewrite.ts)
    const releasing = spellings !== null;
    for (let i = 0; i < names.length; i++) {
      const name = names[i]!.toLowerCase();
      if (releasing && name === "accept-encoding") continue;
      text += `${names[i]}: ${name === "host" ? withoutTrailingDot(parts.headers[i]!) : parts.headers[i]}\r\n`;
    }
    if (releasing) text += `Accept-Encoding: ${IDENTITY_ONLY}\r\n`;
    text += "\r\n";
    meter = new BodyMeter(framing);
    let first: Buffer;
    try {
      const n = meter.take(rest, 0);
      first =
        n === 0
          ? Buffer.from(text, "latin1")
          : Buffer.concat([Buffer.from(text, "latin1"), rest.subarray(0, n)]);
      // what followed the request: the next one (a retry finds it kept already)
      if (!retried && n < rest.length) buffered = Buffer.concat([rest.subarray(n), buffered]);
    } catch (e) {
      return refuse(400, "Bad Request", `a malformed request body (${(e as Error).message})`);
    }
    let up: Upstream;
    try {
      up = await o.upstreams.acquire(o.dest, o.scheme, o.timeoutMs);
    } catch (e) {
      o.record({ ...base, outcome: "failed" });
      const m = (e as Error).message;
      return refuse(/within/.test(m) ? 504 : 502, "Bad Gateway", `${destinationText(o.dest)}: ${m}`);
    }
    if (closed) {
      cutShort();
      return up.discard();
    }
    preparing = null;
    upstream = up;
    const closeAfter = closes(head);
    const bodyless = framing.kind === "length" && framing.length === 0;

    /** recorded once: answered, failed, or abandoned by a tunnel that closed (`unrecorded`) */
    let recorded = false;
    const recordOnce = (r: Parameters<ExchangeOptions["record"]>[0]) => {
      if (recorded) return;
      recorded = true;
      if (unrecorded === abandoned) unrecorded = null;
      o.record(r);
    };
    /**
     * The status of an answer whose body is being given on, passed through or rewritten: it is
     * recorded when the body is whole (forwarded), or cut by the upstream, its decoding or a
     * timeout (failed), one record either way. (Recorded at its head, an answer the upstream cut
     * partway was `forwarded` as if the server had got all of it.)
     */
    let pending: number | undefined;
    // a tunnel closed by its client while the answer was being given on: forwarded, as far as it went
    const abandoned = () =>
      recordOnce(
        pending === undefined
          ? { ...base, outcome: "failed" }
          : { ...base, outcome: "forwarded", status: pending },
      );
    /** the body being rewritten (an answer to a request that carried a value), while it is */
    let rewritten: RewrittenBody | null = null;
    /** the upstream's body is complete and the rewritten one is being given on */
    let flushing = false;
    let rbuf: Buffer = EMPTY;
    let rmeter: BodyMeter | null = null;
    let rclose = false;
    let answered = false;
    let over = false;
    /** the upstream paused until the client takes what was written to it */
    let upPaused = false;
    const unpauseUp = () => {
      upPaused = false;
      up.socket.resume();
    };
    const done = () => {
      if (pending !== undefined) recordOnce({ ...base, outcome: "forwarded", status: pending });
      over = true;
      rewritten = null;
      upstream = null;
      // a connection paused for a slow client goes back flowing, and no longer waits on it
      if (upPaused) {
        client.off("drain", unpauseUp);
        up.socket.resume();
        upPaused = false;
      }
      if (!rclose && phase === "wait") up.release();
      else up.discard();
      if (closeAfter || rclose || phase !== "wait") return finish("end");
      phase = "head";
      meter = null;
      resume();
      if (buffered.length > 0) nextRequest();
      // the client's FIN came: no request after those it had sent, the tunnel ends
      if (ended && phase === "head") finish("end");
    };
    const toClient = (b: Buffer) => {
      if (closed) return;
      if (b.length > 0 && !client.write(b) && !upPaused) {
        upPaused = true;
        up.socket.pause();
        client.once("drain", unpauseUp);
      }
    };
    const failUp = (e: Error, status: number) => {
      if (over) return;
      over = true;
      // nothing of the answer given yet (a rewritten body whose head waits for its first bytes):
      // it can still be refused with an error the client reads
      const begun = answered && (rewritten === null || rewritten.begun);
      // what the rewritten body kept is dropped: never given on unscrubbed
      rewritten?.stop();
      rewritten = null;
      upstream = null;
      up.discard();
      // an answer cut after its head went on: failed, with the status the client got
      if (begun && pending !== undefined) recordOnce({ ...base, outcome: "failed", status: pending });
      if (!begun) {
        recordOnce({ ...base, outcome: "failed" });
        refuse(
          status,
          status === 504 ? "Gateway Timeout" : "Bad Gateway",
          `${destinationText(o.dest)}: ${e.message}`,
        );
      } else finish("destroy");
    };
    const onHead = (): void => {
      for (;;) {
        const end = headEnd(rbuf);
        if (end < 0) {
          if (rbuf.length > MAX_HEAD_BYTES) throw new HttpError("a response head too long");
          return;
        }
        // no header of an answer carries a released value back, a redirect's Location among them
        // (echo.ts); read as the client will get it
        const asRead = rbuf.subarray(0, end);
        const shown = spellings ? headWithoutEchoes(asRead, spellings) : asRead;
        const h = parseResponseHead(shown);
        if (h.status >= 100 && h.status < 200 && h.status !== 101) {
          // an interim answer (100 Continue, 103 Early Hints): passed on, the final one follows;
          // not to an HTTP/1.0 client, which cannot read one (an upstream may send it anyway)
          if (head.minor >= 1) toClient(shown);
          rbuf = rbuf.subarray(end);
          continue;
        }
        if (h.status === 101) throw new HttpError("a protocol switch the request did not ask for");
        const f = responseFraming(h, head.method);
        const bodied = spellings !== null && !(f.kind === "length" && f.length === 0);
        // the common answer: a length, no content coding, and all of it in this read; scrubbed
        // whole, its length written again only if it changed (rewrite.ts: coded, withLength)
        const whole = bodied && f.kind === "length" && rbuf.length - end >= f.length && !coded(shown);
        const plan = bodied && !whole ? planRewrite(shown, head.minor) : null;
        // (thrown before anything of the answer is given on: recorded as failed, a 502 to the client)
        if (plan && "refused" in plan) throw new HttpError(plan.refused);
        answered = true;
        answering = true;
        // a body can still fail (the upstream, a rewritten one's decoding): recorded once it is whole
        pending = h.status;
        rmeter = new BodyMeter(f);
        rclose = closes(h) || f.kind === "close";
        let n: number;
        if (whole) {
          n = rmeter.take(rbuf, end);
          const body = rbuf.subarray(end, end + n);
          const clean = withoutValues(body, spellings!);
          if (clean === body && shown === asRead)
            toClient(end + n === rbuf.length ? rbuf : rbuf.subarray(0, end + n));
          else toClient(Buffer.concat([clean === body ? shown : withLength(shown, clean.length), clean]));
        } else if (plan) {
          // a client of HTTP/1.0 has its body end with the connection
          if (plan.closes) rclose = true;
          const body = new RewrittenBody(spellings!, plan, toClient, (e) => failUp(e, 502));
          rewritten = body;
          rmeter.onData = (d) => body.write(d);
          n = rmeter.take(rbuf, end);
          // (the head goes with the body's first bytes, or with its end)
          if (!rmeter.done) body.flush();
        } else {
          n = rmeter.take(rbuf, end);
          if (shown === asRead) toClient(end + n === rbuf.length ? rbuf : rbuf.subarray(0, end + n));
          else {
            toClient(shown);
            toClient(rbuf.subarray(end, end + n));
          }
        }
        if (end + n < rbuf.length) rclose = true; // bytes past the answer: not to be trusted again
        rbuf = EMPTY;
        if (rmeter.done) bodyDone();
        return;
      }
    };
    /** the upstream's body is complete: done, once a rewritten body is all given on */
    const bodyDone = () => {
      if (!rewritten) return done();
      flushing = true;
      rewritten.end(() => {
        if (!over) done();
      });
    };
    up.use({
      data: (d) => {
        if (over) return;
        if (flushing) {
          rclose = true; // bytes past the answer: not to be trusted again
          return;
        }
        try {
          if (rmeter) {
            const n = rmeter.take(d, 0);
            if (!rewritten) toClient(n === d.length ? d : d.subarray(0, n));
            else if (!rmeter.done) rewritten.flush();
            if (n < d.length) rclose = true;
            if (rmeter.done) bodyDone();
            return;
          }
          rbuf = rbuf.length === 0 ? d : Buffer.concat([rbuf, d]);
          onHead();
        } catch (e) {
          failUp(e as Error, 502);
        }
      },
      end: () => {
        if (over) return;
        if (flushing) {
          rclose = true; // the answer is whole; the connection is not kept
          return;
        }
        if (rmeter && !rmeter.done && rmeter.untilClose) {
          // a body that ends with the connection: it has
          if (rewritten) {
            rclose = true;
            flushing = true;
            return rewritten.end(() => {
              if (!over) done();
            });
          }
          recordOnce({ ...base, outcome: "forwarded", status: pending! });
          over = true;
          upstream = null;
          up.discard();
          return finish("end");
        }
        if (
          !answered &&
          up.reused &&
          !retried &&
          bodyless &&
          IDEMPOTENT.has(head.method) &&
          rbuf.length === 0
        ) {
          // a kept connection the upstream closed as the request went out: once more on a new
          // one, as HTTP clients do, for a request that may be sent twice
          over = true;
          upstream = null;
          // (the new attempt records the request, from when it is written again)
          recorded = true;
          unrecorded = null;
          up.discard();
          exchange(head, framing, rest, true).catch((err: unknown) =>
            refuse(
              502,
              "Bad Gateway",
              `the proxy could not handle this request: ${(err as Error)?.message ?? err}`,
            ),
          );
          return;
        }
        failUp(new Error("the upstream closed the connection before its answer was complete"), 502);
      },
      error: (e) => {
        // the answer is whole, its rewritten body being given on: the connection is not kept
        if (flushing) rclose = true;
        else failUp(e, 502);
      },
      timeout: () => failUp(new Error(`no answer within ${o.timeoutMs} ms`), 504),
    });
    phase = meter.done ? "wait" : "body";
    answering = false;
    unrecorded = abandoned;
    up.socket.write(first);
    if (phase === "body" && buffered.length > 0) {
      const b = buffered;
      buffered = EMPTY;
      sendBody(b);
    }
    // the client's FIN came while the request was being prepared, its request whole with what the
    // proxy held: the tunnel ends after its answer
    if (ended) whenEnded();
  };
}
