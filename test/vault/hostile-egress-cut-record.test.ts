// The record of an answer passed through as it came (no value released, nothing to take out of
// it), when its body does not end as its framing says: an upstream that sends the head and part
// of the body and then drops the connection, or one whose answer the client leaves before its
// end. The record is written when the body ends or fails, once: `failed` with the status the
// client got when the upstream cut it (it was `forwarded`, recorded at the head, as if the server
// had got all of it), `forwarded` when the client left first, and never lost: not when the client
// disconnects, not when the proxy closes with the answer still coming. In a tunnel to a declared
// host (plain HTTP through it) and in absolute form. In-process proxy, a real TCP upstream.
import { connect, createServer, type Server, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { EgressProxy, EgressRecord } from "../../src/vault/egress/proxy.js";
import { startEgressProxy } from "../../src/vault/egress/proxy.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

const quiet = { info() {}, warn() {}, debug() {}, status() {} };
const PART = "0123456789";

let stateDir: string;
let proxy: EgressProxy;
let upstream: Server;
let host: string;
const sockets = new Set<Socket>();
const records: EgressRecord[] = [];

/**
 * Answers by the request's path: /cut sends a head saying 100 bytes, 10 of them, then drops the
 * connection; /held the same and then nothing more, the connection open; /whole all 100 bytes;
 * /until-close a body delimited by the connection's close, whole.
 */
function answer(s: Socket, path: string) {
  const head = (status: number) => `HTTP/1.1 ${status} OK\r\ncontent-length: 100\r\n\r\n`;
  if (path === "/cut") {
    s.write(`${head(201)}${PART}`);
    setTimeout(() => s.destroy(), 20);
  } else if (path === "/held") s.write(`${head(202)}${PART}`);
  else if (path === "/whole") s.write(`${head(200)}${PART.repeat(10)}`);
  else if (path === "/until-close") s.end(`HTTP/1.1 203 OK\r\nconnection: close\r\n\r\n${PART}`);
}

beforeAll(async () => {
  stateDir = newStateDir();
  upstream = createServer((s) => {
    sockets.add(s);
    s.on("close", () => sockets.delete(s));
    s.on("error", () => {});
    let got = "";
    s.on("data", (d: Buffer) => {
      got += d.toString("latin1");
      const end = got.indexOf("\r\n\r\n");
      if (end < 0) return;
      const path = got.split(" ")[1] ?? "/";
      got = got.slice(end + 4);
      answer(s, path);
    });
  });
  await new Promise<void>((r) => upstream.listen(0, "127.0.0.1", r));
  host = `127.0.0.1:${(upstream.address() as { port: number }).port}`;
  proxy = await startEgressProxy({
    stateDir,
    credentials: [{ env: "API_KEY", secret: "api", deliver: "http", hosts: [host] }],
    mode: "record",
    calls: () => ({ epoch: "E1", inFlight: [] }),
    timeoutMs: 5000,
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

/**
 * A request to the upstream, in a tunnel or in absolute form; resolves with what the client read
 * once the proxy closes, or, with `leaveAfter`, once that many bytes of the answer's body came
 * (the client then closes its end without reading more).
 */
function ask(
  how: "tunnel" | "absolute",
  path: string,
  leaveAfter?: number,
  onPart?: () => void,
): Promise<string> {
  return new Promise((resolve) => {
    const s = connect(proxy.port, "127.0.0.1");
    const request = `GET ${how === "absolute" ? `http://${host}` : ""}${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`;
    let out = "";
    let inTunnel = how === "absolute";
    s.on("data", (d: Buffer) => {
      out += d.toString("latin1");
      if (!inTunnel && out.includes("\r\n\r\n")) {
        expect(out).toMatch(/^HTTP\/1\.1 200 Connection Established\r\n\r\n$/);
        inTunnel = true;
        out = "";
        s.write(request);
        return;
      }
      const end = out.indexOf("\r\n\r\n");
      if (end >= 0 && out.endsWith(PART)) onPart?.();
      if (leaveAfter !== undefined && end >= 0 && out.length - end - 4 >= leaveAfter) {
        // (a reset, as a process that dies with bytes unread leaves it: a plain close is a
        // half-close, after which an HTTP client may still read its answer)
        s.resetAndDestroy();
        resolve(out);
      }
    });
    s.on("close", () => resolve(out));
    s.on("error", () => {});
    s.write(how === "tunnel" ? `CONNECT ${host} HTTP/1.1\r\nHost: ${host}\r\n\r\n` : request);
  });
}

/** The one record written for the next request, waited for (it comes when the body ends or fails). */
async function recordOf(p: Promise<string>): Promise<{ read: string; record: EgressRecord }> {
  const before = records.length;
  const read = await p;
  await waitFor(() => records.length > before || null, 5000, "the request's record");
  expect(records.length, "one record per request").toBe(before + 1);
  return { read, record: records.at(-1)! };
}

describe("a passed-through answer whose body does not end as framed", () => {
  for (const how of ["tunnel", "absolute"] as const) {
    it(`${how}: cut by the upstream partway, it is recorded failed with its status; whole, forwarded`, async () => {
      const cut = await recordOf(ask(how, "/cut"));
      // the client got the head and the part that came, and then the connection's close
      expect(cut.read).toMatch(/^HTTP\/1\.1 201 /);
      expect(cut.read.endsWith(PART), JSON.stringify(cut.read)).toBe(true);
      expect(cut.record).toMatchObject({ host: "127.0.0.1", outcome: "failed", status: 201 });
      const whole = await recordOf(ask(how, "/whole"));
      expect(whole.read.endsWith(PART.repeat(10))).toBe(true);
      expect(whole.record).toMatchObject({ outcome: "forwarded", status: 200 });
      const untilClose = await recordOf(ask(how, "/until-close"));
      // (in absolute form Node's server frames it in chunks)
      expect(untilClose.read).toMatch(/^HTTP\/1\.1 203 [\s\S]*0123456789(\r\n0\r\n\r\n)?$/);
      expect(untilClose.record).toMatchObject({ outcome: "forwarded", status: 203 });
    });

    it(`${how}: left by its client partway, it is recorded forwarded with its status`, async () => {
      const left = await recordOf(ask(how, "/held", PART.length));
      expect(left.read).toMatch(/^HTTP\/1\.1 202 /);
      expect(left.record).toMatchObject({ outcome: "forwarded", status: 202 });
    });
  }

  it("still coming when the proxy closes: recorded by the time close() returns", async () => {
    const before = records.length;
    let parts = 0;
    const reads = [
      ask("tunnel", "/held", undefined, () => parts++),
      ask("absolute", "/held", undefined, () => parts++),
    ];
    // both answers' heads and first bytes reached this client: the proxy is mid-body in each
    await waitFor(() => parts >= 2 || null, 5000, "two answers begun");
    expect(records.length).toBe(before);
    await proxy.close();
    expect(records.slice(before).map((r) => [r.outcome, r.status])).toEqual([
      ["forwarded", 202],
      ["forwarded", 202],
    ]);
    await Promise.all(reads);
  });
});
