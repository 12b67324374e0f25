// A request that begins while no epoch is live (a server booting before its epoch is recorded, or
// the gap after the previous process went down) and is answered only after the next epoch came
// up. The proxy records a request it reads when its answer comes; the epoch it was begun under is
// none, and the recorder holds such a request for the epoch that starts next. That epoch has
// started by then: held, it waited for the one after (or the gateway's end, recorded under none),
// and a review of the new code missed the host. Over real sockets: the proxy, a real recorder on a
// real store, an upstream on loopback that answers when the test says, and the requests a server
// makes (absolute-form through node:http, and plain HTTP inside a CONNECT tunnel to a declared
// host, as undici sends it). The window is set by the test, as the gateway would set it.
import * as http from "node:http";
import { connect as netConnect, type Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/index.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import type { EventSink } from "../../src/gateway/events.js";
import { openStore, type Store } from "../../src/store/db.js";
import { type CallInFlight, type EgressProxy, startEgressProxy } from "../../src/vault/egress/proxy.js";
import { EgressRecorder, listDestinations } from "../../src/vault/egress/record.js";
import { waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

const quiet = { info() {}, warn() {}, debug() {}, status() {} };

let store: Store;
let events: EventSink;
let emitted: Record<string, unknown>[];
let recorder: EgressRecorder;
let proxy: EgressProxy;
let window: { epoch: string | null; inFlight: CallInFlight[] } = { epoch: null, inFlight: [] };
/** the upstream's requests waiting for their answer */
const waiting: http.ServerResponse[] = [];
const received: string[] = [];
let upstream: http.Server;
let upstreamPort: number;
let declaredPort: number;
let declared: http.Server;
const sockets = new Set<Socket>();

const listen = (s: http.Server) =>
  new Promise<number>((r) => s.listen(0, "127.0.0.1", () => r((s.address() as { port: number }).port)));

beforeAll(async () => {
  const stateDir = newStateDir();
  store = openStore(stateDir);
  const sink = auditSink(AuditLog.open(store, stateDir, { sync: "normal" }), quiet);
  emitted = [];
  events = {
    ...sink,
    emit: (e) => {
      emitted.push(e as unknown as Record<string, unknown>);
      sink.emit(e);
    },
  };
  // written when the test says (the window of a gateway's recorder is 200 ms)
  recorder = new EgressRecorder(store, "api", events, 3600_000);
  const hold = (req: http.IncomingMessage, res: http.ServerResponse) => {
    received.push(req.url ?? "");
    waiting.push(res);
  };
  upstream = http.createServer(hold);
  declared = http.createServer(hold);
  for (const s of [upstream, declared])
    s.on("connection", (c: Socket) => {
      sockets.add(c);
      c.on("close", () => sockets.delete(c));
    });
  upstreamPort = await listen(upstream);
  declaredPort = await listen(declared);
  proxy = await startEgressProxy({
    stateDir,
    credentials: [{ env: "API_KEY", secret: "api", deliver: "http", hosts: [`127.0.0.1:${declaredPort}`] }],
    mode: "record",
    calls: () => window,
    timeoutMs: 10_000,
    onRecord: (r) => recorder.record(r),
    log: quiet,
  });
});

afterAll(async () => {
  await proxy?.close();
  for (const s of sockets) s.destroy();
  await Promise.all([upstream, declared].map((s) => new Promise((r) => s?.close(r))));
  recorder?.close();
  events?.flush();
  store?.close();
});

/** node:http through the proxy, absolute-form (as the preload sends http:// requests). */
function absoluteForm(path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({
      host: "127.0.0.1",
      port: proxy.port,
      method: "GET",
      path: `http://127.0.0.1:${upstreamPort}${path}`,
      agent: false,
    });
    req.on("response", (res) => {
      res.resume();
      res.on("end", () => resolve(res.statusCode ?? 0));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Plain HTTP inside a CONNECT tunnel to the declared host (undici tunnels http:// too). */
function inTunnel(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = netConnect({ host: "127.0.0.1", port: proxy.port });
    let text = "";
    let connected = false;
    s.setEncoding("latin1");
    s.on("connect", () =>
      s.write(`CONNECT 127.0.0.1:${declaredPort} HTTP/1.1\r\nhost: 127.0.0.1:${declaredPort}\r\n\r\n`),
    );
    s.on("data", (chunk: string) => {
      text += chunk;
      if (!connected && text.includes("\r\n\r\n")) {
        connected = true;
        text = "";
        s.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1:${declaredPort}\r\nconnection: close\r\n\r\n`);
      }
    });
    s.on("end", () => resolve(text));
    s.on("close", () => resolve(text));
    s.on("error", reject);
  });
}

function answerAll(): void {
  for (const res of waiting.splice(0)) {
    res.writeHead(200, { "content-type": "text/plain" });
    res.end("ok");
  }
}

const epochsOf = (port: number) =>
  listDestinations(store, "api")
    .filter((d) => d.port === port)
    .map((d) => d.epoch);

describe("a request begun between two epochs and answered in the next one", () => {
  it("is filed under the epoch that came up, not held for the one after it", async () => {
    recorder.epochStarted("E1");
    window = { epoch: "E1", inFlight: [] };
    // E1's process went down; the new code begins two requests before its epoch is recorded
    window = { epoch: null, inFlight: [] };
    const plain = absoluteForm("/boot");
    const tunnelled = inTunnel("/boot-declared");
    await waitFor(() => received.length === 2, 10_000, "both requests at the upstreams");
    // E2 comes up (as the gateway does it: the window, then the recorder told), then the answers
    window = { epoch: "E2", inFlight: [] };
    recorder.epochStarted("E2");
    answerAll();
    expect(await plain).toBe(200);
    expect(await tunnelled).toContain("200 OK");
    recorder.flush();
    expect(epochsOf(upstreamPort)).toEqual(["E2"]);
    expect(epochsOf(declaredPort)).toEqual(["E2"]);
    const egress = emitted.filter((e) => e.type === "egress");
    expect(egress.map((e) => [e.port, e.epoch])).toEqual(
      expect.arrayContaining([
        [upstreamPort, "E2"],
        [declaredPort, "E2"],
      ]),
    );
    expect(egress).toHaveLength(2);
  });

  it("one begun while an epoch was live keeps that epoch, answered after it ended", async () => {
    window = { epoch: "E2", inFlight: [] };
    const plain = absoluteForm("/late-answer");
    await waitFor(() => received.includes("/late-answer"), 10_000, "the request at the upstream");
    // E2's process goes down before the answer comes
    window = { epoch: null, inFlight: [] };
    answerAll();
    expect(await plain).toBe(200);
    recorder.epochStarted("E3");
    recorder.flush();
    expect(epochsOf(upstreamPort)).toEqual(["E2"]);
  });
});
