import type { Agent } from "node:http";
import type { Duplex } from "node:stream";

/**
 * An upstream may answer a request before it has read all of its body (a 413, a 401 before an
 * upload) and close its connection with the rest unread: its kernel then resets the connection,
 * and the proxy's next write of the body fails (ECONNRESET, EPIPE), while the answer the upstream
 * wrote before it reset waits in the proxy's kernel, unread. Node's socket takes a failed write for
 * the end of the connection and destroys it at once, dropping that answer: in absolute form (Node's
 * client) the client got a 502 for a request the upstream had answered. (Inside a tunnel the
 * proxy's own connection pauses the client while the upstream's is full, and reads the answer
 * before it writes again: exchange.ts.)
 *
 * Here a write the upstream refused ends only the sending side: it is taken as written (the
 * upstream reads none of it, as it chose), and the connection is read on, so what the upstream
 * wrote before its reset is given on; the reset itself then ends the connection as it reaches
 * the reading side (an answer cut there is `failed`, as any, and no answer at all gets the 502).
 * Such a connection is never kept for another request.
 */
const REFUSED = new Set(["ECONNRESET", "EPIPE"]);
const refused = new WeakSet<Duplex>();

type WriteCallback = (error?: Error | null) => void;
interface Writes {
  _write(chunk: unknown, encoding: BufferEncoding, cb: WriteCallback): void;
  _writev?: ((chunks: unknown[], cb: WriteCallback) => void) | null;
}

/** Makes `socket` read on past a write its peer refused (above). */
function readOnPastRefusal(socket: Duplex): void {
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

/**
 * Every connection `agent` makes reads on past a write its peer refused, and one that had a write
 * refused is not kept for another request (`createConnection` and `keepSocketAlive`, the two
 * methods Node lets an agent override).
 */
export function readPastRefusedWrites(agent: Agent): void {
  const a = agent as unknown as {
    createConnection: (...args: unknown[]) => Duplex | undefined;
    keepSocketAlive: (socket: Duplex) => boolean;
  };
  const create = a.createConnection;
  a.createConnection = function (this: Agent, ...args: unknown[]) {
    const socket = create.apply(this, args);
    if (socket) readOnPastRefusal(socket);
    return socket;
  };
  const keep = a.keepSocketAlive;
  a.keepSocketAlive = function (this: Agent, socket: Duplex) {
    return !refused.has(socket) && keep.call(this, socket);
  };
}
