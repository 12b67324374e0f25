// What a client whose FIRST initialize was lost to an epoch change (its server process went away
// holding it, answered epoch_transition) is told when it asks for tools before it sends initialize
// again: not_initialized, saying its initialize was lost and must be sent again. Before, the reason
// said "no initialize from this client yet", which was untrue: the client did send one. Real
// gateway, the crashy fixture (its first process exits as the initialize arrives).
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const INIT = { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "raw", version: "1" } };

describe("a client's first initialize lost to an epoch change", () => {
  it("a request before the client sends initialize again is refused not_initialized saying its initialize was lost, not that it never sent one", async () => {
    const dir = tempDir("portcullis-first-init-");
    cleanup.push(() => removeDir(dir));
    const peer = rawGateway({
      args: ["--label", "first-init", "--approval", "none", "--", ...fixtureCommand("crashy")],
      env: { FIXTURE_EXIT_AT_INITIALIZE: join(dir, "exited"), PORTCULLIS_RESPAWN_BACKOFF_MS: "20" },
    });
    cleanup.push(() => peer.close());
    // a client that never sent initialize is told so
    const never = await peer.request("tools/list", undefined, 20_000);
    expect(never.error?.data).toMatchObject({
      error: "not_initialized",
      reason: "no initialize from this client yet",
    });
    const lost = await peer.request("initialize", INIT, 20_000);
    expect(lost.error).toMatchObject({ data: { error: "epoch_transition" } });
    for (const method of ["tools/list", "tools/call"]) {
      const early = await peer.request(
        method,
        method === "tools/call" ? { name: "noop", arguments: {} } : undefined,
        20_000,
      );
      expect(early.error, JSON.stringify(early)).toMatchObject({
        code: -32600,
        data: {
          error: "not_initialized",
          reason:
            "the client's initialize was lost with its server process (answered epoch_transition) and it has not sent initialize again",
          retry: expect.stringMatching(/^send initialize again/),
        },
      });
      expect(early.error?.message).toMatch(/^The client's initialize was lost to an epoch change/);
      expect(early.error?.message).toContain(`before ${method}`);
    }
    expect(peer.stderr()).toMatch(
      /refused tools\/list .*: the client's initialize was lost to an epoch change and it has not sent initialize again/,
    );
    const init = await peer.initialize({}, 20_000);
    expect(init.result, JSON.stringify(init)).toMatchObject({ serverInfo: { name: "crashy-fixture" } });
  }, 90_000);
});
