// A store that cannot be used (garbage, truncated, another program's SQLite database, written by
// a newer portcullis, read-only) or a state directory that is a file: every command says so in
// one sentence naming the file, exit 2, never "internal error" and a stack trace; doctor reports
// it as a finding. A read-only store is the exception for what only reads: status and the
// listings read it as it is; what must write refuses it. The real CLI, as separate processes.
import { chmodSync, readFileSync, truncateSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, expect, it } from "vitest";
import { tempDir } from "../helpers/files.js";
import { type CliResult, runCli } from "../helpers/gateway.js";
import { unprivilegedUser } from "../helpers/otherUser.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newKeyringOnlyStateDir, newStateDir, passphraseEnv } from "../helpers/state.js";

const COMMANDS = [
  ["status"],
  ["approvals"],
  ["grants"],
  ["catalog", "list", "x"],
  ["egress"],
  ["vault", "list"],
  ["passkey", "list"],
  ["audit", "verify"],
  ["run", "--label", "x", "--", ...fixtureCommand("echo")],
];

function oneSentence(r: CliResult, about: RegExp): void {
  expect(r.stderr).not.toMatch(/internal error| {4}at /);
  expect(r.stderr.trim().split("\n"), r.stderr).toHaveLength(1);
  expect(r.stderr).toMatch(about);
  expect(r.code).toBe(2);
}

async function everyCommandRefuses(stateDir: string, about: RegExp): Promise<void> {
  for (const args of COMMANDS) oneSentence(await runCli(args, { stateDir, env: passphraseEnv() }), about);
  const doctor = await runCli(["doctor", "--json"], { stateDir });
  expect(doctor.stderr).toBe("");
  expect(doctor.code).toBe(1);
  const report = JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string; next: string }[] };
  const finding = report.findings.find((f) => !f.ok && about.test(`portcullis: ${f.what}.`));
  expect(finding, doctor.stdout).toBeDefined();
  expect(finding!.next).not.toBe("");
}

/** A state directory whose store has been made and closed, as a gateway leaves it. */
async function withStore(): Promise<{ stateDir: string; db: string }> {
  const stateDir = newStateDir();
  expect((await runCli(["status"], { stateDir })).code).toBe(0);
  return { stateDir, db: join(stateDir, "portcullis.db") };
}

describe("a store that cannot be used", () => {
  it("garbage in portcullis.db: not a portcullis store", async () => {
    const stateDir = newStateDir();
    const db = join(stateDir, "portcullis.db");
    writeFileSync(db, "not a database\n".repeat(100));
    await everyCommandRefuses(
      stateDir,
      new RegExp(`^portcullis(?: [a-z]+){0,2}: the store ${db} is not a portcullis store \\(`),
    );
  });

  it("a truncated store: damaged", async () => {
    const { stateDir, db } = await withStore();
    truncateSync(db, 5000);
    await everyCommandRefuses(
      stateDir,
      new RegExp(`^portcullis(?: [a-z]+){0,2}: the store ${db} is damaged`),
    );
  });

  it("another program's SQLite database: refused and left as it was (no tables added, not switched to WAL)", async () => {
    const stateDir = newKeyringOnlyStateDir();
    const db = join(stateDir, "portcullis.db");
    const other = new Database(db);
    other.exec("CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')");
    other.close();
    const before = readFileSync(db);
    await everyCommandRefuses(
      stateDir,
      new RegExp(
        `^portcullis(?: [a-z]+){0,2}: the store ${db} is an SQLite database, but not a portcullis store`,
      ),
    );
    expect(readFileSync(db).equals(before)).toBe(true);
  });

  it("a store written by a newer portcullis: refused, never read or migrated", async () => {
    const { stateDir, db } = await withStore();
    const newer = new Database(db);
    newer.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (9999, 'later')").run();
    newer.close();
    await everyCommandRefuses(
      stateDir,
      new RegExp(
        `^portcullis(?: [a-z]+){0,2}: the store ${db} was written by a newer portcullis \\(schema version 9999;`,
      ),
    );
  });

  // Root ignores file modes: under root the commands run as `nobody`, owning the state directory
  // (test/helpers/otherUser.ts); skipped only where that user cannot run the built CLI.
  it("a read-only store: what writes refuses it in one sentence; status reads it; doctor reports it", async (ctx) => {
    const { stateDir, db } = await withStore();
    const user = unprivilegedUser([stateDir]);
    if (!user)
      return ctx.skip("no user whom file modes bind (root ignores them; nobody cannot run the built CLI)");
    const as = { stateDir, env: { HOME: stateDir, ...passphraseEnv() }, ...user.spawn };
    chmodSync(db, 0o400);
    for (const side of ["-wal", "-shm"]) {
      try {
        chmodSync(db + side, 0o400);
      } catch {
        // not there
      }
    }
    const cannot = `the store ${db} cannot be written (the file, or its directory, is read-only)`;
    // a gateway must write its run and its server's start: refused before any server is launched
    const run = await runCli(["run", "--label", "x", "--", ...fixtureCommand("echo")], as);
    oneSentence(run, new RegExp(`^portcullis run: ${quoted(cannot)}\\. To fix it: `));
    // status only reads the store (it is shown as it is, not refused), saying it cannot be written
    // (test/store/status-read-only.test.ts)
    const status = await runCli(["status"], as);
    expect(status.stderr.trim().split("\n"), status.stderr).toHaveLength(1);
    expect(status.stderr).toContain(`portcullis status: ${cannot}. Read as it is, without writing`);
    expect(status.code).toBe(0);
    expect(status.stdout).toMatch(/no gateway is running/);
    // a listing that would close abandoned requests reads it as it is and says it could not write
    const approvals = await runCli(["approvals"], as);
    expect(approvals.code).toBe(0);
    expect(approvals.stderr.trim().split("\n"), approvals.stderr).toHaveLength(1);
    expect(approvals.stderr).toContain(`portcullis approvals: ${cannot}. Read as it is, without writing`);
    const doctor = await runCli(["doctor", "--json"], as);
    expect(doctor.code).toBe(1);
    const report = JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string }[] };
    expect(report.findings).toContainEqual(expect.objectContaining({ ok: false, what: cannot }));
  });
});

function quoted(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
}

describe("a state directory that is a file", () => {
  it("run and status refuse it in one sentence; doctor reports it", async () => {
    const file = join(tempDir(), "state");
    writeFileSync(file, "x");
    const about = new RegExp(
      // named by the command that failed (run, status); doctor's finding by none
      `^portcullis(?: [a-z]+){0,2}: the state directory ${file} \\(from PORTCULLIS_HOME\\) is not a directory`,
    );
    oneSentence(
      await runCli(["run", "--label", "x", "--", ...fixtureCommand("echo")], { stateDir: file }),
      about,
    );
    oneSentence(await runCli(["status"], { stateDir: file }), about);
    const doctor = await runCli(["doctor", "--json"], { stateDir: file });
    expect(doctor.stderr).toBe("");
    expect(doctor.code).toBe(1);
    const report = JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string }[] };
    expect(report.findings).toContainEqual(
      expect.objectContaining({ ok: false, what: `state directory ${file} is not a directory` }),
    );
  });
});
