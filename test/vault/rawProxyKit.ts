// The setup the egress proxy's connection-lifecycle tests share: an in-process proxy releasing one
// credential to a raw TCP upstream the test scripts byte by byte, and a raw client of the proxy
// that speaks in a CONNECT tunnel or in absolute form. Raw sockets on both sides, so that a FIN, a
// half-close or an answer before the body is whole is exactly what each test writes.
import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";
import { expect } from "vitest";
import type { EgressProxy, EgressRecord } from "../../src/vault/egress/proxy.js";
import { startEgressProxy } from "../../src/vault/egress/proxy.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

const quiet = { info() {}, warn() {}, debug() {}, status() {} };

export interface RawProxy {
  proxy: EgressProxy;
  upstream: Server;
  /** the upstream's `127.0.0.1:PORT`, the credential's one host */
  host: string;
  /** every record the proxy wrote, in order */
  records: EgressRecord[];
  /** the upstream's connections, destroyed by close() */
  sockets: Set<Socket>;
  close(): Promise<void>;
}

/**
 * A proxy (mode `record`, one `http` credential for the upstream's host, `timeoutMs` its bound)
 * before a TCP upstream whose every connection goes to `serve`.
 */
export async function rawProxy(serve: (s: Socket) => void, timeoutMs: number): Promise<RawProxy> {
  const stateDir = newStateDir();
  const sockets = new Set<Socket>();
  const records: EgressRecord[] = [];
  const upstream = createServer((s) => {
    sockets.add(s);
    s.on("error", () => {});
    serve(s);
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  const host = `127.0.0.1:${(upstream.address() as { port: number }).port}`;
  const proxy = await startEgressProxy({
    stateDir,
    credentials: [{ env: "API_KEY", secret: "api", deliver: "http", hosts: [host] }],
    mode: "record",
    calls: () => ({ epoch: "E1", inFlight: [] }),
    timeoutMs,
    onRecord: (r) => records.push(r),
    log: quiet,
  });
  return {
    proxy,
    upstream,
    host,
    records,
    sockets,
    close: async () => {
      await proxy.close();
      for (const s of sockets) s.destroy();
      upstream.close();
      removeDir(stateDir);
    },
  };
}

/** A raw client of the proxy, connected, in a tunnel (its 200 read and checked) or not. */
export interface RawClient {
  s: Socket;
  /** what came back since the tunnel's 200 (or since the connection, in absolute form) */
  read(): string;
  /** the proxy's FIN, or the connection's close, whichever comes first */
  proxyEnded: Promise<void>;
  /** a request target as this client writes it: the path in a tunnel, an absolute URL otherwise */
  target(path: string): string;
}

export async function rawClient(
  p: Pick<RawProxy, "proxy" | "host">,
  how: "tunnel" | "absolute",
  bound: number,
  /** keep writing after the proxy's FIN (net's allowHalfOpen) */
  allowHalfOpen = false,
): Promise<RawClient> {
  const s = connect({ port: p.proxy.port, host: "127.0.0.1", allowHalfOpen });
  s.on("error", () => {});
  let read = "";
  s.on("data", (d: Buffer) => {
    read += d.toString("latin1");
  });
  const proxyEnded = new Promise<void>((resolve) => {
    s.once("end", resolve);
    s.once("close", resolve);
  });
  await once(s, "connect");
  if (how === "tunnel") {
    s.write(`CONNECT ${p.host} HTTP/1.1\r\nHost: ${p.host}\r\n\r\n`);
    await waitFor(() => read.includes("\r\n\r\n"), bound, "the CONNECT's answer");
    expect(read).toBe("HTTP/1.1 200 Connection Established\r\n\r\n");
    read = "";
  }
  return {
    s,
    read: () => read,
    proxyEnded,
    target: (path) => (how === "absolute" ? `http://${p.host}${path}` : path),
  };
}

/** `p`, or an error naming what never came within `bound` ms (no duration is asserted). */
export async function within<T>(p: Promise<T>, what: string, bound: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: never came`)), bound);
  });
  try {
    return await Promise.race([p, limit]);
  } finally {
    clearTimeout(timer);
  }
}

/** The records since `before`, as [method, outcome, status]. */
export const recordsSince = (records: EgressRecord[], before: number) =>
  records.slice(before).map((r) => [r.method, r.outcome, r.status]);
