// A request that asks `Expect: 100-continue` and sends its body only once told to: the upstream's
// 100 Continue reaches the client (in a tunnel, passed on as the upstream sent it; in absolute
// form, Node's server says it for the proxy, which then carries the body on), the body follows,
// and the final answer comes back, recorded `forwarded` with its final status (never the 100).
// In-process proxy, a real TCP upstream that says 100 Continue and answers once the body is whole.
import { once } from "node:events";
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { EgressProxy, EgressRecord } from "../../src/vault/egress/proxy.js";
import { startEgressProxy } from "../../src/vault/egress/proxy.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

const quiet = { info() {}, warn() {}, debug() {}, status() {} };
/** How long an awaited event may take before the test says which never came (no duration is asserted). */
const BOUND = 5000;

let stateDir: string;
let proxy: EgressProxy;
let upstream: Server;
let host: string;
const records: EgressRecord[] = [];
const sockets = new Set<Socket>();

beforeAll(async () => {
  stateDir = newStateDir();
  upstream = createServer((s) => {
    sockets.add(s);
    s.on("error", () => {});
    let got = "";
    let want: number | null = null;
    s.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      if (want === null) {
        const end = got.indexOf("\r\n\r\n");
        if (end < 0) return;
        const head = got.slice(0, end);
        want = Number(/\r\ncontent-length: (\d+)/i.exec(head)?.[1] ?? 0);
        got = got.slice(end + 4);
        if (/\r\nexpect: 100-continue/i.test(head)) s.write("HTTP/1.1 100 Continue\r\n\r\n");
      }
      if (got.length < want) return;
      s.write(`HTTP/1.1 201 Created\r\nContent-Length: ${want}\r\n\r\n${got.slice(0, want)}`);
      got = got.slice(want);
      want = null;
    });
  });
  upstream.listen(0, "127.0.0.1");
  await once(upstream, "listening");
  host = `127.0.0.1:${(upstream.address() as { port: number }).port}`;
  proxy = await startEgressProxy({
    stateDir,
    credentials: [{ env: "API_KEY", secret: "api", deliver: "http", hosts: [host] }],
    mode: "record",
    calls: () => ({ epoch: "E1", inFlight: [] }),
    timeoutMs: BOUND,
    onRecord: (r) => records.push(r),
    log: quiet,
  });
});

afterAll(async () => {
  await proxy?.close();
  for (const s of sockets) s.destroy();
  upstream?.close();
  removeDir(stateDir);
});

for (const how of ["tunnel", "absolute"] as const) {
  it(`${how}: the 100 Continue reaches the client before it sends the body, then the final answer; forwarded 201`, async () => {
    const before = records.length;
    const s = connect(proxy.port, "127.0.0.1");
    s.on("error", () => {});
    let read = "";
    s.on("data", (d: Buffer) => {
      read += d.toString("latin1");
    });
    await once(s, "connect");
    try {
      if (how === "tunnel") {
        s.write(`CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n`);
        await waitFor(() => read.includes("\r\n\r\n"), BOUND, "the CONNECT's answer");
        expect(read).toBe("HTTP/1.1 200 Connection Established\r\n\r\n");
        read = "";
      }
      const target = how === "absolute" ? `http://${host}/upload` : "/upload";
      s.write(
        `POST ${target} HTTP/1.1\r\nHost: ${host}\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n`,
      );
      await waitFor(() => read.includes("\r\n\r\n"), BOUND, "the 100 Continue");
      expect(read).toBe("HTTP/1.1 100 Continue\r\n\r\n");
      s.write("hello");
      await waitFor(() => read.endsWith("hello"), BOUND, "the final answer");
      expect(read).toMatch(/^HTTP\/1\.1 100 Continue\r\n\r\nHTTP\/1\.1 201 Created\r\n[\s\S]*\r\n\r\nhello$/);
    } finally {
      s.destroy();
    }
    await waitFor(() => records.length > before || null, BOUND, "the record");
    expect(records.slice(before).map((r) => [r.method, r.outcome, r.status])).toEqual([
      ["POST", "forwarded", 201],
    ]);
  });
}
