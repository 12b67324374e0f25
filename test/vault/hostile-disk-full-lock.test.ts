// `vault set` (and every command that takes the vault's lock file) on a full disk while the store
// is open elsewhere (a running gateway keeps its -shm file, so the store itself still opens): the
// lock file is created and its owner cannot be written into it (ENOSPC). Was: "internal error:
// Error: ENOSPC: no space left on device, write", exit 70, an empty vault.lock left behind that
// held the next vault command back for 5 s. Must be: one sentence saying the disk is full, exit 2,
// no lock file left, the old secret kept and still held by the running holder.
import { existsSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { smallDisk } from "../helpers/smallDisk.js";
import { passphraseEnv } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

describe("the vault's lock on a full disk", () => {
  it("vault set says the disk is full, exit 2, leaves no lock file, keeps the old value held", async (ctx) => {
    const disk = smallDisk(cleanup);
    if (typeof disk === "string") return ctx.skip(disk);
    const { stateDir } = disk;
    const env = passphraseEnv();
    const set = (value: string) =>
      runCli(["vault", "set", "tok", "--from-stdin", "--deliver", "env"], {
        stateDir,
        env,
        input: `${value}\n`,
      });
    expect((await set("old-value-1234567")).code).toBe(0);
    expect((await runCli(["unlock", "--for", "5m"], { stateDir, env })).code).toBe(0);
    cleanup.push(async () => {
      await runCli(["lock"], { stateDir, env });
    });
    // the store open in another process, as a running gateway keeps it (its -shm file there)
    const gateway = new Database(join(stateDir, "portcullis.db"));
    cleanup.push(() => {
      gateway.close();
    });
    gateway.prepare("SELECT count(*) FROM vault_secrets").get();

    disk.fill();
    const r = await set("new-value-7654321");
    expect(r.stderr).not.toMatch(/internal error| {4}at /);
    expect(r.stderr).toMatch(/^portcullis vault set: .*the disk is full/);
    expect(r.stderr.split("\n")).toHaveLength(2);
    expect(r.code).toBe(2);
    expect(existsSync(join(stateDir, "vault.lock"))).toBe(false);

    disk.free();
    const list = await runCli(["vault", "list", "--json"], { stateDir, env });
    expect(list.code, list.stderr).toBe(0);
    const secrets = (JSON.parse(list.stdout) as { secrets: { name: string; bytes: number; held: unknown }[] })
      .secrets;
    expect(secrets).toEqual([
      expect.objectContaining({ name: "tok", bytes: "old-value-1234567".length, held: true }),
    ]);
    expect((await set("new-value-7654321")).code).toBe(0);
  });
});
