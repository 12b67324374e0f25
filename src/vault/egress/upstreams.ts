import { isIP, connect as netConnect, type Socket } from "node:net";
import { createSecureContext, rootCertificates, type SecureContext, connect as tlsConnect } from "node:tls";
import { type Destination, destinationText } from "./hosts.js";
import { type RefusedWriting, readOnPastRefusal, refusedOn } from "./refusedWrites.js";

/**
 * The proxy's own kept-alive connections to upstreams, per destination and scheme. HTTPS
 * upstreams are verified as Node verifies any (the roots, plus the user's extra CA
 * certificates; the name or address checked against the certificate), through one secure
 * context made once, and a new connection resumes the destination's last TLS session.
 *
 * Each connection's listeners are set once: they call whoever uses it now (an exchange's
 * `Handlers`), and while it is idle any word, end or error from the upstream, or the timeout,
 * closes it. The timeout is the proxy's one: how long an upstream may stay silent, in use or not.
 *
 * Each connection reads on past a body write the upstream refused by resetting it, where the
 * proxy's feature test found that way working (refusedWrites.ts): the answer it wrote before the
 * reset is given on, and such a connection is never kept. A connection is made only once the test
 * has ended: one made before would be as Node makes it, and kept, for its whole life.
 */

export interface Handlers {
  data(d: Buffer): void;
  /** the upstream ended or closed the connection */
  end(): void;
  error(e: Error): void;
  timeout(): void;
}

export interface Upstream {
  socket: Socket;
  /** it served an earlier request (the upstream may have closed it meanwhile) */
  reused: boolean;
  /** the exchange that receives what the upstream says, until `release` or `discard` */
  use(h: Handlers): void;
  /** the exchange ended cleanly: kept for the next request to that destination */
  release(): void;
  /** not to be used again */
  discard(): void;
}

export interface Upstreams {
  /** a connected (and, for https, verified) connection; rejects with the reason it could not be had */
  acquire(dest: Destination, scheme: "http" | "https", timeoutMs: number): Promise<Upstream>;
  close(): void;
}

class Conn implements Upstream {
  handlers: Handlers | null = null;
  reused = false;
  constructor(
    readonly socket: Socket,
    private readonly idle: Conn[],
  ) {
    const gone = () => this.discard();
    socket.on("data", (d: Buffer) => (this.handlers ? this.handlers.data(d) : gone()));
    socket.on("end", () => (this.handlers ? this.handlers.end() : gone()));
    socket.on("close", () => (this.handlers ? this.handlers.end() : gone()));
    socket.on("error", (e: Error) => (this.handlers ? this.handlers.error(e) : gone()));
    socket.on("timeout", () => (this.handlers ? this.handlers.timeout() : gone()));
  }
  use(h: Handlers): void {
    this.handlers = h;
  }
  release(): void {
    this.handlers = null;
    if (this.socket.destroyed || !this.socket.writable || refusedOn(this.socket)) {
      this.discard();
      return;
    }
    this.reused = true;
    this.idle.push(this);
  }
  discard(): void {
    this.handlers = null;
    const i = this.idle.indexOf(this);
    if (i >= 0) this.idle.splice(i, 1);
    this.socket.destroy();
  }
}

export function upstreams(
  extraCa?: string,
  /** the proxy's feature test: what it found, once it has ended (refusedWrites.ts) */
  pastRefusalsFound?: () => Promise<RefusedWriting>,
): Upstreams {
  let context: SecureContext | null = null;
  const secureContext = () => {
    context ??= createSecureContext(extraCa ? { ca: [...rootCertificates, extraCa] } : {});
    return context;
  };
  const idle = new Map<string, Conn[]>();
  const sessions = new Map<string, Buffer>();
  const all = new Set<Socket>();
  const keyOf = (dest: Destination, scheme: string) => `${scheme}://${destinationText(dest)}`;

  const connect = (
    dest: Destination,
    scheme: "http" | "https",
    timeoutMs: number,
    pastRefusals: RefusedWriting | undefined,
  ): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const key = keyOf(dest, scheme);
      const socket =
        scheme === "https"
          ? tlsConnect({
              host: dest.host,
              port: dest.port,
              secureContext: secureContext(),
              // said, not left to node's default, which NODE_TLS_REJECT_UNAUTHORIZED=0 turns off
              rejectUnauthorized: true,
              // SNI names a host, never an address (RFC 6066)
              ...(isIP(dest.host) === 0 ? { servername: dest.host } : {}),
              session: sessions.get(key),
            })
          : netConnect({ host: dest.host, port: dest.port });
      if (scheme === "https" ? pastRefusals?.tls : pastRefusals?.works) readOnPastRefusal(socket);
      all.add(socket);
      socket.on("close", () => all.delete(socket));
      if (scheme === "https")
        socket.on("session", (s: Buffer) => {
          sessions.set(key, s);
        });
      const timer = setTimeout(
        () => socket.destroy(new Error(`no connection within ${timeoutMs} ms`)),
        timeoutMs,
      );
      const failed = (e: Error) => {
        clearTimeout(timer);
        reject(e);
      };
      socket.once("error", failed);
      socket.once(scheme === "https" ? "secureConnect" : "connect", () => {
        clearTimeout(timer);
        socket.off("error", failed);
        socket.setNoDelay(true);
        socket.setTimeout(timeoutMs);
        resolve(socket);
      });
    });

  return {
    async acquire(dest, scheme, timeoutMs) {
      const key = keyOf(dest, scheme);
      let list = idle.get(key);
      if (!list) {
        list = [];
        idle.set(key, list);
      }
      for (let c = list.pop(); c; c = list.pop()) {
        if (!c.socket.destroyed && c.socket.writable && c.socket.readable) return c;
        c.discard();
      }
      const pastRefusals = await pastRefusalsFound?.();
      return new Conn(await connect(dest, scheme, timeoutMs, pastRefusals), list);
    },
    close() {
      for (const s of all) s.destroy();
      idle.clear();
    },
  };
}
