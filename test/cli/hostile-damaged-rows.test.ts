// A store writer (any process of the user) rewrites a JSON column that grants nothing itself into
// something unreadable: an agent run's chain, a gateway's execution record and status lines, a
// recorded catalog's tools. Each was parsed unprotected: `approve` of a request of that run,
// `status`, the console's Servers page and `catalog show` stopped with an internal error (exit 70,
// "SyntaxError", or a 500). Now the request is decided as ever (its review carries its own chain),
// `status` says which column cannot be read, and `catalog show`/`diff` refuse in one sentence
// naming the revision and column (a gateway reads such a revision as listing no tools, so every
// tool it serves is asked for again). A real gateway, store, CLI and console.
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import {
  catalogFile,
  DEPLOY_TOOL,
  gatewayFor,
  httpLogin,
  raw,
  requestState,
  startConsoleProcess,
} from "../console/helpers.js";
import type { Pending } from "../helpers/approvals.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { heldDeploys } from "../helpers/heldDeploys.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a run's, a gateway's or a catalog's JSON column rewritten in the store into something unreadable", () => {
  it("is said to be unreadable where it is shown, and every command keeps working", async () => {
    const setup = await heldDeploys(cleanup, ["run"]);
    const { stateDir, gw, db, cli } = setup;
    const [a] = setup.requests as [Pending];
    const [call] = setup.calls as [Promise<{ isError?: unknown }>];

    db.prepare("UPDATE runs SET chain_json = '{' WHERE run = ?").run(a!.agentRun);
    db.prepare("UPDATE gateways SET status_json = '{', record_json = '[1]'").run();
    db.prepare("UPDATE catalog_revisions SET tools_json = '{'").run();

    const listed = await cli("approvals");
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(`portcullis approve ${a!.request}`);
    const approved = await cli("approve", a!.request, "--for", "call");
    expect(approved.code, approved.stderr).toBe(0);
    expect(requestState(stateDir, a!.request)).toBe("approved");
    expect((await call).isError).toBeFalsy();

    const status = await cli("status");
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toContain("unreadable gateways.status_json is not JSON");
    expect(status.stdout).toContain("gateways.record_json is not an execution record");
    expect((await cli("status", "--json")).code).toBe(0);
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const s = await httpLogin(c.url);
    expect((await raw(`${c.url}/servers`, { headers: { Cookie: s.cookie } })).status).toBe(200);

    for (const args of [
      ["show", "shop"],
      ["show", "shop", "--json"],
      ["list", "shop"],
    ]) {
      const shown = await cli("catalog", ...args);
      if (args[0] === "list") {
        expect(shown.code, shown.stderr).toBe(0);
        expect(shown.stdout).toMatch(
          /^1 {2}\S+ {2}tools unreadable \(catalog_revisions\.tools_json is no JSON list/,
        );
        continue;
      }
      expect(shown.code, `${args.join(" ")}: ${shown.stderr}`).toBe(1);
      expect(shown.stderr.trim().split("\n")).toHaveLength(1);
      expect(shown.stderr).toContain(
        `portcullis catalog show: the stored catalog of "shop" cannot be read (revision 1: catalog_revisions.tools_json is not JSON`,
      );
      expect(shown.stdout).toBe("");
    }
    await gw.close();
  }, 30_000);

  it("a gateway starting with a new catalog over an unreadable recorded one records the new one and serves it", async () => {
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-cli-rows-");
    cleanup.push(() => {
      removeDir(dir);
      removeDir(stateDir);
    });
    const first = await gatewayFor(stateDir, catalogFile(dir, [DEPLOY_TOOL]), [], {
      PORTCULLIS_NO_CONSOLE: "1",
    });
    await first.client.listTools();
    await first.close();
    const db = new Database(join(stateDir, "portcullis.db"));
    db.prepare("UPDATE catalog_revisions SET tools_json = '{'").run();
    db.close();

    const second = { ...DEPLOY_TOOL, description: "Deploys the current branch, now to production." };
    const gw = await gatewayFor(stateDir, catalogFile(dir, [second]), [], { PORTCULLIS_NO_CONSOLE: "1" });
    cleanup.push(() => gw.close());
    expect((await gw.client.listTools()).tools.map((t) => t.name)).toEqual(["deploy"]);
    const cli = (...args: string[]) => runCli([...args, "--state-dir", stateDir], { noTerminal: true });
    const list = await cli("catalog", "list", "shop");
    expect(list.code, list.stderr).toBe(0);
    expect(list.stdout).toMatch(/^1 {2}\S+ {2}tools unreadable/);
    expect(list.stdout).toMatch(/\n2 {2}\S+ {2}1 tools/);
    const diff = await cli("catalog", "diff", "shop");
    expect(diff.code, diff.stderr).toBe(1);
    expect(diff.stderr).toContain(
      'portcullis catalog diff: the stored catalog of "shop" cannot be read (revision 1:',
    );
    await gw.close();
  }, 30_000);
});
