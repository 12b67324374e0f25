// A row or file naming a process by pid is writable by any process of the user: an agent can point
// a `gateways` row, the `runs` row of a request, or console.json at one of the user's own
// processes (here a live `sleep`), with its real start time, so that every liveness check (pid,
// start time, PID namespace, boot) passes. The sentences that tell the human to end a process
// (an older portcullis's gateway or console: approve, approvals, status, doctor, the store's
// upgrade warning, console) must not name that pid to kill: each says the process is not a
// portcullis gateway (console) by its command line, and what to do instead. Deny first stands:
// the approval is still refused. A real gateway and console, real `sleep` processes.
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { processStartTime } from "../../src/identity/proc.js";
import { KNOWN_SCHEMA_VERSION } from "../../src/store/schemaVersion.js";
import { startConsoleProcess } from "../console/helpers.js";
import { nextRequest, pending } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { catalogGateway } from "../helpers/catalogGateway.js";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const cli = (stateDir: string, args: string[]) =>
  runCli(args, { stateDir, env: passphraseEnv(), noTerminal: true });

/** A live process of this user that is no portcullis: its pid and start time. */
function victim(): { pid: number; start: string } {
  const child: ChildProcess = spawn("sleep", ["120"], { stdio: "ignore" });
  cleanup.push(() => void child.kill("SIGKILL"));
  const start = processStartTime(child.pid!);
  expect(start).not.toBeNull();
  return { pid: child.pid!, start: start! };
}

/** No sentence of `text` tells the human to kill `pid` (alone or among others). */
function expectNoKill(text: string, pid: number, what: string): void {
  expect(text, what).not.toMatch(new RegExp(`kill[\\d ]* ${pid}\\b`));
}

describe("a row naming a live process that is no portcullis gateway", () => {
  it("approve, approvals, status, doctor and the upgrade warning never say to kill it", async () => {
    const { gw, stateDir } = await catalogGateway(
      makeCatalog([{ name: "deploy", inputSchema: { type: "object" } }]),
      ["--label", "shell", "--approval-timeout", "60000"],
      cleanup,
    );
    gw.client.callTool({ name: "deploy", arguments: {} }, undefined, { timeout: 90_000 }).catch(() => {});
    const request = await nextRequest(stateDir);
    const sleep = victim();
    const notOurs = `pid ${sleep.pid} is not a portcullis gateway by its command line`;
    // the gateway's row and its run's row rewritten to name the sleep, as a gateway an older
    // portcullis started (schema 15: migrations 16 and later applied after it, no version recorded)
    const db = new Database(join(stateDir, "portcullis.db"));
    db.prepare("UPDATE gateways SET pid = ?, pid_start = ?, schema_version = NULL").run(
      sleep.pid,
      sleep.start,
    );
    db.prepare("UPDATE runs SET gateway_pid = ?, gateway_pid_start = ?").run(sleep.pid, sleep.start);
    db.prepare("UPDATE schema_migrations SET applied_at = ? WHERE version >= 16").run(
      new Date().toISOString(),
    );
    db.close();

    const approve = await cli(stateDir, ["approve", request.request, "--for", "session"]);
    // deny first: refused all the same, nothing decided
    expect(approve.code).toBe(2);
    expect(approve.stderr).toContain("nothing was decided");
    expectNoKill(approve.stderr, sleep.pid, "approve");
    expect(approve.stderr).toContain(notOurs);
    expect(approve.stderr).toContain(`portcullis deny ${request.request}`);
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([request.request]);

    const listed = await cli(stateDir, ["approvals"]);
    expect(listed.stdout).toContain("only a denial");
    expectNoKill(listed.stdout, sleep.pid, "approvals");
    expect(listed.stdout).toContain(notOurs);

    const status = await cli(stateDir, ["status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain("started by an older portcullis");
    expectNoKill(status.stdout, sleep.pid, "status");
    expect(status.stdout).toContain(notOurs);
    expect(status.stdout).not.toContain("restart it to run this one");

    const doctor = await cli(stateDir, ["doctor", "--json"]);
    const findings = (JSON.parse(doctor.stdout) as { findings: { what: string; next: string }[] }).findings;
    const older = findings.find((f) =>
      f.what.includes(`(pid ${sleep.pid}) was started by an older portcullis`),
    );
    expect(older?.next).toContain(notOurs);
    expectNoKill(doctor.stdout, sleep.pid, "doctor");
    const doctorText = await cli(stateDir, ["doctor"]);
    expectNoKill(doctorText.stdout + doctorText.stderr, sleep.pid, "doctor (text)");

    // the store brought up from schema 19 while the forged row "runs": the warning names it, not to kill
    // (migrations 20 to 22 undone: the row then records no schema version, as a portcullis before 20 wrote it)
    expect(KNOWN_SCHEMA_VERSION, "undo the newest migrations below, then change this").toBe(22);
    const again = new Database(join(stateDir, "portcullis.db"));
    again.exec(
      "DELETE FROM schema_migrations WHERE version >= 20; ALTER TABLE gateways DROP COLUMN schema_version; ALTER TABLE runs DROP COLUMN start_seq; DROP TABLE catalog_revision_records;",
    );
    again.close();
    const up = await cli(stateDir, ["approvals", "--json"]);
    expect(up.stderr).toContain(`gateway "shell" (pid ${sleep.pid})`);
    expectNoKill(up.stderr, sleep.pid, "upgrade warning");
    expect(up.stderr).toContain(notOurs);
    expect(up.stderr).not.toContain("or end them (kill");

    process.kill(sleep.pid, 0); // the sleep is untouched
  });
});

describe("console.json naming a live process that is no portcullis console", () => {
  it("console --port and the older-console warning never say to kill it", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    // a real console's file, then its pid and start time swapped for the sleep's
    const c = await startConsoleProcess(stateDir);
    const file = join(stateDir, "console.json");
    const real = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    await c.stop();
    const sleep = victim();
    const notOurs = `pid ${sleep.pid} is not a portcullis console by its command line`;
    const forged = { ...real, pid: sleep.pid, startTime: sleep.start };
    writeFileSync(file, `${JSON.stringify(forged)}\n`, { mode: 0o600 });

    const port = Number(new URL(real.url as string).port);
    const other = port === 65535 ? port - 1 : port + 1;
    const elsewhere = await cli(stateDir, ["console", "--no-open", "--port", String(other)]);
    expect(elsewhere.code).toBe(2);
    expectNoKill(elsewhere.stderr, sleep.pid, "console --port");
    expect(elsewhere.stderr).toContain(notOurs);

    // as a console an older portcullis started
    writeFileSync(file, `${JSON.stringify({ ...forged, schemaVersion: KNOWN_SCHEMA_VERSION - 1 })}\n`, {
      mode: 0o600,
    });
    const older = await cli(stateDir, ["console", "--no-open"]);
    expect(older.stderr).toContain("was started by an older portcullis");
    expectNoKill(older.stderr, sleep.pid, "older console");
    expect(older.stderr).toContain(notOurs);
    process.kill(sleep.pid, 0);
  });
});
