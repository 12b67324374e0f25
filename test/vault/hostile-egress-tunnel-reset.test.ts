// An upstream that answers a request inside a CONNECT tunnel before it has read its body (a 413 for
// an upload too large) and then closes with the rest unread: its kernel resets the connection, and
// the proxy's next write of the body, which it goes on writing as the client sends it, fails. The
// answer the upstream wrote before the reset is still given on, and the tunnel ends after it: in
// a tunnel the proxy reads (a declared host, recorded `forwarded` 413) and in one it passes through
// untouched (any other host). In-process proxies, a raw TCP upstream, a raw client that writes the
// body in pieces after the head, as an upload does. Before, the failed write destroyed the proxy's
// connection with the answer unread: in the tunnel it reads, the client got a 502 ("write
// ECONNRESET"), recorded `failed`, every time; in the untouched one, most often the tunnel closed
// with nothing at all. (Absolute form: hostile-egress-reset-after-answer.test.ts.)
import { afterAll, beforeAll, expect, it } from "vitest";
import { type EgressProxy, type EgressRecord, startEgressProxy } from "../../src/vault/egress/proxy.js";
import { removeDir, waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import { type RawProxy, rawClient, rawProxy, recordsSince, within as withinBound } from "./rawProxyKit.js";

/** How long an awaited event may take before the test says which never came (no duration is asserted). */
const BOUND = 10_000;
const BODY = 1024 * 1024;
const QUARTER = "a".repeat(BODY / 4);
const PIECE = "a".repeat(BODY / 16);
const ROUNDS = 10;
const ANSWER = "HTTP/1.1 413 Content Too Large\r\nContent-Length: 8\r\nConnection: close\r\n\r\ntoo long";

let reading: RawProxy;
let untouched: EgressProxy;
let untouchedDir: string;
const untouchedRecords: EgressRecord[] = [];

beforeAll(async () => {
  // the upstream: the head read, the body not; the answer, then the connection closed with the
  // body unread in its kernel (a reset, not a FIN)
  reading = await rawProxy((s) => {
    let got = "";
    const onData = (d: Buffer) => {
      got += d.toString("latin1");
      if (got.indexOf("\r\n\r\n") < 0) return;
      s.off("data", onData);
      s.pause();
      s.write(ANSWER, () => s.destroy());
    };
    s.on("data", onData);
  }, BOUND);
  // a proxy that declares another host: its tunnels to the upstream pass through untouched
  untouchedDir = newStateDir();
  untouched = await startEgressProxy({
    stateDir: untouchedDir,
    credentials: [{ env: "API_KEY", secret: "api", deliver: "http", hosts: ["api.example.invalid"] }],
    mode: "record",
    calls: () => ({ epoch: "E1", inFlight: [] }),
    timeoutMs: BOUND,
    onRecord: (r) => untouchedRecords.push(r),
    log: { info() {}, warn() {}, debug() {}, status() {} },
  });
});

afterAll(async () => {
  await untouched?.close();
  removeDir(untouchedDir);
  await reading?.close();
});

/** One upload through a tunnel of `proxy`: what the client read by the tunnel's end. */
async function upload(proxy: EgressProxy): Promise<string> {
  const c = await rawClient({ proxy, host: reading.host }, "tunnel", BOUND, true);
  try {
    // a quarter of the body with the head, the rest in pieces as the client sends them (on after
    // the proxy's end too: it has not read the answer yet)
    c.s.write(`POST /upload HTTP/1.1\r\nHost: ${reading.host}\r\nContent-Length: ${BODY}\r\n\r\n${QUARTER}`);
    for (let k = 0; k < 12; k++) {
      await new Promise((r) => setTimeout(r, 2));
      if (!c.s.destroyed) c.s.write(PIECE);
    }
    await withinBound(c.proxyEnded, "the proxy's end of the tunnel", BOUND);
    return c.read();
  } finally {
    c.s.destroy();
  }
}

it("a tunnel the proxy reads: the answer written before the reset reaches the client, recorded forwarded", async () => {
  const before = reading.records.length;
  for (let round = 0; round < ROUNDS; round++) expect(await upload(reading.proxy)).toBe(ANSWER);
  await waitFor(() => reading.records.length >= before + ROUNDS || null, BOUND, "the records");
  expect(recordsSince(reading.records, before)).toEqual(Array(ROUNDS).fill(["POST", "forwarded", 413]));
});

it("a tunnel passed through untouched: the answer written before the reset reaches the client", async () => {
  for (let round = 0; round < ROUNDS; round++) expect(await upload(untouched)).toBe(ANSWER);
  expect(untouchedRecords.map((r) => [r.method, r.outcome])).toEqual(
    Array(ROUNDS).fill(["CONNECT", "tunnelled"]),
  );
});
