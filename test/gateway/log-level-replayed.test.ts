// The client's logging/setLevel across server processes: a new process logs at its own default
// level, so the gateway sends it the client's latest accepted level right after its replayed
// handshake, as its own request (the answer is not relayed). Before, a client that set its level
// once got the new process's default after a rebuild. Real gateway (`--on-change restart`), raw
// client, the v2-SDK fixture modern.mjs with FIXTURE_LOGGING=1 (its `level` tool says the level
// the process was set to), copied to a directory of the test's own so that it can be rebuilt.
import { appendFileSync, copyFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The level the server process behind the gateway reports, and its pid. */
async function level(gw: RawGateway): Promise<{ level: string; pid: number }> {
  for (let i = 0; i < 20; i++) {
    await gw.request("tools/list", {}, 20_000);
    const answer: WireMessage = await gw.request("tools/call", { name: "level", arguments: {} }, 20_000);
    if ((answer.error?.data as { error?: string } | undefined)?.error === "catalog_stale") continue;
    const text = (answer.result as { content?: { text: string }[] } | undefined)?.content?.[0]?.text;
    if (text === undefined) throw new Error(`level: ${JSON.stringify(answer)}`);
    return JSON.parse(text) as { level: string; pid: number };
  }
  throw new Error("level kept being refused catalog_stale");
}

describe("the client's logging level across server processes", () => {
  it("a rebuilt server is set to the level the client chose: the gateway sends its last logging/setLevel after the replayed handshake, and relays no answer of its own", async () => {
    const dir = tempDir();
    const server = join(dir, "server.mjs");
    copyFileSync(FIXTURES.modern, server);
    const gw = rawGateway({
      args: ["--label", "levels", "--approval", "none", "--on-change", "restart", "--", NODE, server],
      env: { FIXTURE_LOGGING: "1" },
    });
    cleanup.push(
      () => gw.close(),
      () => removeDir(dir),
    );
    await gw.initialize({}, 20_000);
    const before = await level(gw);
    expect(before.level).toBe("default");
    expect((await gw.request("logging/setLevel", { level: "error" }, 20_000)).error).toBeUndefined();
    expect((await gw.request("logging/setLevel", { level: "warning" }, 20_000)).error).toBeUndefined();
    // a level the server refuses is not the one kept
    expect((await gw.request("logging/setLevel", { level: "loud" }, 20_000)).error).toBeDefined();
    expect(await level(gw)).toEqual({ level: "warning", pid: before.pid });

    // rebuilt: the gateway restarts it, and replays the handshake, then the level
    appendFileSync(server, "\n// rebuilt\n");
    await waitFor(() => /new execution epoch/.test(gw.stderr()) || undefined, 30_000, "the new epoch");
    const after = await waitFor(
      async () => {
        const now = await level(gw);
        return now.pid !== before.pid ? now : undefined;
      },
      30_000,
      "the rebuilt process",
    );
    expect(after.level).toBe("warning");
    // the client got one answer per request of its own: none for the gateway's setLevel
    const answers = gw.messages().filter((m) => m.method === undefined);
    expect(answers.filter((m) => typeof m.id !== "string" || !m.id.startsWith("raw-"))).toEqual([]);
    expect(gw.stderr()).not.toMatch(/unhandled|TypeError|at .*\.js:\d+/i);
  }, 90_000);
});
