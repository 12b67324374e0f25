// Seed 000: "Il n'est pas nécessaire de redémarrer une session pour corriger une faute dans une
// description." Seed 003: "Ne redémarrez pas seulement pour respecter un rituel … Une équipe qui
// redémarre pour chaque correction orthographique finira par ignorer la règle." A description
// whose spelling is corrected (same schema, same code, same epoch) is a metadata refresh: the
// catalog is refreshed in the same epoch, no session restarts. Departure (docs/design.md): the
// edited description still expands, so its tool is asked about again (one edited letter can turn
// "does not" into "does now"); whitespace alone keeps the grant. Seed 000 also:
// a running server may publish another (tenant) catalog with its executable fixed: refresh the
// metadata, keep the epoch, and judge the approval by whether the new catalog exceeds its scope.
// Real gateway, real catalog fixture, approvals by the real CLI with the passphrase.
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, pending } from "../helpers/approvals.js";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const NOTES: ToolDef = {
  name: "read_notes",
  description: "Retrun the release notes of a version.",
  inputSchema: { type: "object", required: ["version"], properties: { version: { type: "string" } } },
  annotations: { readOnlyHint: true },
};
const NOTES_FIXED: ToolDef = { ...NOTES, description: "Return the release notes of a version." };
const DROP_TABLE: ToolDef = {
  name: "drop_table",
  description: "Drop a table of this tenant.",
  inputSchema: { type: "object", required: ["table"], properties: { table: { type: "string" } } },
};
const NOTES_SPACED: ToolDef = { ...NOTES, description: "Retrun  the release notes of a version. " };

async function setup(
  initial: ToolDef[] = [NOTES],
): Promise<{ stateDir: string; write: (t: ToolDef[]) => Promise<void>; call: () => Promise<unknown> }> {
  const stateDir = newStateDir();
  const cat = makeCatalog(initial);
  const gw = await startGateway({
    args: ["--label", "notes", "--approval-timeout", "30000", "--", ...fixtureCommand("catalog")],
    env: cat.env,
    stateDir,
  });
  cleanup.push(
    () => gw.close(),
    () => cat.cleanup(),
  );
  await gw.client.listTools();
  const first = gw.client.callTool({ name: "read_notes", arguments: { version: "1" } });
  const r = await nextStoredRequest(stateDir);
  await decideByCli(stateDir, "approve", r.request, "--for", "session");
  await first;
  return {
    stateDir,
    write: async (tools) => {
      const from = gw.received().length;
      cat.write(tools);
      await gw.waitForNotification("notifications/tools/list_changed", 10_000, from);
      await gw.client.listTools();
    },
    // the call either goes through on the grant, or waits for a human: the client gives up on
    // such a wait after 5 s (a request then stays pending), which the test reads as "asked"
    call: () =>
      gw.client
        .callTool({ name: "read_notes", arguments: { version: "2" } }, undefined, { timeout: 5_000 })
        .catch((e) => e),
  };
}

/** The call went through on the run's grant: answered, not refused, and nobody was asked. */
async function coveredWithoutAsking(stateDir: string, call: () => Promise<unknown>) {
  const result = (await call()) as { isError?: boolean; code?: number };
  const asked = await pending(stateDir);
  return result.code === undefined && !result.isError && asked.length === 0;
}

describe("seed 000/003: metadata-only refreshes under one epoch", () => {
  it("whitespace only: the grant keeps covering the tool", async () => {
    const { stateDir, write, call } = await setup();
    await write([NOTES_SPACED]);
    expect(await coveredWithoutAsking(stateDir, call)).toBe(true);
  });

  it("a corrected typo (Retrun → Return): the catalog is refreshed in the same session; the tool is asked about again (the stated departure)", async () => {
    const { stateDir, write, call } = await setup();
    await write([NOTES_FIXED]);
    const diff = JSON.parse((await runCli(["catalog", "diff", "notes", "--json"], { stateDir })).stdout);
    expect(diff.entries).toEqual([
      expect.objectContaining({ tool: "read_notes", kind: "modified", classification: "expands" }),
    ]);
    void call();
    const asked = await nextStoredRequest(stateDir);
    expect(asked.tool).toBe("read_notes");
  });

  it("a narrower tenant catalog (another tool withdrawn): same epoch, the grant keeps covering the tool", async () => {
    const { stateDir, write, call } = await setup([NOTES, DROP_TABLE]);
    const epoch = () =>
      runCli(["status", "--json"], { stateDir }).then(
        (r) => JSON.parse(r.stdout).gateways[0].epoch as string,
      );
    const before = await epoch();
    await write([NOTES]);
    expect(await epoch()).toBe(before);
    expect(await coveredWithoutAsking(stateDir, call)).toBe(true);
  });
});
