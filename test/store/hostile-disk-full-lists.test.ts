// The listing commands on a full disk: `catalog`, `egress`, `passkey list`, `vault list`,
// `grants` and `approvals` only read the store (but for `approvals` closing the requests nobody can decide any
// more, which can wait), and a full disk is when a user looks at what the gateways did. A 4 MiB
// tmpfs mounted for the test (root only: where mount is refused, each test skips and says why),
// the state directory in it, a gateway that recorded a catalog and left a request pending when it
// was killed, then a file written until ENOSPC. What must hold: each of them reads the store
// (each said "the disk is full", exit 2), their --json output is JSON on stdout, and one line on
// stderr says the store, that the disk is full, what was not done (the abandoned request not
// closed, named) and what to do; once space is back the request is closed and the chain verifies.
// Real processes throughout.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { storedPending } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { type SmallDisk, smallDisk } from "../helpers/smallDisk.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const TOOLS = '[{"name":"say","inputSchema":{"type":"object"}}]';

/**
 * A gateway on the small disk that listed its catalog and asked for approval of a call, killed
 * while the request was pending: the request's gateway is gone, so a lister closes it. Returns
 * the request's id.
 */
async function abandonedRequest(disk: SmallDisk): Promise<string> {
  const gw = rawGateway({
    args: ["--label", "full", "--approval", "per-call", "--", NODE, FIXTURES.rawlines],
    env: { FIXTURE_RAW_LOG: join(tempDir(), "raw.log"), FIXTURE_RAW_TOOLS: TOOLS },
    stateDir: disk.stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  expect((await gw.request("tools/list")).result).toMatchObject({ tools: [{ name: "say" }] });
  gw.send({ jsonrpc: "2.0", id: "held", method: "tools/call", params: { name: "say", arguments: {} } });
  const [request] = await waitFor(() => {
    const p = storedPending(disk.stateDir);
    return p.length > 0 && p;
  });
  gw.kill("SIGKILL");
  await gw.exited;
  return request!.request;
}

const LISTS = [
  ["catalog", "list", "full", "--json"],
  ["catalog", "show", "full", "--json"],
  ["egress", "--json"],
  ["passkey", "list", "--json"],
  ["vault", "list", "--json"],
  ["grants", "--json"],
  ["approvals", "--json"],
];

describe("the listing commands while the store's disk is full", () => {
  it("with no gateway running: each reads the store, --json on stdout, one line on stderr saying the disk is full and what was not done", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    const { stateDir } = disk;
    const db = join(stateDir, "portcullis.db");
    const request = await abandonedRequest(disk);
    // a reader that closes the store last leaves it as its file alone (the killed gateway's log
    // checkpointed into it), the request still pending: nothing but `approvals` closes it
    expect((await runCli(["audit", "verify"], { stateDir })).code).toBe(0);
    expect(existsSync(`${db}-wal`)).toBe(false);
    const before = new Map<string, unknown>();
    for (const args of LISTS.filter((a) => a[0] !== "approvals")) {
      const r = await runCli(args, { stateDir });
      expect(r.code, r.stderr).toBe(0);
      before.set(args.join(" "), JSON.parse(r.stdout));
    }

    disk.fill();
    for (const args of LISTS) {
      const r = await runCli(args, { stateDir });
      // was: exit 2, "the store … cannot be written: the disk is full"
      expect({ args, code: r.code }).toEqual({ args, code: 0 });
      const command = args.slice(0, ["catalog", "passkey", "vault"].includes(args[0]!) ? 2 : 1).join(" ");
      expect(r.stderr).toMatch(
        new RegExp(
          `^portcullis ${command}: the store ${db} cannot be written: the disk is full\\. Read as it is, without writing; .*To fix it: free space on the file system that holds ${stateDir} .*\\n$`,
        ),
      );
      expect(r.stderr.split("\n")).toHaveLength(2); // one line
      const out = JSON.parse(r.stdout) as { requests?: { request: string }[] };
      if (args[0] === "approvals") {
        // listed, and said not closed, by its id
        expect(out.requests?.map((q) => q.request)).toEqual([request]);
        expect(r.stderr).toContain(`1 approval request that can no longer be decided`);
        expect(r.stderr).toContain(`was not closed: ${request};`);
      } else expect(out).toEqual(before.get(args.join(" ")));
    }

    // nothing was written half: with space back, the request is closed and the chain verifies
    disk.free();
    const after = await runCli(["approvals", "--json"], { stateDir });
    expect({ code: after.code, stderr: after.stderr }).toEqual({ code: 0, stderr: "" });
    expect(JSON.parse(after.stdout)).toEqual({ requests: [] });
    const verify = await runCli(["audit", "verify"], { stateDir });
    expect(verify.code, verify.stderr).toBe(0);
  });

  it("a killed gateway's -shm left: approvals opens the store, its closing is refused, said once in the store's sentence", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    const { stateDir } = disk;
    const db = join(stateDir, "portcullis.db");
    const request = await abandonedRequest(disk);
    expect(existsSync(`${db}-shm`)).toBe(true);
    disk.fill();
    const r = await runCli(["approvals", "--json"], { stateDir });
    expect(r.code, r.stderr).toBe(0);
    expect(
      (JSON.parse(r.stdout) as { requests: { request: string }[] }).requests.map((q) => q.request),
    ).toEqual([request]);
    // was: "could not close abandoned approval requests: database or disk is full"
    expect(r.stderr).toMatch(
      new RegExp(`^portcullis approvals: the store ${db} cannot be written: the disk is full\\. `),
    );
    expect(r.stderr).toContain(`was not closed: ${request};`);
    expect(r.stderr).not.toContain("database or disk is full");
    expect(r.stderr.split("\n")).toHaveLength(2);
    disk.free();
    const after = await runCli(["approvals", "--json"], { stateDir });
    expect(JSON.parse(after.stdout)).toEqual({ requests: [] });
    expect((await runCli(["audit", "verify"], { stateDir })).code).toBe(0);
  });
});
