import { isIP, connect as netConnect, type Socket } from "node:net";
import { createSecureContext, rootCertificates, type SecureContext, connect as tlsConnect } from "node:tls";
import { type Destination, destinationText } from "./hosts.js";

/**
 * The proxy's own kept-alive connections to upstreams, per destination and scheme. HTTPS
 * upstreams are verified as Node verifies any (the roots, plus the user's extra CA
 * certificates; the name or address checked against the certificate), through one secure
 * context made once, and a new connection resumes the destination's last TLS session.
 * An idle connection is closed after a while, or as soon as the upstream closes it.
 */

const IDLE_MS = 30_000;

export interface Upstreams {
  /** a connected (and, for https, verified) socket; rejects with the reason it could not be had */
  acquire(
    dest: Destination,
    scheme: "http" | "https",
    timeoutMs: number,
  ): Promise<{ socket: Socket; reused: boolean }>;
  /** a socket whose exchange ended cleanly, kept for the next request to that destination */
  release(dest: Destination, scheme: "http" | "https", socket: Socket): void;
  close(): void;
}

export function upstreams(extraCa?: string): Upstreams {
  let context: SecureContext | null = null;
  const secureContext = () => {
    context ??= createSecureContext(extraCa ? { ca: [...rootCertificates, extraCa] } : {});
    return context;
  };
  const idle = new Map<string, Socket[]>();
  const sessions = new Map<string, Buffer>();
  const all = new Set<Socket>();
  /** what watches an idle socket, taken off again when it is used */
  const watchers = new WeakMap<Socket, () => void>();
  const keyOf = (dest: Destination, scheme: string) => `${scheme}://${destinationText(dest)}`;

  const drop = (key: string, s: Socket) => {
    const list = idle.get(key);
    const i = list ? list.indexOf(s) : -1;
    if (i >= 0) list!.splice(i, 1);
  };

  const connect = (dest: Destination, scheme: "http" | "https", timeoutMs: number): Promise<Socket> =>
    new Promise((resolve, reject) => {
      const key = keyOf(dest, scheme);
      const socket =
        scheme === "https"
          ? tlsConnect({
              host: dest.host,
              port: dest.port,
              secureContext: secureContext(),
              // SNI names a host, never an address (RFC 6066)
              ...(isIP(dest.host) === 0 ? { servername: dest.host } : {}),
              session: sessions.get(key),
            })
          : netConnect({ host: dest.host, port: dest.port });
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
        resolve(socket);
      });
    });

  return {
    async acquire(dest, scheme, timeoutMs) {
      const list = idle.get(keyOf(dest, scheme));
      while (list && list.length > 0) {
        const s = list.pop()!;
        const gone = watchers.get(s);
        if (gone) for (const ev of ["data", "end", "error", "close", "timeout"]) s.off(ev, gone);
        watchers.delete(s);
        s.setTimeout(0);
        if (!s.destroyed && s.writable && s.readable) return { socket: s, reused: true };
        s.destroy();
      }
      return { socket: await connect(dest, scheme, timeoutMs), reused: false };
    },
    release(dest, scheme, socket) {
      if (socket.destroyed || !socket.writable) return void socket.destroy();
      const key = keyOf(dest, scheme);
      const gone = () => {
        drop(key, socket);
        socket.destroy();
      };
      // an idle upstream that speaks, closes or stalls is of no further use
      watchers.set(socket, gone);
      for (const ev of ["data", "end", "error", "close"]) socket.on(ev, gone);
      socket.setTimeout(IDLE_MS);
      socket.on("timeout", gone);
      const list = idle.get(key) ?? [];
      list.push(socket);
      idle.set(key, list);
    },
    close() {
      for (const s of all) s.destroy();
      idle.clear();
    },
  };
}
