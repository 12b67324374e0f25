// Two versions of portcullis on one state directory: the user upgrades while gateways the older one
// started still run, and may run an older binary again (another shell, an MCP client's pinned
// entry). An older build cannot run from a clean clone, so each side is simulated in the store:
//  - a store a newer portcullis brought to a schema version above this one's: every command,
//    `run` included, refuses it in one sentence naming both versions and what to do, and writes
//    nothing (the store's bytes, the files of the state directory); `run` never starts its server;
//  - a gateway started before an upgrade (its row, recording no schema version as a portcullis
//    before migration 20 wrote it, older than the migrations applied since, which is how the store
//    tells the schema such a process runs: src/store/schemaVersion.ts): approve refuses
//    an approval that gateway could not verify (before schema 16, an approval signs a review it
//    does not know, and it reported the grant as forged while the human was told "approved"),
//    saying to restart it; a denial (whose signed statement never changed) is made; status and
//    doctor mark it;
//  - a command bringing the store up while such a gateway and a vault holder run says which, and
//    to restart them.
// Real CLI processes and a real gateway.
import { existsSync, mkdtempSync, readdirSync, readFileSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { KNOWN_SCHEMA_VERSION, portcullisVersion } from "../../src/store/schemaVersion.js";
import { startConsoleProcess } from "../console/helpers.js";
import { nextStoredRequest, pending } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { catalogGateway } from "../helpers/catalogGateway.js";
import { commandNamed } from "../helpers/commandNamed.js";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const cli = (stateDir: string, args: string[], input?: string) =>
  runCli(args, { stateDir, env: passphraseEnv(), noTerminal: true, input });

/** Every file of the state directory with its bytes (the -shm index aside: SQLite's, rebuilt). */
function snapshot(stateDir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const f of readdirSync(stateDir).sort())
    if (!f.endsWith("-shm")) out[f] = readFileSync(join(stateDir, f)).toString("base64");
  return out;
}

const ID = "01M95GYS1Q2PM811SG8AHB299F";

describe("a store a newer portcullis wrote", () => {
  it("every command and run refuse it in one sentence naming both versions and what to do; nothing is written", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const newer = KNOWN_SCHEMA_VERSION + 1;
    // as the newer portcullis's migration leaves it: recorded, and its version in the file's header
    const db = new Database(join(stateDir, "portcullis.db"));
    db.prepare("INSERT INTO schema_migrations (version, applied_at) VALUES (?, ?)").run(
      newer,
      new Date().toISOString(),
    );
    db.pragma(`user_version = ${newer}`);
    db.close();
    const before = snapshot(stateDir);
    // the server run would start leaves this file as soon as it runs (outside the state directory)
    const elsewhere = mkdtempSync(join(tmpdir(), "portcullis-upgrade-"));
    cleanup.push(() => removeDir(elsewhere));
    const marker = join(elsewhere, "server-ran");
    const commands: string[][] = [
      ["status"],
      ["status", "--json"],
      ["approvals", "--json"],
      ["approve", ID, "--for", "session"],
      ["approve", "--next", "--for", "call"],
      ["deny", ID],
      ["grants", "--json"],
      ["revoke", ID],
      ["audit", "verify"],
      ["audit", "activity"],
      ["audit", "export"],
      ["catalog", "show", "x"],
      ["egress"],
      ["vault", "list"],
      ["vault", "set", "TOKEN", "--host", "api.example.com"],
      ["vault", "rm", "TOKEN"],
      ["unlock"],
      ["passkey", "list"],
      ["console", "--no-open"],
      // its server is not spawned early (src/cli/run.ts): the store's header says it is newer
      ["run", "--label", "x", "--", "/bin/sh", "-c", `: > '${marker}'; exec sleep 30`],
    ];
    const sentence = new RegExp(
      `^portcullis [a-z]+(?: [a-z]+)?: the store ${join(stateDir, "portcullis.db")} was written by a newer portcullis ` +
        `\\(schema version ${newer}; this one, portcullis ${portcullisVersion().replaceAll(".", "\\.")}, knows up to ${KNOWN_SCHEMA_VERSION}\\), ` +
        "and is neither read nor written by this one\\. To fix it: run the newer portcullis, the one that upgraded it, " +
        "for every command on this state directory, and point each MCP client's server entry at it .*; this one could misread or damage it\\.\\n$",
    );
    for (const args of commands) {
      const r = await cli(stateDir, args, "value-of-the-token\n");
      expect(r.stderr, args.join(" ")).toMatch(sentence);
      // named by the command, a group's subcommand with it
      expect(r.stderr, args.join(" ")).toMatch(new RegExp(`^portcullis ${commandNamed(args)}: `));
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout, args.join(" ")).toBe("");
      expect(snapshot(stateDir), args.join(" ")).toEqual(before);
    }
    expect(existsSync(marker), "run's server ran").toBe(false);
  });
});

describe("processes started before an upgrade", () => {
  async function gatewayWithRequest() {
    const { gw, stateDir } = await catalogGateway(
      makeCatalog([{ name: "deploy", inputSchema: { type: "object" } }]),
      ["--label", "shell", "--approval-timeout", "60000"],
      cleanup,
    );
    gw.client.callTool({ name: "deploy", arguments: {} }, undefined, { timeout: 90_000 }).catch(() => {});
    const request = await nextStoredRequest(stateDir);
    return { stateDir, gw, request };
  }

  it("approve refuses an approval it could not verify and says to restart it; deny is made; status and doctor mark it", async () => {
    const { stateDir, gw, request } = await gatewayWithRequest();
    // as the store reads after a newer portcullis applied migrations 16 and later under a gateway
    // started at schema 15: applied after the gateway registered, and its row records no schema
    // version (a portcullis before migration 20 recorded none: its version is inferred)
    const db = new Database(join(stateDir, "portcullis.db"));
    db.prepare("UPDATE schema_migrations SET applied_at = ? WHERE version >= 16").run(
      new Date().toISOString(),
    );
    db.prepare("UPDATE gateways SET schema_version = NULL").run();
    db.close();

    const status = await cli(stateDir, ["status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).toContain(
      `  version    started by an older portcullis (store schema version 15; this one, ${portcullisVersion()}, knows ${KNOWN_SCHEMA_VERSION}): restart it to run this one`,
    );
    const json = JSON.parse((await cli(stateDir, ["status", "--json"])).stdout) as {
      gateways: { schemaVersion: number }[];
    };
    expect(json.gateways[0]!.schemaVersion).toBe(15);
    // doctor: a finding with its next step (exit 1)
    const doctor = await cli(stateDir, ["doctor", "--json"]);
    expect(doctor.code).toBe(1);
    const findings = (
      JSON.parse(doctor.stdout) as { findings: { ok: boolean; what: string; next: string }[] }
    ).findings;
    expect(findings).toContainEqual({
      ok: false,
      what: `gateway "shell" (pid ${gw.pid}) was started by an older portcullis (store schema version 15; this one, ${portcullisVersion()}, knows ${KNOWN_SCHEMA_VERSION}) and runs that version's code`,
      next: `restart it so that it runs this portcullis: restart the MCP client that started it (or end it: kill ${gw.pid})`,
    });

    // the listing offers only the denial, and says why
    const listed = await cli(stateDir, ["approvals"]);
    expect(listed.stdout).toContain(
      `  decide     only a denial: its gateway (pid ${gw.pid}) was started by an older portcullis (store schema version 15), which cannot verify this version's approvals; restart it to approve its calls, or deny: portcullis deny ${request.request}`,
    );
    expect(listed.stdout).not.toContain("portcullis approve ");
    for (const args of [
      ["approve", request.request, "--for", "session"],
      ["approve", "--next", "--for", "session"],
    ]) {
      const r = await cli(stateDir, args);
      expect(r.stderr, args.join(" ")).toBe(
        `portcullis approve: the gateway that asked approval request ${request.request} (pid ${gw.pid}) was started by an older portcullis ` +
          "(store schema version 15), which does not honour approvals as this one signs them (since schema version 16): nothing was decided. " +
          `Restart that gateway so that it runs this portcullis (restart the MCP client that started it, or end it: kill ${gw.pid}), ` +
          "then approve the request its call makes then.\n",
      );
      expect(r.code, args.join(" ")).toBe(2);
      expect(r.stdout).toBe("");
    }
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([request.request]);
    expect(JSON.parse((await cli(stateDir, ["grants", "--json"])).stdout)).toMatchObject({ grants: [] });

    const denied = await cli(stateDir, ["deny", request.request]);
    expect(denied.stderr).toBe("");
    expect(denied.code).toBe(0);
  });

  it("a command that brings the store up while it and a vault holder run names both, once, and says to restart them", async () => {
    const { stateDir, gw } = await gatewayWithRequest();
    // the vault unlocked: its holder (the process keeping it unlocked) an older portcullis's too
    const unlocked = await cli(stateDir, ["unlock", "--for", "10m"]);
    expect(unlocked.code, unlocked.stderr).toBe(0);
    cleanup.push(async () => void (await cli(stateDir, ["lock"])));
    const holderFiles = readdirSync(stateDir).filter((f) => /^vault-holder-\d+\.pid$/.test(f));
    expect(holderFiles).toHaveLength(1);
    const holder = Number(/\d+/.exec(holderFiles[0]!)![0]);
    // the store as the portcullis before migration 20 (one column) left it: this undoes the newest
    // migrations, so that the command brings the store from 19 to the newest (20 undone too: with it,
    // the gateway's row would record the newest version, and be no older portcullis's). Written
    // for 22: a newer migration must be undone here too (its rows, tables and columns dropped)
    expect(KNOWN_SCHEMA_VERSION, "undo the newest migrations below, then change this").toBe(22);
    const db = new Database(join(stateDir, "portcullis.db"));
    db.exec(`
      DELETE FROM schema_migrations WHERE version >= 20;
      ALTER TABLE gateways DROP COLUMN schema_version;
      ALTER TABLE runs DROP COLUMN start_seq;
      DROP TABLE catalog_revision_records;
    `);
    db.close();
    const up = await cli(stateDir, ["approvals", "--json"]);
    expect(up.code).toBe(0);
    expect(up.stderr).toContain(
      `portcullis: warning: this portcullis (${portcullisVersion()}) brought the store ${join(stateDir, "portcullis.db")} from schema version 19 to ${KNOWN_SCHEMA_VERSION}, ` +
        `while processes the older portcullis started still run on it: gateway "shell" (pid ${gw.pid}), the vault holder (pid ${holder}). `,
    );
    expect(up.stderr).toContain(
      `or end them (kill ${gw.pid} ${holder}), and run 'portcullis lock' then 'portcullis unlock' for the vault holder (it keeps the vault unlocked). `,
    );
    expect(up.stderr.trim().split("\n")).toHaveLength(1);
    // said once: the store is up to date now
    const again = await cli(stateDir, ["status"]);
    expect(again.stderr).toBe("");
    // its row, written before the column was there, records no version: inferred, 19
    expect(again.stdout).toContain("started by an older portcullis (store schema version 19;");
  });

  it("console, finding one an older portcullis started, gives its address and says to end and start it again", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const current = await cli(stateDir, ["console", "--no-open"]);
    expect(current.stderr).toBe("");
    // its address file as a portcullis before the recording wrote it (no schemaVersion: inferred
    // from the file's time), and the last migration applied after the console started: as a newer
    // portcullis leaves the store (the console's start put 10 s back, the earlier migrations long
    // before it, the last one now: a migration applied later than now is not believed,
    // schemaVersion.ts)
    const file = join(stateDir, "console.json");
    const { schemaVersion, ...unrecorded } = JSON.parse(readFileSync(file, "utf8")) as Record<
      string,
      unknown
    >;
    expect(schemaVersion).toBe(KNOWN_SCHEMA_VERSION);
    writeFileSync(file, `${JSON.stringify(unrecorded)}\n`, { mode: 0o600 });
    const past = new Date(Date.now() - 10_000);
    utimesSync(file, past, past);
    const db = new Database(join(stateDir, "portcullis.db"));
    db.prepare("UPDATE schema_migrations SET applied_at = ? WHERE version < ?").run(
      "2000-01-01T00:00:00.000Z",
      KNOWN_SCHEMA_VERSION,
    );
    db.prepare("UPDATE schema_migrations SET applied_at = ? WHERE version = ?").run(
      new Date().toISOString(),
      KNOWN_SCHEMA_VERSION,
    );
    db.close();
    const r = await cli(stateDir, ["console", "--no-open"]);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^the console is already running at http:\/\/127\.0\.0\.1:/);
    expect(r.stderr).toBe(
      `portcullis console: warning: that console (pid ${c.pid}) was started by an older portcullis (store schema version ${KNOWN_SCHEMA_VERSION - 1}; ` +
        `this one, ${portcullisVersion()}, knows ${KNOWN_SCHEMA_VERSION}), and decides with that version's code: ` +
        `end it (kill ${c.pid}) and run 'portcullis console' again to run this one.\n`,
    );
  });
});
