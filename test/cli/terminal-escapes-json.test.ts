import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { watchApprovalsJson } from "../helpers/approvalsWatch.js";
import { makeCatalog } from "../helpers/catalog.js";
import { catalogGateway } from "../helpers/catalogGateway.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** C0 and C1 control characters other than the newline a view writes itself. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are the subject
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;
/** Bidi overrides and isolates, zero-width and other format characters, line separators. */
const HIDDEN = /[\u061c\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/;

/** Soft: a run names every command whose output is not terminal-safe, not only the first. */
function expectTerminalSafe(out: string, what: string): void {
  expect.soft(out, what).not.toMatch(CONTROL);
  expect.soft(out, what).not.toMatch(HIDDEN);
}

/** A C1 CSI (clear screen) in a server's tool name; a right-to-left override in its description and in a later tool. */
const C1_TOOL = "list\u009b2Jitems";
const RLO_TEXT = "Lists\u202e.txt";
const RLO_TOOL = "drop\u202etxt.exe";

describe("--json output writes C1 controls and bidi overrides as \\u escapes, and decodes to the names as sent", () => {
  it("approvals, its live lines, grants, and catalog show, list and diff", async () => {
    const cat = makeCatalog([{ name: C1_TOOL, description: RLO_TEXT, inputSchema: { type: "object" } }]);
    const { gw, stateDir } = await catalogGateway(
      cat,
      ["--label", "shop", "--approval", "session", "--approval-timeout", "40000"],
      cleanup,
    );
    const watched = watchApprovalsJson(stateDir, cleanup).out;

    const call = gw.client.callTool({ name: C1_TOOL, arguments: {} });
    const asked = await nextStoredRequest(stateDir);

    const approvals = await runCli(["approvals", "--json"], { stateDir });
    expect(approvals.code, approvals.stderr).toBe(0);
    expectTerminalSafe(approvals.stdout, "approvals --json");
    expect.soft(approvals.stdout).toContain("list\\u009b2Jitems");
    const requests = (JSON.parse(approvals.stdout) as { requests: { request: string; tool: string }[] })
      .requests;
    expect(requests.map((r) => r.tool)).toEqual([C1_TOOL]);

    const line = await waitFor(
      () =>
        watched()
          .split("\n")
          .find((l) => l.includes('"change":"pending"')),
      20_000,
      "the watcher's pending line",
    );
    expectTerminalSafe(watched(), "approvals --watch --json");
    expect((JSON.parse(line) as { request: { tool: string } }).request.tool).toBe(C1_TOOL);

    const approved = await runCli(["approve", asked.request, "--for", "session"], {
      stateDir,
      env: passphraseEnv(),
    });
    expect(approved.code, approved.stderr).toBe(0);
    expect((await call).isError).toBeFalsy();

    const grants = await runCli(["grants", "--json"], { stateDir });
    expect(grants.code, grants.stderr).toBe(0);
    expectTerminalSafe(grants.stdout, "grants --json");
    const granted = (JSON.parse(grants.stdout) as { grants: { toolScope: { name: string }[] }[] }).grants;
    expect(granted.flatMap((g) => g.toolScope.map((t) => t.name))).toEqual([C1_TOOL]);

    // a second revision, so that diff has something to compare
    cat.write([
      { name: C1_TOOL, description: RLO_TEXT, inputSchema: { type: "object" } },
      { name: RLO_TOOL, description: "Drops.", inputSchema: { type: "object" } },
    ]);
    const listed = await waitFor(
      async () => {
        await gw.client.listTools();
        const r = await runCli(["catalog", "list", "shop", "--json"], { stateDir });
        return (JSON.parse(r.stdout) as { revisions: unknown[] }).revisions.length === 2 ? r : null;
      },
      20_000,
      "revision 2 of the catalog",
    );
    expectTerminalSafe(listed.stdout, "catalog list --json");

    for (const revision of ["1", "2"]) {
      const show = await runCli(["catalog", "show", "shop", "--revision", revision, "--json"], { stateDir });
      expect(show.code, show.stderr).toBe(0);
      expectTerminalSafe(show.stdout, `catalog show --revision ${revision} --json`);
      const tools = (JSON.parse(show.stdout) as { tools: { tool: { name: string; description: string } }[] })
        .tools;
      expect(tools.map((t) => t.tool.name).sort()).toEqual(
        revision === "1" ? [C1_TOOL] : [C1_TOOL, RLO_TOOL].sort(),
      );
      expect(tools.find((t) => t.tool.name === C1_TOOL)!.tool.description).toBe(RLO_TEXT);
    }

    const diff = await runCli(["catalog", "diff", "shop", "--json"], { stateDir });
    expect(diff.code, diff.stderr).toBe(0);
    expectTerminalSafe(diff.stdout, "catalog diff --json");
    expect.soft(diff.stdout).toContain("drop\\u202etxt.exe");
    // decoded, the name is the server's, the override included
    expect(JSON.stringify(JSON.parse(diff.stdout))).toContain(RLO_TOOL);
  });

  it("passkey list --json: a passkey row's name a same-user process wrote with SQL", async () => {
    const stateDir = tempDir();
    const init = await runCli(["init"], { stateDir, env: passphraseEnv() });
    expect(init.code, init.stderr).toBe(0);
    const name = `key\u009b2J\u202eyek`;
    const db = new Database(join(stateDir, "portcullis.db"));
    db.prepare(
      `INSERT INTO passkeys (credential_id, name, public_key, counter, rp_id, transports_json, created_at, pin_seq)
       VALUES ('cred1', ?, 'AAAA', 0, 'localhost', '[]', '2026-01-01T00:00:00Z', NULL)`,
    ).run(name);
    db.close();
    const listed = await runCli(["passkey", "list", "--json"], { stateDir });
    expect(listed.code, listed.stderr).toBe(0);
    expectTerminalSafe(listed.stdout, "passkey list --json");
    expect(
      (JSON.parse(listed.stdout) as { passkeys: { name: string }[] }).passkeys.map((p) => p.name),
    ).toEqual([name]);
  });

  it("audit verify --json: the path of a --file that is no export, named in its problem", async () => {
    const stateDir = tempDir();
    const init = await runCli(["init"], { stateDir, env: passphraseEnv() });
    expect(init.code, init.stderr).toBe(0);
    const file = join(tempDir(), `export\u009b2J\u202e.jsonl`);
    writeFileSync(file, "");
    const verified = await runCli(["audit", "verify", "--file", file, "--json"], {
      stateDir,
      env: passphraseEnv(),
    });
    expectTerminalSafe(verified.stdout, "audit verify --json");
    expect((JSON.parse(verified.stdout) as { problem: string }).problem).toContain(file);
  });
});
