// The schema version a process runs, as it records it where it registers (a gateway's row since
// migration 20, the console's address file: src/store/schemaVersion.ts), is read as recorded, not
// inferred from when it registered against when each migration was applied:
//  - a clock stepped back between an upgrade and a gateway's or a console's start (simulated: the
//    migrations' times written after the process's, since the clock itself cannot be changed)
//    made the inference read a process of this portcullis as an older one's (approve refused, a
//    restart asked for); its recorded version is read instead;
//  - deny first: a recorded version that no portcullis sharing this store could have written (not
//    a number, newer than this one, from before the recording) counts as older, never as newer:
//    status marks the gateway, approve refuses what it might not verify, console warns.
// Real CLI processes, a real gateway and a real console.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { KNOWN_SCHEMA_VERSION, portcullisVersion } from "../../src/store/schemaVersion.js";
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

/** The migrations from `version` on stamped an hour from now: as a clock stepped back after them leaves the store. */
function stampMigrationsLater(stateDir: string, version: number): void {
  const db = new Database(join(stateDir, "portcullis.db"));
  db.prepare("UPDATE schema_migrations SET applied_at = ? WHERE version >= ?").run(
    new Date(Date.now() + 3_600_000).toISOString(),
    version,
  );
  db.close();
}

async function gatewayWithRequest() {
  const { gw, stateDir } = await catalogGateway(
    makeCatalog([{ name: "deploy", inputSchema: { type: "object" } }]),
    ["--label", "shell", "--approval-timeout", "60000"],
    cleanup,
  );
  gw.client.callTool({ name: "deploy", arguments: {} }, undefined, { timeout: 90_000 }).catch(() => {});
  const request = await nextRequest(stateDir);
  return { stateDir, gw, request };
}

const UNREADABLE = "store schema version unreadable where it registered, so counted as older";

describe("the schema version a process recorded when it registered", () => {
  it("a gateway registered before the migrations' times (a clock stepped back) is read as it records: not marked, and approve is made", async () => {
    const { stateDir, request } = await gatewayWithRequest();
    // the inference would read schema 15: every migration since stamped after the row
    stampMigrationsLater(stateDir, 16);

    const status = await cli(stateDir, ["status"]);
    expect(status.code).toBe(0);
    expect(status.stdout).not.toContain("started by an older portcullis");
    const json = JSON.parse((await cli(stateDir, ["status", "--json"])).stdout) as {
      gateways: { schemaVersion: unknown }[];
    };
    expect(json.gateways[0]!.schemaVersion).toBe(KNOWN_SCHEMA_VERSION);

    const approved = await cli(stateDir, ["approve", request.request, "--for", "session"]);
    expect(approved.stderr).toBe("");
    expect(approved.code).toBe(0);
    expect(await pending(stateDir)).toEqual([]);
  });

  it("a gateway whose recorded version is unreadable or forged counts as older: status marks it, approve refuses", async () => {
    const { stateDir, gw, request } = await gatewayWithRequest();
    for (const forged of ["20; DROP", KNOWN_SCHEMA_VERSION + 1, 19, 20.5]) {
      const db = new Database(join(stateDir, "portcullis.db"));
      db.prepare("UPDATE gateways SET schema_version = ?").run(forged);
      db.close();
      const r = await cli(stateDir, ["approve", request.request, "--for", "session"]);
      expect(r.stderr, String(forged)).toBe(
        `portcullis approve: the gateway that asked approval request ${request.request} (pid ${gw.pid}) was started by an older portcullis ` +
          `(${UNREADABLE}), which does not honour approvals as this one signs them (since schema version 16): nothing was decided. ` +
          `Restart that gateway so that it runs this portcullis (restart the MCP client that started it, or end it: kill ${gw.pid}), ` +
          "then approve the request its call makes then.\n",
      );
      expect(r.code, String(forged)).toBe(2);
    }
    const status = await cli(stateDir, ["status"]);
    expect(status.stdout).toContain(
      `  version    started by an older portcullis (${UNREADABLE}; this one, ${portcullisVersion()}, knows ${KNOWN_SCHEMA_VERSION}): restart it to run this one`,
    );
    const json = JSON.parse((await cli(stateDir, ["status", "--json"])).stdout) as {
      gateways: { schemaVersion: unknown }[];
    };
    expect(json.gateways[0]!.schemaVersion).toBe("unreadable");
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([request.request]);
  });

  it("a console is read as its address file records: not warned of with the newest migration stamped after its start; warned of when unreadable", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    stampMigrationsLater(stateDir, KNOWN_SCHEMA_VERSION);
    const current = await cli(stateDir, ["console", "--no-open"]);
    expect(current.code).toBe(0);
    expect(current.stderr).toBe("");

    const file = join(stateDir, "console.json");
    const address = JSON.parse(readFileSync(file, "utf8")) as Record<string, unknown>;
    writeFileSync(file, `${JSON.stringify({ ...address, schemaVersion: KNOWN_SCHEMA_VERSION + 1 })}\n`, {
      mode: 0o600,
    });
    const forged = await cli(stateDir, ["console", "--no-open"]);
    expect(forged.code).toBe(0);
    expect(forged.stderr).toBe(
      `portcullis console: warning: that console (pid ${c.pid}) was started by an older portcullis (${UNREADABLE}; ` +
        `this one, ${portcullisVersion()}, knows ${KNOWN_SCHEMA_VERSION}), and decides with that version's code: ` +
        `end it (kill ${c.pid}) and run 'portcullis console' again to run this one.\n`,
    );
  });
});
