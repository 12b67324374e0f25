// A request to a server reached by `run --url` that the gateway gives up on (its own tools/list
// past CATALOG_TIMEOUT_MS, shortened here) or that the client cancels: besides the
// notifications/cancelled the server is sent, the POST that carried it (and the SSE stream opened
// for its answer) is closed, so a server that never answers cannot hold a connection of the
// gateway's for ever, one per request given up on. Other requests of the session are not
// disturbed, and the epoch stays. Real gateway, real fixture servers (the hostile one counts
// what it holds and when the gateway drops it), raw client.
import { afterEach, describe, expect, it } from "vitest";
import { readJsonLines, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { rawGateway } from "../helpers/raw.js";
import { HOSTILE, startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface ConnEvent {
  event: "held" | "closed";
  id: unknown;
}

function text(m: WireMessage): string | undefined {
  return (m.result as { content?: { text?: string }[] } | undefined)?.content?.[0]?.text;
}

describe("a tools/list the gateway gave up on, at a server reached by URL", () => {
  for (const how of ["json", "sse"] as const) {
    it(`its POST is closed (${how}: ${how === "json" ? "no status line ever" : "an SSE stream left open"}); a call under way on the session is answered, and the epoch stays`, async () => {
      const log = `${tempDir("pc-given-up-")}/conn.jsonl`;
      const server = await startFixture({ FIXTURE_LIST_HANG: how, FIXTURE_CONN_LOG: log }, null, 0, HOSTILE);
      cleanup.push(() => server.kill());
      const gw = rawGateway({
        args: ["--url", server.url, "--approval", "none"],
        env: { PORTCULLIS_CATALOG_TIMEOUT_MS: "1000" },
      });
      cleanup.push(() => gw.close());
      await gw.initialize();
      expect((await gw.request("tools/list")).result).toBeDefined();

      // a call whose answer the server holds back until "release": in flight all along
      gw.send({
        jsonrpc: "2.0",
        id: "held-call",
        method: "tools/call",
        params: { name: "bad", arguments: { mode: "hold" } },
      });
      // the server says its tools changed: the gateway lists again, and the server holds that list
      expect(text(await gw.request("tools/call", { name: "bad", arguments: { mode: "relist" } }))).toBe(
        "relisted",
      );
      const conn = () => readJsonLines<ConnEvent>(log);
      const held = await waitFor(
        () => conn().find((e) => e.event === "held"),
        10_000,
        "the server to hold the re-list",
      );
      // given up on after 1 s: its connection is dropped by the gateway, not kept for ever
      await waitFor(
        () => conn().find((e) => e.event === "closed" && e.id === held.id),
        10_000,
        "the gateway to close the POST of the tools/list it gave up on",
      );
      // the gateway closes the POST before it logs why, and its stderr is another pipe: wait for
      // the line (the server can note the close before the gateway's line is read)
      await waitFor(
        () => /the server did not answer tools\/list within 1 s/.test(gw.stderr()),
        10_000,
        "the gateway's line saying it gave up on the re-list",
      );

      // the re-list is tried again (answered this time), and the held call is still under way on
      // the session: released, it gets its own answer
      const released = await waitFor(
        async () => {
          const r = await gw.request("tools/call", { name: "bad", arguments: { mode: "release" } }, 20_000);
          return text(r)?.startsWith("released") ? r : undefined;
        },
        30_000,
        "a call once the catalog is served again",
      );
      expect(text(released)).toBe("released 1");
      const heldAnswer = await gw.next((m) => m.id === "held-call", 10_000);
      expect(text(heldAnswer)).toBe("held ok");
      expect(gw.stderr()).not.toMatch(/remote session ended/);
      expect(gw.stderr()).not.toMatch(/TypeError|Unhandled|at .*\.js:\d+/);
    }, 60_000);
  }
});

describe("a call the client cancels, at a server reached by URL", () => {
  it("its POST is closed once the server is told (the SDK's server never answers a cancelled request); the epoch stays", async () => {
    const dir = tempDir("pc-given-up-");
    const log = `${dir}/conn.jsonl`;
    const record = `${dir}/record.jsonl`;
    const server = await startFixture({ FIXTURE_CONN_LOG: log, FIXTURE_RECORD: record }, null);
    cleanup.push(() => server.kill());
    const gw = rawGateway({ args: ["--url", server.url, "--approval", "none"] });
    cleanup.push(() => gw.close());
    await gw.initialize();
    expect((await gw.request("tools/list")).result).toBeDefined();

    gw.send({ jsonrpc: "2.0", id: "c1", method: "tools/call", params: { name: "hang", arguments: {} } });
    await waitFor(
      () => readJsonLines<{ tool: string }>(record).some((r) => r.tool === "hang"),
      10_000,
      "the server to receive the call",
    );
    expect(readJsonLines<ConnEvent & { method: string }>(log)).toEqual([]);
    gw.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId: "c1" } });
    await waitFor(
      () => readJsonLines<{ event: string; method: string }>(log).some((e) => e.method === "POST"),
      10_000,
      "the gateway to close the POST of the cancelled call",
    );

    const echo = await gw.request("tools/call", { name: "echo", arguments: { message: "after" } });
    expect(text(echo)).toBe("Echo: after");
    // the cancelled call is never answered, and nothing ended the epoch
    expect(gw.messages().filter((m) => m.id === "c1")).toEqual([]);
    expect(gw.stderr()).not.toMatch(/remote session ended/);
    expect(gw.stderr()).not.toMatch(/TypeError|Unhandled|at .*\.js:\d+/);
  }, 60_000);
});

describe("a POST that carries no request, at a server reached by URL", () => {
  for (const how of ["sse", "none"] as const) {
    it(`is closed once its time is up when the server holds it (${how === "sse" ? "an SSE stream left open" : "no status line ever"}): nothing is owed back for a notification; the epoch stays`, async () => {
      const log = `${tempDir("pc-given-up-")}/conn.jsonl`;
      const server = await startFixture(
        { FIXTURE_NOTIFY_HANG: how, FIXTURE_CONN_LOG: log },
        null,
        0,
        HOSTILE,
      );
      cleanup.push(() => server.kill());
      // the time a held POST is let stay open, 10 s by default, is 1 s here: the test waits for it
      // to run out for four POSTs, and what it proves is that it runs out, not how long it is
      const gw = rawGateway({
        args: ["--url", server.url, "--approval", "none"],
        env: { PORTCULLIS_HELD_POST_MS: "1000" },
      });
      cleanup.push(() => gw.close());
      await gw.initialize();
      expect((await gw.request("tools/list")).result).toBeDefined();
      for (let i = 0; i < 3; i++) gw.send({ jsonrpc: "2.0", method: "notifications/roots/list_changed" });
      const events = () => readJsonLines<{ event: string; method: string }>(log);
      // notifications/initialized and the three the client sent: each held, each closed
      await waitFor(
        () => events().filter((e) => e.event === "held").length === 4,
        10_000,
        "the server to hold each notification's POST",
      );
      await waitFor(
        () => events().filter((e) => e.event === "closed").length === 4,
        30_000,
        "the gateway to close each notification's POST",
      );
      // (in any order: four sockets closed within milliseconds of each other, the server may log
      // their ends in another order than the gateway closed them)
      expect(
        events()
          .filter((e) => e.event === "closed")
          .map((e) => e.method)
          .sort(),
      ).toEqual([
        "notifications/initialized",
        "notifications/roots/list_changed",
        "notifications/roots/list_changed",
        "notifications/roots/list_changed",
      ]);
      // closed first, then said: the server's note of the close can come before the line is read
      const said =
        /held the POST of a notifications\/initialized open for 1 s; closed it \(nothing is owed back for one\)/;
      await waitFor(() => said.test(gw.stderr()), 10_000, "the gateway's line saying it closed a held POST");
      const call = await gw.request("tools/call", { name: "bad", arguments: { mode: "fine" } });
      expect(text(call)).toBe("ok fine");
      expect(gw.stderr()).not.toMatch(/remote session ended/);
      expect(gw.stderr()).not.toMatch(/TypeError|Unhandled|at .*\.js:\d+/);
    }, 60_000);
  }
});
