// A server/discover probe makes the era modern only provisionally (clientSession.ts, eraByProbe):
// no path may fetch then. canFetch() answered true for any modern session, so another path than
// the client's requests (Gateway.reconnect after a respawn, a server's
// notifications/tools/list_changed) sent the gateway's own subscriptions/listen and tools/list to
// a server the client may still initialize in the legacy era. It answers false while the probe
// alone decides.
import { existsSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const ENVELOPE = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientInfo": { name: "in-place", version: "1" },
  "io.modelcontextprotocol/clientCapabilities": {},
};

describe("a probe answered with an error, then the server process replaced before the client's initialize", () => {
  it("the new process gets nothing of the gateway's own before the client's initialize", async () => {
    const dir = tempDir();
    cleanup.push(() => removeDir(dir));
    const log = join(dir, "methods.jsonl");
    const refuse = join(dir, "refuse");
    writeFileSync(refuse, "Method not found: server/discover");
    const gw = rawGateway({
      args: ["--label", "lenient", "--approval", "none", "--", ...fixtureCommand("lenient")],
      env: { FIXTURE_METHOD_LOG: log, FIXTURE_INIT_REFUSE: refuse },
    });
    cleanup.push(() => gw.close());
    const methods = () =>
      (existsSync(log) ? readFileSync(log, "utf8") : "")
        .split("\n")
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { method: string; pid: number });

    const probe = await gw.request("server/discover", { _meta: ENVELOPE }, 20_000);
    expect(probe.error).toBeDefined();
    rmSync(refuse);
    const first = methods()[0]!.pid;
    process.kill(first, "SIGKILL");
    // the replacement comes up (and is brought to the session) while the client has not yet
    // sent initialize: give it the time a reconnection takes
    await new Promise((r) => setTimeout(r, 4000));
    const init = await gw.initialize({
      protocolVersion: "2025-11-25",
      capabilities: {},
      clientInfo: { name: "in-place", version: "1" },
    });
    expect(init.result).toBeDefined();
    const second = await waitFor(
      () => methods().find((m) => m.pid !== first)?.pid,
      30_000,
      "a second process",
    );
    const onSecond = methods()
      .filter((m) => m.pid === second)
      .map((m) => m.method);
    expect(onSecond.slice(0, Math.max(0, onSecond.indexOf("initialize")))).toEqual([]);
  }, 60_000);
});
