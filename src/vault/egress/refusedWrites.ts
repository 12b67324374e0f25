import type { Agent } from "node:http";
import { createServer, Socket } from "node:net";
import type { Duplex } from "node:stream";
import { TLSSocket } from "node:tls";

/**
 * An upstream may answer a request before it has read all of its body (a 413, a 401 before an
 * upload) and close its connection with the rest unread: its kernel then resets the connection,
 * and the proxy's next write of the body fails (ECONNRESET, EPIPE), while the answer the upstream
 * wrote before it reset waits in the proxy's kernel, unread. Node's socket takes a failed write for
 * the end of the connection and destroys it at once, dropping that answer: in absolute form (Node's
 * client) the client got a 502 for a request the upstream had answered.
 *
 * Here a write the upstream refused ends only the sending side: it is taken as written (the
 * upstream reads none of it, as it chose), and the connection is read on, so what the upstream
 * wrote before its reset is given on; the reset itself then ends the connection as it reaches
 * the reading side (an answer cut there is `failed`, as any, and no answer at all gets the 502).
 * Such a connection is never kept for another request. The same holds for the proxy's own
 * connections inside tunnels: a tunnel to a declared host writes the body to its kept connection
 * as it comes (exchange.ts), and one passed through untouched pipes the client's bytes on
 * (proxy.ts); either met the reset before it read the answer, and gave the client a 502 or a
 * closed tunnel for a request the upstream had answered.
 *
 * This leans on Node's internals: a socket's private `_write`/`_writev`, which Node's Writable
 * calls for each write and whose callback is told of a failed one (net.Socket's, which TLSSocket
 * inherits). So it is kept only if a feature test at the proxy's start proves it works on this
 * Node (`refusedWriting`, below), and the proxy makes no connection to an upstream before the
 * test has ended (proxy.ts): otherwise the connections are left as Node makes them, and an
 * upstream's answer written before such a reset is lost as it was (a 502, recorded `failed`):
 * nothing is sent on that would not be, and nothing waits.
 */
const REFUSED = new Set(["ECONNRESET", "EPIPE"]);
const refused = new WeakSet<Duplex>();

type WriteCallback = (error?: Error | null) => void;
interface Writes {
  _write(chunk: unknown, encoding: BufferEncoding, cb: WriteCallback): void;
  _writev?: ((chunks: unknown[], cb: WriteCallback) => void) | null;
}

/** Whether a write on `socket` was refused by its peer (readOnPastRefusal): never to be kept. */
export function refusedOn(socket: Duplex): boolean {
  return refused.has(socket);
}

/**
 * Makes `socket` read on past a write its peer refused (above): for the agents' connections
 * (readPastRefusedWrites) and the proxy's own, of tunnels (upstreams.ts, proxy.ts), where the
 * feature test passed (`refusedWriting`).
 */
export function readOnPastRefusal(socket: Duplex): void {
  const s = socket as unknown as Writes;
  const write = s._write;
  const writev = s._writev;
  const sendingEnds =
    (cb: WriteCallback): WriteCallback =>
    (error) => {
      if (error && REFUSED.has((error as NodeJS.ErrnoException).code ?? "")) {
        refused.add(socket);
        cb();
        return;
      }
      cb(error);
    };
  s._write = function (this: Duplex, chunk, encoding, cb) {
    write.call(this, chunk, encoding, sendingEnds(cb));
  };
  if (typeof writev === "function")
    s._writev = function (this: Duplex, chunks, cb) {
      writev.call(this, chunks, sendingEnds(cb));
    };
}

export interface RefusedWriting {
  /** a plain TCP connection reads on past a refused write, with `readPastRefusedWrites` */
  works: boolean;
  /** and a TLS one: its writes go through the same `_write` the test proved */
  tls: boolean;
}

/**
 * How long the feature test waits for each of its steps: on loopback a step takes a few ms, and a
 * gateway starting on a loaded machine (two CPUs, load 15) took over 2 s for one. The bound only
 * ends a test that would hang (a Node whose socket neither fails nor reads on), while the first
 * requests wait for it; a bound run past fails the test, and every such answer is a 502.
 */
const PROBE_BOUND_MS = 10_000;
const PROBE_ANSWER = "portcullis refused-write probe";

let probed: Promise<RefusedWriting> | null = null;
/**
 * The feature test, once per process: over a real loopback connection whose peer writes a few
 * bytes and resets it, a socket made to read on past a refused write must take the write that
 * meets the reset without being destroyed, then read the bytes the peer wrote before it, then end.
 * Anything else (the write not refused, the socket destroyed, the bytes lost, no end within the
 * bound, a throw) and the agents are left as Node makes them. A TLS socket is counted in only if
 * its `_write` is net.Socket's, the one tested.
 */
export function refusedWriting(): Promise<RefusedWriting> {
  probed ??= probe().then(
    (works) => ({
      works,
      tls: works && TLSSocket.prototype._write === Socket.prototype._write,
    }),
    () => ({ works: false, tls: false }),
  );
  return probed;
}

let told = false;
/**
 * The warning a proxy's start gives, once per process, when the feature test failed (for plain
 * or TLS connections); null otherwise, or once it was given.
 */
export async function refusedWritingWarning(): Promise<string | null> {
  const r = await refusedWriting();
  if (told || (r.works && r.tls)) return null;
  told = true;
  const which = r.works ? "https:// " : "";
  return `egress: on this Node (${process.version}) the proxy cannot read on past a request body write an upstream refused by resetting its connection: an answer such an ${which}upstream wrote before the reset (a 413 to an upload it did not read) reaches the client as a 502`;
}

async function probe(): Promise<boolean> {
  const server = createServer();
  const client = new Socket();
  const peers: Socket[] = [];
  let timer: NodeJS.Timeout | undefined;
  try {
    server.on("error", () => {});
    client.on("error", () => {});
    await new Promise<void>((resolve, reject) => {
      server.once("error", reject);
      server.listen(0, "127.0.0.1", resolve);
    });
    const port = (server.address() as { port: number }).port;
    // each step bounded from its own start: with one bound for the whole test (2 s), a gateway
    // starting on a loaded machine (its loop held by other work between the steps) ran past it,
    // and the test failed on a Node where the way works: every such answer a 502 (said at start)
    const within = <T>(p: Promise<T>) =>
      Promise.race([
        p,
        new Promise<never>((_, reject) => {
          clearTimeout(timer);
          timer = setTimeout(() => reject(new Error("the probe's step never came")), PROBE_BOUND_MS);
        }),
      ]).finally(() => clearTimeout(timer));
    // the peer: this process's own connection only (loopback is open to other users' processes)
    const accepted = new Promise<Socket>((resolve) => {
      server.on("connection", (s: Socket) => {
        peers.push(s);
        s.on("error", () => {});
        if (s.remotePort === client.localPort) resolve(s);
        else s.destroy();
      });
    });
    readOnPastRefusal(client);
    // not reading until the refused write: the peer's bytes and reset wait in the kernel
    client.pause();
    client.connect(port, "127.0.0.1");
    await within(new Promise((resolve) => client.once("connect", resolve)));
    const peer = await within(accepted);
    peer.write(PROBE_ANSWER);
    await within(new Promise<void>((resolve) => peer.write("", () => resolve())));
    peer.resetAndDestroy();
    // writes until one meets the reset (on loopback, the first after it), each after the last is done
    for (let i = 0; i < 100 && !refused.has(client); i++) {
      const error = await within(
        new Promise<Error | null | undefined>((resolve) => client.write("x", (e) => resolve(e))),
      );
      if (error || client.destroyed) return false;
      if (!refused.has(client)) await within(new Promise((resolve) => setTimeout(resolve, 1)));
    }
    if (!refused.has(client) || client.destroyed) return false;
    let read = "";
    client.on("data", (d: Buffer) => {
      read += d.toString("latin1");
    });
    const ended = new Promise<boolean>((resolve) => {
      client.once("end", () => resolve(true));
      client.once("close", () => resolve(false));
    });
    client.resume();
    return (await within(ended)) && read === PROBE_ANSWER;
  } finally {
    clearTimeout(timer);
    client.destroy();
    for (const s of peers) s.destroy();
    server.close();
  }
}

/**
 * Every connection `agent` makes reads on past a write its peer refused, and one that had a write
 * refused is not kept for another request (`createConnection` and `keepSocketAlive`, the two
 * methods Node lets an agent override).
 */
export function readPastRefusedWrites(
  agent: Agent,
  /** asked at each connection: whether the feature test passed (false while it runs) */
  proven: () => boolean = () => true,
): void {
  const a = agent as unknown as {
    createConnection: (...args: unknown[]) => Duplex | undefined;
    keepSocketAlive: (socket: Duplex) => boolean;
  };
  const create = a.createConnection;
  a.createConnection = function (this: Agent, ...args: unknown[]) {
    const socket = create.apply(this, args);
    if (socket && proven()) readOnPastRefusal(socket);
    return socket;
  };
  const keep = a.keepSocketAlive;
  a.keepSocketAlive = function (this: Agent, socket: Duplex) {
    return !refused.has(socket) && keep.call(this, socket);
  };
}
