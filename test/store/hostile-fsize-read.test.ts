// The commands that only read the store, under a file size limit (`ulimit -f`) below the 32 KiB
// of the -shm index SQLite reads a write-ahead log through: opening the store to write was
// refused ("would grow past this process's file size limit"), and every one of them, `audit
// verify` included, said so and read nothing, though reading needs no write. What must hold:
// through a -shm file a running gateway holds, or from the store's file alone when its -wal holds nothing,
// they read the whole store; the listings say on stderr, in one line, that the limit kept them
// from writing and what was not done (`approvals`: the abandoned request not closed), their
// --json on stdout; a -wal holding records with no -shm SQLite can make is read with the file in
// memory; nothing is written, nothing lost. No privilege needed (`sh -c 'ulimit -f 16; exec …'`).
import { spawn } from "node:child_process";
import { existsSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { storedPending } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { type CliResult, hostEnv, runCli } from "../helpers/gateway.js";
import { CLI, FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const TOOLS = '[{"name":"say","inputSchema":{"type":"object"}}]';
/** 16 blocks of 512 bytes: 8 KiB, under the -shm file's 32 KiB and the store's own size */
const BLOCKS = 16;

/** `portcullis args…` under a file size limit of BLOCKS, through sh, to completion. */
function limitedCli(stateDir: string, args: string[]): Promise<CliResult> {
  const child = spawn("sh", ["-c", 'ulimit -f "$0" && exec "$@"', String(BLOCKS), NODE, CLI, ...args], {
    env: hostEnv({ PORTCULLIS_HOME: stateDir }),
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  return new Promise((resolve, reject) => {
    child.on("error", reject);
    child.on("close", (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/**
 * A gateway that listed its catalog and asked for approval of a call, killed while the request
 * was pending (its -wal holding records, its -shm left): the request's id.
 */
async function abandonedRequest(stateDir: string): Promise<string> {
  const gw = rawGateway({
    args: ["--label", "fsize", "--approval", "per-call", "--", NODE, FIXTURES.rawlines],
    env: { FIXTURE_RAW_LOG: join(tempDir(), "raw.log"), FIXTURE_RAW_TOOLS: TOOLS },
    stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  expect((await gw.request("tools/list")).result).toMatchObject({ tools: [{ name: "say" }] });
  gw.send({ jsonrpc: "2.0", id: "held", method: "tools/call", params: { name: "say", arguments: {} } });
  const [request] = await waitFor(() => {
    const p = storedPending(stateDir);
    return p.length > 0 && p;
  });
  gw.kill("SIGKILL");
  await gw.exited;
  return request!.request;
}

const LIMIT = `would grow past this process's file size limit \\(ulimit -f: ${BLOCKS * 512} bytes\\)`;
const RAISE = "To fix it: raise the file size limit";

/** The pending requests' ids in `approvals --json` output. */
const ids = (stdout: string): string[] =>
  (JSON.parse(stdout) as { requests: { request: string }[] }).requests.map((r) => r.request);

describe("commands that only read, under a file size limit below the -shm file's 32 KiB", () => {
  it("read a killed gateway's -wal with the store's file in memory, and the file alone once the -wal holds nothing; what they could not write is said once", async () => {
    const stateDir = newStateDir();
    const db = join(stateDir, "portcullis.db");
    const request = await abandonedRequest(stateDir);
    expect(statSync(`${db}-wal`).size).toBeGreaterThan(BLOCKS * 512);
    expect(existsSync(`${db}-shm`)).toBe(true);

    // a killed gateway's -shm file is made again by the first process to open the store (SQLite
    // truncates it, then extends it to 32 KiB), which the limit refuses: the -wal's records are
    // read as SQLite's recovery reads them, in memory (were: refused, the file alone would miss
    // them), and nothing is written
    const wal = readFileSync(`${db}-wal`);
    const file = readFileSync(db);
    const exported = await limitedCli(stateDir, ["audit", "export"]);
    expect({ code: exported.code, stderr: exported.stderr }).toEqual({ code: 0, stderr: "" });
    expect(exported.stdout).toContain('"approval_requested"');
    const catalog = await limitedCli(stateDir, ["catalog", "list", "fsize", "--json"]);
    expect(catalog.code, catalog.stderr).toBe(0);
    expect(JSON.parse(catalog.stdout)).toMatchObject({ serverLabel: "fsize", revisions: [{ revision: 1 }] });
    expect(catalog.stderr).toMatch(
      new RegExp(`^portcullis catalog list: the store ${db} cannot be written: .*${LIMIT}.`),
    );
    const listed = await limitedCli(stateDir, ["approvals", "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(ids(listed.stdout)).toEqual([request]);
    expect(listed.stderr).toContain(`was not closed: ${request};`);
    expect(listed.stderr).toContain(RAISE);
    expect(readFileSync(`${db}-wal`).equals(wal)).toBe(true);
    expect(readFileSync(db).equals(file)).toBe(true);

    // without the limit, the log is read whole, and checkpointed into the store's file as the
    // reader ends: read from the file alone under the limit, every command reads it whole
    const whole = await runCli(["audit", "export"], { stateDir });
    expect(whole.stdout).toBe(exported.stdout);
    expect(existsSync(`${db}-wal`)).toBe(false);
    const verify = await limitedCli(stateDir, ["audit", "verify"]);
    // was: exit 2, "the store … would grow past this process's file size limit"
    expect({ code: verify.code, stderr: verify.stderr }).toEqual({ code: 0, stderr: "" });
    expect(verify.stdout).toMatch(/^audit chain ok: \d+ records/);
    for (const args of [
      ["egress", "--json"],
      ["passkey", "list", "--json"],
      ["approvals", "--json"],
    ]) {
      const r = await limitedCli(stateDir, args);
      expect({ args, code: r.code }).toEqual({ args, code: 0 });
      expect(() => JSON.parse(r.stdout)).not.toThrow();
      expect(r.stderr).toMatch(
        new RegExp(
          `^portcullis ${args[0]}.*: the store ${db} cannot be written: .*${LIMIT}\\. Read as it is, without writing`,
        ),
      );
      expect(r.stderr).not.toContain("gateways could not record"); // the limit is this process's own
      expect(r.stderr.split("\n")).toHaveLength(2);
      if (args[0] === "approvals") {
        expect(ids(r.stdout)).toEqual([request]);
        expect(r.stderr).toContain(`1 approval request that can no longer be decided`);
        expect(r.stderr).toContain(`was not closed: ${request};`);
      }
    }

    // nothing was lost or written half: without the limit the request is closed, the chain verifies
    const after = await runCli(["approvals", "--json"], { stateDir });
    expect({ code: after.code, stderr: after.stderr, ids: ids(after.stdout) }).toEqual({
      code: 0,
      stderr: "",
      ids: [],
    });
    expect((await runCli(["audit", "verify"], { stateDir })).code).toBe(0);
  });
});
