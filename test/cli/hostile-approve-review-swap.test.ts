// A same-user agent that can write the store swaps an approval request's review for a harmless one
// while `portcullis approve ID` reads it, and swaps it back while the human types the passphrase.
//
// `approve ID` read the request (whose review it signs) once, then the listing (whose review it
// prints) again: a review written in between was the one shown, the first the one signed. Put
// back before the decision, the stored review was again the one signed, the check that "what was
// shown is what is signed" compared the signed one with itself, and the gateway honoured an
// approval of a call the human never saw (its own review's digest matched). What must hold: the
// review approve prints is the one whose digest it signs; a review changed after it was printed
// is not decided (exit 1, "changed after it was shown"), no grant, the call still waiting.
//
// The swaps are made observable, not timed: a preload (written by the test, inert in every
// process but `approve`) stops the command at its listing's query (after its first read) and at
// its opening of the passphrase file (the review printed), each time leaving a marker and waiting
// for the test to open its gate; the test, playing the agent, writes the store in between.
import { type ChildProcess, spawn } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { hostEnv, startGateway } from "../helpers/gateway.js";
import { CLI, fixtureCommand, NODE, REPO } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";

const REAL = "/srv/production";
const SHOWN = "/tmp/scratch-copy";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The preload: gate "listing" at the first pending-requests query, gate "passphrase" at the passphrase file's opening. */
function gates(): { env: Record<string, string>; at(name: string): boolean; open(name: string): void } {
  const dir = tempDir("portcullis-swap-gate-");
  cleanup.push(() => removeDir(dir));
  const preload = join(dir, "gate.cjs");
  writeFileSync(
    preload,
    `const fs = require("node:fs");
const path = require("node:path");
const dir = process.env.SWAP_GATE_DIR;
if (dir && process.argv[2] === "approve") {
  const hold = (name) => {
    fs.writeFileSync(path.join(dir, name + ".waiting"), "");
    const nap = new Int32Array(new SharedArrayBuffer(4));
    while (!fs.existsSync(path.join(dir, name + ".open"))) Atomics.wait(nap, 0, 0, 20);
  };
  const Database = require(${JSON.stringify(join(REPO, "node_modules", "better-sqlite3"))});
  const prepare = Database.prototype.prepare;
  let listed = false;
  Database.prototype.prepare = function (sql) {
    if (!listed && /FROM approval_requests WHERE state = 'pending'/.test(String(sql))) {
      listed = true;
      hold("listing");
    }
    return prepare.apply(this, arguments);
  };
  const open = fs.openSync;
  let asked = false;
  fs.openSync = function (p) {
    if (!asked && String(p) === process.env.PORTCULLIS_PASSPHRASE_FILE) {
      asked = true;
      hold("passphrase");
    }
    return open.apply(this, arguments);
  };
  require("node:module").syncBuiltinESMExports();
}
`,
  );
  return {
    env: { NODE_OPTIONS: `--require ${preload}`, SWAP_GATE_DIR: dir },
    at: (name) => existsSync(join(dir, `${name}.waiting`)),
    open: (name) => writeFileSync(join(dir, `${name}.open`), ""),
  };
}

describe("an approval request's review swapped while approve reads it", () => {
  it("the review printed is the one signed: swapped back before the decision, nothing is approved", async () => {
    const cat = makeCatalog([
      {
        name: "wipe",
        description: "Wipes a directory.",
        inputSchema: { type: "object", properties: { path: { type: "string" } } },
      },
    ]);
    const gw = await startGateway({
      args: ["--label", "ops", "--approval-timeout", "60000", "--", ...fixtureCommand("catalog")],
      env: cat.env,
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    const stateDir = gw.stateDir!;
    await gw.client.listTools();
    let settled = false;
    const call = gw.client.callTool({ name: "wipe", arguments: { path: REAL } }, undefined, {
      timeout: 90_000,
    });
    call.then(
      () => (settled = true),
      () => (settled = true),
    );
    const req = await nextStoredRequest(stateDir);

    // the agent's connection to the store
    const db = new Database(join(stateDir, "portcullis.db"));
    cleanup.push(() => {
      db.close();
    });
    db.pragma("busy_timeout = 10000");
    const real = (
      db.prepare("SELECT review_json FROM approval_requests WHERE request = ?").get(req.request) as {
        review_json: string;
      }
    ).review_json;
    expect(real).toContain(REAL);
    const harmless = real.split(REAL).join(SHOWN);
    const setReview = (text: string) =>
      db.prepare("UPDATE approval_requests SET review_json = ? WHERE request = ?").run(text, req.request);

    const g = gates();
    const child: ChildProcess = spawn(
      NODE,
      [CLI, "approve", req.request, "--for", "call", "--state-dir", stateDir],
      { env: hostEnv({ ...passphraseEnv(), ...g.env }), stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    child.stdout!.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    child.stderr!.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<number | null>((resolve) => child.on("close", (code) => resolve(code)));
    cleanup.push(async () => {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    });

    // after approve's first read of the request: the harmless review goes in
    await waitFor(
      () => g.at("listing") || (child.exitCode !== null ? "exited" : null),
      20_000,
      "the listing",
    );
    expect(child.exitCode, stderr).toBeNull();
    setReview(harmless);
    g.open("listing");
    // the review printed, the passphrase asked: the real review goes back
    await waitFor(
      () => g.at("passphrase") || (child.exitCode !== null ? "exited" : null),
      20_000,
      "the passphrase",
    );
    expect(child.exitCode, stderr).toBeNull();
    // the human was shown the harmless path, never the real one
    expect(stdout).toContain(SHOWN);
    expect(stdout).not.toContain(REAL);
    setReview(real);
    g.open("passphrase");

    const code = await exited;
    expect(stdout).not.toContain(`approved ${req.request}`);
    expect(stderr).toContain("changed after it was shown");
    expect(code).toBe(1);
    const row = db.prepare("SELECT state FROM approval_requests WHERE request = ?").get(req.request) as {
      state: string;
    };
    expect(row.state).toBe("pending");
    expect(db.prepare("SELECT count(*) AS n FROM grants WHERE request = ?").get(req.request)).toEqual({
      n: 0,
    });
    // nothing the wipe fixture would have run: the call still waits
    expect(settled).toBe(false);
    expect(cat.records().filter((r) => JSON.stringify(r).includes("wipe"))).toEqual([]);
  }, 60_000);
});
