// A server reached by `run --url` that answers each tools/call on an SSE stream and then keeps
// that stream open (MCP: the server SHOULD close it after the response; nothing makes it). The
// call is answered, and nothing more is owed on that stream: the gateway should not hold its
// connection. It did: every answered call kept one TCP connection (and one file descriptor of the
// gateway's) for as long as the server liked, so connections grew with the calls without bound,
// until the gateway ran out of descriptors (EMFILE), which it took for the session's loss: a new
// epoch minted by the gateway's own exhaustion, and the run's grants stale.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir, waitFor } from "../helpers/files.js";
import { REPO } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { startFixture } from "../http/upstreamFixture.js";

const OPEN = join(REPO, "test", "fixtures", "servers", "hostile-http-open.mjs");

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const CALLS = 30;

describe("a remote server that keeps each answered call's SSE stream open", () => {
  it("does not make the gateway hold one connection per answered call", async () => {
    const log = join(tempDir("pc-open-streams-"), "conn.json");
    const server = await startFixture({ FIXTURE_CONN_LOG: log }, null, 0, OPEN);
    cleanup.push(() => server.kill());
    const gw = rawGateway({ args: ["--label", "open", "--url", server.url, "--approval", "none"] });
    cleanup.push(() => gw.close());
    await gw.initialize();
    expect((await gw.request("tools/list")).result).toBeDefined();

    for (let i = 0; i < CALLS; i++) {
      const r = await gw.request("tools/call", { name: "echo", arguments: { text: `n${i}` } });
      expect(r.result?.content?.[0]?.text, JSON.stringify(r)).toBe(`echo n${i}`);
    }
    // every call is answered: a few kept-alive connections at most are left, not one per call ever
    // made (the fixture writes the count as connections open and close)
    // (read while the fixture rewrites it, the file may be cut short: then read again)
    let last = Number.POSITIVE_INFINITY;
    const open = () => {
      try {
        last = (JSON.parse(readFileSync(log, "utf8")) as { open: number }).open;
      } catch {}
      return last;
    };
    await waitFor(
      () => open() <= 4,
      10_000,
      `at most 4 connections open after ${CALLS} answered calls`,
    ).catch(() =>
      expect(last, `connections open to the server after ${CALLS} answered calls`).toBeLessThanOrEqual(4),
    );
    // the server is told once, on stderr, that it should close what it answered
    expect(gw.stderr().match(/keeps the SSE stream of a request open after answering it/g)).toHaveLength(1);
  }, 60_000);
});
