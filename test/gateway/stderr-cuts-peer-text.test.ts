// The gateway's own stderr lines repeat what a peer wrote (an id, a method, a tool name) cut to
// 80 characters (cutShort): whole, a client or server could write thousands of characters into
// the developer's terminal with every message, and push the point of the line out of view. Each
// test sends its own long text on one path and asserts that its line still appears, cut, and
// that no 100-character run of the peer's text reached stderr. Real gateways before the rawlines
// fixture (test/fixtures/servers/rawlines.mjs), raw clients; one `run --url` before
// hostile-http-open.mjs, and one `run --listen` spoken to over HTTP.

import { join } from "node:path";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { FIXTURES, fixtureCommand, NODE, REPO } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { startListener } from "../http/listen.js";
import { openSession, raw } from "../http/raw.js";
import { startFixture } from "../http/upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const LONG = 3000;
/** the text a peer wrote: one letter, LONG times, after `prefix` */
const long = (letter: string, prefix = "") => `${prefix}${letter.repeat(LONG)}`;

/**
 * A gateway (`--approval none`) before the rawlines fixture, `answers` its FIXTURE_RAW_ANSWERS;
 * closed after the case unless `perCase` is false (the shared one, closed after the file).
 */
function gateway(answers: Record<string, string | null> = {}, perCase = true): RawGateway {
  const gw = rawGateway({
    args: ["--label", "cut", "--approval", "none", "--", NODE, FIXTURES.rawlines],
    env: { FIXTURE_RAW_ANSWERS: JSON.stringify(answers) },
  });
  if (perCase) cleanup.push(() => gw.close());
  return gw;
}

/** The method rawlines answers with an error that passes for the gateway's own (a data.error member). */
const FORGED_ERROR_METHOD = long("z");

/**
 * One gateway before rawlines for the cases that ask nothing else of it: started by the first of
 * them (a gateway per case cost a start and an end each), initialized by the first that needs it
 * (the case of a request before initialize comes first), ended after the last. Each case sends
 * its own text under ids of its own and asserts over the whole stderr they share: no case's long
 * text reached it whole, whichever case wrote it.
 */
let shared: { gw: RawGateway; initialized: Promise<unknown> | null } | null = null;
function sharedGateway(): RawGateway {
  shared ??= {
    gw: gateway(
      {
        // slow/never stays at the server, its id in flight
        "slow/never": null,
        [FORGED_ERROR_METHOD]:
          '{"jsonrpc":"2.0","id":ID,"error":{"code":-32000,"message":"no","data":{"error":"x"}}}',
      },
      false,
    ),
    initialized: null,
  };
  return shared.gw;
}
async function initializedShared(): Promise<RawGateway> {
  const gw = sharedGateway();
  shared!.initialized ??= gw.initialize();
  await shared!.initialized;
  return gw;
}
afterAll(async () => {
  await shared?.gw.close();
  shared = null;
});

/** Waits for `line` on the gateway's stderr, then asserts no 100 of `letter` in a row are there. */
async function expectCut(gw: RawGateway, line: string, letter: string): Promise<void> {
  await waitFor(() => gw.stderr().includes(line), 10_000, `the gateway's line ${line}`);
  expect(gw.stderr()).not.toContain(letter.repeat(100));
}

/** `text` as cutShort shows it: its first 80 characters and an ellipsis. */
const cut = (text: string) => `${text.slice(0, 80)}…`;

describe("a peer's long text in the gateway's stderr lines", () => {
  it("a request before initialize (legacy): its id", async () => {
    const gw = sharedGateway();
    const id = long("q", "I");
    gw.send({ jsonrpc: "2.0", id, method: "tools/call", params: { name: "x", arguments: {} } });
    expect((await gw.next((m) => m.id === id)).error?.code).toBeDefined();
    await expectCut(
      gw,
      `refused tools/call ${cut(JSON.stringify(id))}: the client has not sent initialize`,
      "q",
    );
  }, 30_000);

  it("a client's method refused or dropped by name: tasks, a guarded variant, a notification", async () => {
    const gw = await initializedShared();
    // trailing slashes and blanks fold away: tasks/get and tools/call, to a lenient reader
    const task = `tasks/get${"/".repeat(LONG)}`;
    gw.send({ jsonrpc: "2.0", id: "t", method: task, params: {} });
    expect((await gw.next((m) => m.id === "t")).error?.code).toBe(-32601);
    await expectCut(gw, `refused ${JSON.stringify(cut(task))}: portcullis does not offer tasks`, "/");

    const variant = long(" ", "tools/call");
    gw.send({ jsonrpc: "2.0", id: "v", method: variant, params: {} });
    expect((await gw.next((m) => m.id === "v")).error?.code).toBe(-32601);
    await expectCut(gw, `refused ${JSON.stringify(cut(variant))}: not a known method`, " ");

    const notification = long("n");
    gw.send({ jsonrpc: "2.0", method: notification });
    await expectCut(
      gw,
      `dropped a notification of ${JSON.stringify(cut(notification))} from the client`,
      "n",
    );
  }, 30_000);

  it("a request under an id in use: its method", async () => {
    // slow/never stays at the server, its id in flight
    const gw = await initializedShared();
    gw.send({ jsonrpc: "2.0", id: "dup", method: "slow/never", params: {} });
    const method = long("m");
    gw.send({ jsonrpc: "2.0", id: "dup", method, params: {} });
    expect((await gw.next((m) => m.id === "dup")).error?.code).toBe(-32600);
    await expectCut(gw, `refused ${cut(method)} "dup": that id is already in use`, "m");
  }, 30_000);

  it("a client's answer under an unknown id: that id", async () => {
    const gw = await initializedShared();
    const id = long("r");
    gw.send({ jsonrpc: "2.0", id, result: {} });
    await expectCut(
      gw,
      `dropped a response from the client with an unknown id ${cut(JSON.stringify(id))}`,
      "r",
    );
  }, 30_000);

  it("a tools/call held for the catalog: its tool name", async () => {
    // tools/list never answered: the catalog is not fetched, and a call waits for it
    const gw = gateway({ "tools/list": null });
    await gw.initialize();
    const name = long("c");
    gw.send({ jsonrpc: "2.0", id: "held", method: "tools/call", params: { name, arguments: {} } });
    await expectCut(gw, `holding tools/call ${cut(JSON.stringify(name))}`, "c");
  }, 30_000);

  it("a server's answer passed on as the server's: the client's method", async () => {
    // an error with data.error passes for the gateway's own: said to be the server's, and logged
    const method = FORGED_ERROR_METHOD;
    const gw = await initializedShared();
    gw.send({ jsonrpc: "2.0", id: "z", method, params: {} });
    await gw.next((m) => m.id === "z");
    await expectCut(gw, `the server answered ${cut(method)} with an error that has a data.error member`, "z");
  }, 30_000);

  it("a server's request under an id in use: its method and id", async () => {
    const gw = await initializedShared();
    const id = long("k");
    const method = long("w");
    const request = JSON.stringify({ jsonrpc: "2.0", id, method, params: {} });
    // the server writes the same request twice: the first goes to the client (unanswered here)
    gw.send({ jsonrpc: "2.0", id: "s", method: "raw/send", params: { lines: [request, request] } });
    await expectCut(
      gw,
      `refused a ${cut(method)} request of the server: its id ${cut(JSON.stringify(id))} is already in use`,
      "w",
    );
    expect(gw.stderr()).not.toContain("k".repeat(100));
  }, 30_000);

  it("a client's notification a remote server refused: its method", async () => {
    // run --url: the server answers the notification's POST 400 (hostile-http-open.mjs)
    const server = await startFixture(
      {},
      null,
      0,
      join(REPO, "test", "fixtures", "servers", "hostile-http-open.mjs"),
    );
    cleanup.push(() => server.kill());
    const gw = rawGateway({ args: ["--label", "cut", "--url", server.url, "--approval", "none"] });
    cleanup.push(() => gw.close());
    await gw.initialize();
    const method = long("f", "notifications/refuse");
    gw.send({ jsonrpc: "2.0", method });
    await expectCut(gw, `the remote server refused a ${cut(method)} (HTTP 400)`, "f");
  }, 30_000);

  it("a client's answer the HTTP front refused (run --listen): its id", async () => {
    const l = await startListener(fixtureCommand("rawlines"), {
      args: ["--approval", "none", "--max-message-bytes", "4096"],
    });
    cleanup.push(() => l.close());
    const session = await openSession(l);
    // (the front reads a refused body's id up to 1,024 characters: src/relay/idScan.ts)
    const id = "a".repeat(1000);
    // an answer over the size limit: 413, and its id said on the gateway's stderr
    const r = await raw(l, {
      headers: l.headers({ "mcp-session-id": session }),
      body: JSON.stringify({ jsonrpc: "2.0", id, result: { pad: "x".repeat(5000) } }),
    });
    expect(r.status).toBe(413);
    const line = `refused the client's answer to the server's request ${cut(JSON.stringify(id))} (too-large)`;
    await waitFor(() => l.stderr().includes(line), 10_000, `the gateway's line ${line}`);
    expect(l.stderr()).not.toContain("a".repeat(100));
  }, 30_000);
});
