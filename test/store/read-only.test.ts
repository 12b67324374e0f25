// A store the gateway cannot write: refused in one sentence before any server is launched, and a
// store that refuses the agent run's row at the client's first request answered like any store
// failure (audit_unavailable), never a crash with a stack trace. Real CLI processes; the read-only
// file binds only a user who is not root (test/helpers/otherUser.ts).
import { chmodSync, existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { unprivilegedUser } from "../helpers/otherUser.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe("a read-only store file in a writable directory", () => {
  it("run refuses it in one sentence (exit 2) before the server is launched; doctor reports it", async (ctx) => {
    const stateDir = newStateDir();
    const user = unprivilegedUser([stateDir]);
    if (!user) return ctx.skip("no user whom file modes bind can run the built CLI here");
    const as = { stateDir, env: { HOME: stateDir }, ...user.spawn };
    expect((await runCli(["status"], as)).code).toBe(0); // the store, made and closed
    const db = join(stateDir, "portcullis.db");
    chmodSync(db, 0o444);
    // SQLite opens such a file read-only without a word: the gateway used to launch the server,
    // warn that server_started could not be recorded, and crash at the client's initialize
    const launched = join(stateDir, "launched");
    const server = `require("node:fs").writeFileSync(${JSON.stringify(launched)}, "x")`;
    const r = await runCli(["run", "--label", "ro", "--", NODE, "-e", server], as);
    expect(r.stderr).toBe(
      `portcullis run: the store ${db} cannot be written (the file, or its directory, is read-only). To fix it: make it and its directory writable by their owner (chmod u+w ${db} ${stateDir}; on a read-only file system, remount it read-write).\n`,
    );
    expect(r.code).toBe(2);
    expect(existsSync(launched)).toBe(false);
    const doctor = await runCli(["doctor", "--json"], as);
    expect(doctor.code).toBe(1);
    const report = JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string }[] };
    expect(report.findings).toContainEqual(
      expect.objectContaining({
        ok: false,
        what: `the store ${db} cannot be written (the file, or its directory, is read-only)`,
      }),
    );
  });
});

describe("a store that refuses the agent run's row", () => {
  it("the request is refused audit_unavailable, the next one too, and the gateway keeps running", async () => {
    const stateDir = newStateDir();
    expect((await runCli(["status"], { stateDir })).code).toBe(0);
    const store = new Database(join(stateDir, "portcullis.db"));
    store.exec(
      "CREATE TRIGGER no_runs BEFORE INSERT ON runs BEGIN SELECT RAISE(ABORT, 'runs refused by the test'); END",
    );
    store.close();
    const gw = rawGateway({
      args: ["--label", "norun", "--approval", "none", "--", NODE, "-e", "setInterval(() => {}, 1000)"],
      stateDir,
    });
    cleanup.push(() => gw.close());
    for (const method of ["initialize", "tools/list"]) {
      const answer = await gw.request(method, method === "initialize" ? initializeParams() : undefined);
      expect(answer.error?.code).toBe(-32603);
      expect(answer.error?.data).toMatchObject({
        error: "audit_unavailable",
        reason: expect.stringContaining("runs refused by the test"),
      });
    }
    expect(gw.stderr()).not.toMatch(/ {4}at |SqliteError/);
    gw.closeStdin();
    expect((await gw.exited).code).toBe(0);
  });
});

function initializeParams(): Record<string, unknown> {
  return {
    protocolVersion: "2025-11-25",
    capabilities: {},
    clientInfo: { name: "portcullis-raw-peer", version: "1.0.0" },
  };
}

describe("a store this user may read but not write (a copy handed to a reviewer, a backup)", () => {
  it("audit verify reads it as it is, creates nothing beside it, and still finds a record altered", async (ctx) => {
    const stateDir = newStateDir();
    // a gateway's records: its run, its server's start and end
    const gw = rawGateway({
      args: ["--label", "ro", "--approval", "none", "--", NODE, FIXTURES.echo],
      stateDir,
    });
    await gw.initialize();
    gw.closeStdin();
    expect((await gw.exited).code).toBe(0);
    const db = join(stateDir, "portcullis.db");
    const user = unprivilegedUser([stateDir]);
    if (!user) return ctx.skip("no user whom file modes bind can run the built CLI here");
    const as = { stateDir, env: { HOME: stateDir }, ...user.spawn };
    const readOnly = () => {
      chmodSync(db, 0o400);
      chmodSync(stateDir, 0o500);
    };
    const writable = () => {
      chmodSync(stateDir, 0o700);
      chmodSync(db, 0o600);
    };
    cleanup.push(writable);
    readOnly();
    const before = readdirSync(stateDir).sort();
    const ok = await runCli(["audit", "verify", "--json"], as);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    const records = (JSON.parse(ok.stdout) as { ok: boolean; records: number }).records;
    expect(JSON.parse(ok.stdout)).toMatchObject({ ok: true });
    expect(records).toBeGreaterThan(2);
    expect(readdirSync(stateDir).sort()).toEqual(before);

    // It is the store that is read, not a stand-in: one altered record fails the verification.
    writable();
    const store = new Database(db);
    store.exec("DROP TRIGGER audit_records_no_update");
    // one byte flipped (set to a fixed value, it was already that value once in 256 runs)
    const record = store.prepare("SELECT record FROM audit_records WHERE seq = 1").pluck().get() as Buffer;
    const at = record.length - 10;
    record[at] = (record[at] as number) ^ 0xff;
    store.prepare("UPDATE audit_records SET record = ? WHERE seq = 1").run(record);
    store.close();
    readOnly();
    const altered = await runCli(["audit", "verify", "--json"], as);
    expect(altered.code).toBe(1);
    expect(JSON.parse(altered.stdout)).toMatchObject({ ok: false });

    // A command that writes is still refused, naming the file.
    const run = await runCli(["run", "--label", "ro", "--", NODE, "-e", ""], as);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(`the store ${db} cannot be written`);
  });
});
