// `status` over a store that cannot be written (a read-only store file, or a read-only state
// directory): it reads the rows as they are, and says the store is read-only and what that stops
// (no gateway can open it to write its audit records: one started there refuses to start), on
// stderr in text and in a `store` member of --json. It used to show the rows in silence, as if
// all were well. Root ignores file modes: under root the commands run as `nobody`, owning the
// state directory (test/helpers/otherUser.ts); skipped only where that user cannot run the CLI.
import { chmodSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { unprivilegedUser } from "../helpers/otherUser.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

const GATEWAYS =
  "no gateway can open it to write its audit records: one started on this state directory refuses to start (exit 2) until it can";

describe("status over a store that cannot be written", () => {
  it("a read-only store file, then a read-only state directory: said in text and in --json, the rows still shown", async (ctx) => {
    const stateDir = newStateDir();
    const db = join(stateDir, "portcullis.db");
    // a gateway that ran and ended: a row for `status --all` to show
    const ran = await runCli(["run", "--label", "echo", "--", ...fixtureCommand("echo")], { stateDir });
    expect(ran.code, ran.stderr).toBe(0);
    const user = unprivilegedUser([stateDir]);
    if (!user)
      return ctx.skip("no user whom file modes bind (root ignores them; nobody cannot run the built CLI)");
    const as = { stateDir, env: { HOME: stateDir }, ...user.spawn };

    // writable: nothing said, and --json says so
    const fine = await runCli(["status", "--all", "--json"], as);
    expect(fine.stderr).toBe("");
    expect(JSON.parse(fine.stdout).store).toEqual({ writable: true });

    const problem = `the store ${db} cannot be written (the file, or its directory, is read-only).`;
    const fix = `make it and its directory writable by their owner (chmod u+w ${db} ${stateDir}; on a read-only file system, remount it read-write)`;
    const line = `portcullis status: ${problem} Read as it is, without writing; ${GATEWAYS}. To fix it: ${fix}.\n`;
    for (const readOnly of [
      () => chmodSync(db, 0o444),
      () => {
        chmodSync(db, 0o644);
        chmodSync(stateDir, 0o500);
      },
    ]) {
      readOnly();
      const text = await runCli(["status", "--all"], as);
      expect(text.code, text.stderr).toBe(0);
      expect(text.stdout).toMatch(/^echo {2}/m);
      expect(text.stderr).toBe(line);
      const json = await runCli(["status", "--all", "--json"], as);
      expect(json.code, json.stderr).toBe(0);
      expect(json.stderr).toBe(line);
      const report = JSON.parse(json.stdout) as { gateways: { serverLabel: string }[]; store: unknown };
      expect(report.gateways.map((g) => g.serverLabel)).toEqual(["echo"]);
      expect(report.store).toEqual({ writable: false, cause: "read-only", problem, gateways: GATEWAYS, fix });
      // what it says of the gateways is what a gateway meets
      const run = await runCli(["run", "--label", "echo", "--", ...fixtureCommand("echo")], as);
      expect(run.code).toBe(2);
      expect(run.stderr).toContain(problem.replace(/\.$/, ""));
    }
    chmodSync(stateDir, 0o700);
  });
});
