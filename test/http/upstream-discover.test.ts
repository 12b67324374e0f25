// A server reached by `run --url` in the 2026-07-28 era says who it is in each `server/discover`
// answer (`_meta["io.modelcontextprotocol/serverInfo"]`, as the v2 SDK writes it). The record
// takes it from the first, and a different one within the same epoch ends that epoch: the code
// answering is not the code that was recorded (and approved).
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { modernMeta } from "../helpers/modernMeta.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";
import { gatewayRow } from "../helpers/status.js";
import { HOSTILE, startFixture } from "./upstreamFixture.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const ENVELOPE = {
  _meta: modernMeta({}, { name: "raw", version: "1" }),
};

interface Row {
  state: string;
  epoch: string;
  record: { remote: { serverInfo: { name: string; version: string } | null } };
}

describe("a remote server's serverInfo in the 2026-07-28 era", () => {
  it("is recorded from server/discover, and a different one within the epoch ends it", async () => {
    const server = await startFixture({}, null, 0, HOSTILE);
    cleanup.push(() => server.kill());
    const peer: RawPeer & { stateDir: string } = rawGateway({
      args: ["--label", "hostile", "--url", server.url, "--approval", "none"],
    });
    cleanup.push(() => peer.close());
    // the row as `portcullis status --json` shows it, read in the test process (listGateways, as
    // status reads it) until it holds: the CLI was a process of its own (about 0.2 s of CPU) at
    // every look while the case waited
    const row = async (until: (r: Row) => boolean, what: string) =>
      (await gatewayRow(peer.stateDir, (r) => until(r as unknown as Row), what, 20_000)) as unknown as Row;

    const first = await peer.request("server/discover", ENVELOPE);
    expect(first.error).toBeUndefined();
    const listed = await peer.request("tools/list", ENVELOPE, 20_000); // as a client goes on
    expect(listed.error).toBeUndefined();
    const before = await row((r) => r.record?.remote.serverInfo != null, "serverInfo in the record");
    expect(before.record.remote.serverInfo).toMatchObject({ name: "hostile", version: "0.0.1" });

    // the server now says it is something else
    const call = await peer.request("tools/call", {
      name: "bad",
      arguments: { mode: "reinvent" },
      ...ENVELOPE,
    });
    expect(call.error).toBeUndefined();
    await peer.request("server/discover", ENVELOPE);
    const after = await row((r) => r.epoch !== before.epoch, "a new epoch");
    expect(after.epoch).not.toBe(before.epoch);
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => peer.stderr().includes("describes itself differently"),
      20_000,
      "the gateway's line on the changed description",
    );
    expect(peer.stderr()).toContain("describes itself differently");
  });
});
