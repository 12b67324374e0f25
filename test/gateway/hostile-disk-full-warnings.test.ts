// A busy agent's gateway whose state directory's disk is full: every call is refused (its intent
// cannot be recorded), and so is every record of the refusal. The gateway's stderr (the agent
// host's log) said SQLite's words once per record ("audit: cannot record authorization_denied:
// database or disk is full", as often as calls came), never which store or what to do. What must
// hold: one warning naming the store, the full disk and the one thing to do (free space where the
// state directory is), then the later records counted in a line said at most every so often and
// at the gateway's end, and SQLite's phrase nowhere. A 4 MiB tmpfs mounted for the test (root
// only: where mount is refused the test skips and says why). Real processes throughout.
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { smallDisk } from "../helpers/smallDisk.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const TOOLS = '[{"name":"say","inputSchema":{"type":"object"}}]';
const CALLS = 30;

describe("a gateway's warnings while its disk is full", () => {
  it("say the store, the full disk and what to do once, then count the records not written; never SQLite's phrase", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    const { stateDir } = disk;
    const db = join(stateDir, "portcullis.db");
    const gw = rawGateway({
      args: ["--label", "full", "--approval", "none", "--", NODE, FIXTURES.rawlines],
      env: { FIXTURE_RAW_LOG: join(tempDir(), "raw.log"), FIXTURE_RAW_TOOLS: TOOLS },
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    expect((await gw.request("tools/call", { name: "say", arguments: { n: 0 } })).result).toEqual({});

    disk.fill();
    for (let n = 1; n <= CALLS; n++) {
      const refused = await gw.request("tools/call", { name: "say", arguments: { n } });
      expect(refused.error?.code).toBe(-32603);
    }
    gw.closeStdin();
    expect(await gw.exited).toEqual({ code: 0, signal: null });
    const stderr = gw.stderr();
    const lines = stderr.split("\n");

    expect(stderr).not.toContain("database or disk is full");
    const whole = lines.filter((l) => l.includes("warning: audit: cannot record"));
    // one, for the first record the disk refused (the first refused call's authorization_denied,
    // or the first call's result where it was written after the disk filled); the rest counted
    expect(whole, stderr).toHaveLength(1);
    expect(whole[0]).toMatch(/audit: cannot record (authorization_denied|tool_result): /);
    expect(whole[0]).toContain(`the store ${db} cannot be written: the disk is full.`);
    expect(whole[0]).toContain(`free space on the file system that holds ${stateDir}`);

    // the later ones: every refused call's record among them, in one line or a few (one per
    // interval, should the calls take longer than one)
    const counts = lines.filter((l) => /warning: audit: \d+ more records? not written/.test(l));
    expect(counts.length, stderr).toBeGreaterThanOrEqual(1);
    let denied = whole[0]?.includes("cannot record authorization_denied") ? 1 : 0;
    for (const l of counts) {
      expect(l).toContain(`the store ${db} cannot be written: the disk is full.`);
      denied += Number(/authorization_denied ×(\d+)/.exec(l)?.[1] ?? 0);
    }
    expect(denied).toBe(CALLS);
    // the gateway's other writes say the disk is full too, not SQLite's words
    for (const l of lines.filter((l) => /cannot update this gateway's row|the end of agent run/.test(l)))
      expect(l).toContain("the disk is full");

    disk.free();
    const verify = await runCli(["audit", "verify"], { stateDir });
    expect(verify.code, verify.stderr).toBe(0);
  });
});
