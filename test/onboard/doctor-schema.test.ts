// doctor and a store or a portcullis.json that a command would refuse, which doctor called
// healthy: a store whose migrations are all recorded but whose tables were dropped since (every
// command needing them failed "cannot be used (SQLITE_ERROR)"), and a portcullis.json in the
// working directory that does not load (run LABEL and drill refuse it). Real CLI processes.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir } from "../helpers/state.js";

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) removeDir(d);
  dirs = [];
});

interface Finding {
  ok: boolean;
  what: string;
  next: string;
  cause?: string;
}

describe("doctor: what a command would refuse", () => {
  it("a store with a dropped table: doctor names what is missing; the command says which and what to do", async () => {
    const stateDir = newStateDir();
    dirs.push(stateDir);
    const before = await runCli(["doctor", "--json"], { stateDir });
    expect(before.code, before.stdout).toBe(0);
    const db = new Database(join(stateDir, "portcullis.db"));
    db.exec("DROP TABLE grants");
    db.close();

    const doctor = await runCli(["doctor", "--json"], { stateDir });
    expect(doctor.code).toBe(1);
    const findings = (JSON.parse(doctor.stdout) as { findings: Finding[] }).findings;
    const schema = findings.find((f) => !f.ok && f.what.includes("of its schema"));
    expect(schema, JSON.stringify(findings)).toMatchObject({ cause: "damaged" });
    expect(schema!.what).toContain("table grants");
    expect(schema!.next).toMatch(/^restore .* from a backup/);

    const grants = await runCli(["grants"], { stateDir });
    expect(grants.code).toBe(2);
    expect(grants.stderr).toContain(
      "cannot be used (SQLite: no such table: grants): a part of its schema is missing. To fix it: restore",
    );
  });

  it("a portcullis.json here that does not load is a problem, named as run names it", async () => {
    const stateDir = newStateDir();
    dirs.push(stateDir);
    const cwd = tempDir("portcullis-doctor-config-");
    dirs.push(cwd);
    writeFileSync(
      join(cwd, "portcullis.json"),
      '{"servers": {"a": {"command": "node", "onchange": "restart"}}}',
    );
    const run = await runCli(["run", "a"], { stateDir, cwd });
    expect(run.code).toBe(2);
    const doctor = await runCli(["doctor", "--json"], { stateDir, cwd });
    expect(doctor.code).toBe(1);
    const findings = (JSON.parse(doctor.stdout) as { findings: Finding[] }).findings;
    const config = findings.find((f) => !f.ok && f.what.includes("portcullis.json"));
    expect(config, JSON.stringify(findings)).toBeDefined();
    expect(`portcullis run: ${config!.what}.\n`).toBe(run.stderr);
  });
});
