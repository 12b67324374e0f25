// Seed 000, "Un exécutable modifié a besoin d'une nouvelle identité" (the get_invoice example) and
// "Les enregistrements d'audit doivent indiquer quel code a agi": a rebuild that keeps the tool
// list byte-identical but changes the handler must still be a new epoch, and a session approval
// of the old epoch must not reach the new code, even though the agent's catalog is not stale.
// The audit must read as the seed's compact sequence (server_started with the entry digest,
// approval_granted with epoch and scope, tool_called with epoch, server_replaced old/new,
// authorization_denied under the new epoch), name the credential scope, never the secret, and
// verify offline without the keyring (seed 003, "La trace d'audit doit résister…").
// Also: "L'époque donne à chaque redémarrage un identifiant unique, même si l'artefact recompilé
// produit par hasard le même condensat": a respawn of byte-identical code is a new epoch, and a
// grant of the old one does not cover it.
// Real gateway, revisioned fixture rebuilt between revisions, vault secret delivered to the
// environment, approvals by the real CLI with the passphrase.
import { createHash } from "node:crypto";
import { renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, verifiedAuditEvents } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { makeProject, type Project, type Revision } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";
import { everyFile, storeSecret } from "../vault/helpers.js";

const SECRET = "seed-invoice-key-3b9e51f0c2";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Row {
  epoch: string;
  record: { identityDigest: string; entry: { sha256: string } | null };
}

async function statusRow(stateDir: string): Promise<Row> {
  const r = await runCli(["status", "--json"], { stateDir });
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { gateways: Row[] }).gateways[0]!;
}

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

/** The revisioned project with a portcullis.json: env-delivered credential, session approval. */
async function setup(revision: Revision, server: Record<string, unknown>) {
  const project: Project = makeProject(revision);
  cleanup.push(() => project.cleanup());
  const config = {
    servers: {
      inventory: {
        command: NODE,
        args: ["dist/server.js"],
        env: project.env,
        credentials: { INVENTORY_API_KEY: { secret: "inventory-api-staging", deliver: "env" } },
        tools: {
          adjust_inventory: { credentials: ["inventory-api-staging"] },
          read_status: { credentials: [] },
          crash_now: { credentials: [] },
          slow_write: { credentials: [] },
        },
        ...server,
      },
    },
  };
  writeFileSync(join(project.dir, "portcullis.json"), JSON.stringify(config, null, 2));
  const stateDir = newStateDir();
  cleanup.push(async () => {
    await runCli(["lock"], { stateDir });
  });
  await storeSecret(stateDir, "inventory-api-staging", SECRET, "--deliver", "env");
  expect((await runCli(["unlock", "--for", "10m"], { stateDir, env: passphraseEnv() })).code).toBe(0);
  const gw = await startGateway({
    args: ["inventory", "--approval-timeout", "30000"],
    cwd: project.dir,
    stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return { project, stateDir, gw };
}

describe("seed 000: the code changes, the catalog does not", () => {
  it("get_invoice: a byte-identical tool list over a new handler is a new epoch; the old session grant never reaches the new code; the audit tells the two epochs apart", async () => {
    const { project, stateDir, gw } = await setup("B", { onChange: "restart" });
    const before = await statusRow(stateDir);
    const seen = new Set<string>();
    const adjust = (delta: number) =>
      gw.client.callTool({ name: "adjust_inventory", arguments: { sku: "INV-1", delta, warehouse: "w" } });

    // approved for the session under epoch B, with its credential scope
    const first = adjust(1);
    const r1 = await nextStoredRequest(stateDir, seen);
    expect(r1.executionEpoch).toBe(before.epoch);
    await decideByCli(stateDir, "approve", r1.request, "--for", "session");
    expect((await first).isError).toBeFalsy();
    expect((await adjust(2)).isError).toBeFalsy(); // covered for the session

    // the handler changes, the tool list stays byte-identical (revision C)
    const mark = gw.stderr().length;
    project.rebuild("C");
    await gw.waitForStderr(/new execution epoch: pid=\d+ epoch=\S+ \(was \S+; restart\)/, 15_000, mark);
    const after = await waitFor(
      async () => {
        const row = await statusRow(stateDir);
        return row.epoch !== before.epoch ? row : null;
      },
      15_000,
      "the new epoch in status",
    );
    expect(after.record.identityDigest).not.toBe(before.record.identityDigest);
    // the catalog did not change: no new revision, no list_changed needed
    const revisions = JSON.parse(
      (await runCli(["catalog", "list", "inventory", "--json"], { stateDir })).stdout,
    ).revisions as unknown[];
    expect(revisions).toHaveLength(1);

    // the agent, whose catalog is still current, calls again: refused because the epoch changed
    const stale = refusal(await adjust(3).catch((e) => e));
    expect(stale.code).toBe(-32051);
    expect(stale.data).toMatchObject({
      error: "authorization_stale",
      reason: "server execution epoch changed",
      approvedEpoch: before.epoch,
      currentEpoch: after.epoch,
      retry: "refresh tool metadata and request authorization",
    });
    expect(stale.data.seenRevision).toBeUndefined();
    // nothing reached revision C
    expect(project.records().filter((r) => r.revision === "C")).toEqual([]);

    // a new human decision for the new epoch, then the new code acts
    const third = adjust(4);
    const r2 = await nextStoredRequest(stateDir, seen);
    expect(r2.executionEpoch).toBe(after.epoch);
    await decideByCli(stateDir, "approve", r2.request, "--for", "session");
    expect((await third).isError).toBeFalsy();
    const key = createHash("sha256").update(SECRET).digest("hex").slice(0, 12);
    expect(project.records().map((r) => [r.revision, r.args.delta, r.credential])).toEqual([
      ["B", 1, key],
      ["B", 2, key],
      ["C", 4, key],
    ]);

    // the audit: which code acted, under which approval
    await gw.close();
    const events = await verifiedAuditEvents(stateDir);
    const started = events.filter((e) => e.type === "server_started");
    expect(started.map((e) => e.epoch)).toEqual([before.epoch, after.epoch]);
    const startedRecord = started[0]!.record as { entry: { sha256: string } | null };
    expect(startedRecord.entry?.sha256).toBe(before.record.entry?.sha256);
    const granted = events.filter((e) => e.type === "approval_granted");
    expect(granted.map((e) => [e.epoch, e.credentialScope])).toEqual([
      [before.epoch, ["inventory-api-staging"]],
      [after.epoch, ["inventory-api-staging"]],
    ]);
    const called = events.filter((e) => e.type === "tool_called" && e.tool === "adjust_inventory");
    expect(called.map((e) => [e.epoch, e.grant, e.credentialScope])).toEqual([
      [before.epoch, granted[0]!.grant, ["inventory-api-staging"]],
      [before.epoch, granted[0]!.grant, ["inventory-api-staging"]],
      [after.epoch, granted[1]!.grant, ["inventory-api-staging"]],
    ]);
    const replaced = events.filter((e) => e.type === "server_replaced");
    expect(replaced).toEqual([expect.objectContaining({ oldEpoch: before.epoch, newEpoch: after.epoch })]);
    const denied = events.filter((e) => e.type === "authorization_denied");
    expect(denied).toEqual([
      expect.objectContaining({
        epoch: after.epoch,
        reason: "authorization_stale",
        tool: "adjust_inventory",
      }),
    ]);
    // order: replaced before the refusal, the refusal before the new grant
    const seq = (e: { seq: number }) => e.seq;
    expect(seq(replaced[0]!)).toBeLessThan(seq(denied[0]!));
    expect(seq(denied[0]!)).toBeLessThan(seq(granted[1]!));
    expect(seq(granted[1]!)).toBeLessThan(seq(called[2]!));

    // the scope is named, the secret never written anywhere in the state directory
    const exported = await runCli(["audit", "export"], { stateDir });
    expect(exported.stdout).not.toContain(SECRET);
    for (const f of everyFile(stateDir)) expect(f.text, f.path).not.toContain(SECRET);
    // the chain verifies offline, on ciphertext, without the keyring
    renameSync(join(stateDir, "keyring.json"), join(stateDir, "keyring.json.away"));
    try {
      const verified = await runCli(["audit", "verify", "--json"], { stateDir });
      expect(verified.code, verified.stderr).toBe(0);
    } finally {
      renameSync(join(stateDir, "keyring.json.away"), join(stateDir, "keyring.json"));
    }
  });

  it("a respawn of the same bytes: same identity digest, a new epoch, and the old grant does not cover it", async () => {
    const { project, stateDir, gw } = await setup("A", { approval: { tools: { crash_now: "none" } } });
    const before = await statusRow(stateDir);
    const seen = new Set<string>();
    const first = gw.client.callTool({ name: "read_status", arguments: {} });
    const r1 = await nextStoredRequest(stateDir, seen);
    await decideByCli(stateDir, "approve", r1.request, "--for", "session");
    expect((await first).isError).toBeFalsy();

    const crashed = refusal(await gw.client.callTool({ name: "crash_now", arguments: {} }).catch((e) => e));
    expect(crashed.data).toMatchObject({ error: "epoch_transition", retried: false });
    await gw.waitForStderr(/new execution epoch: .*respawn/, 15_000);
    const after = await waitFor(
      async () => {
        const row = await statusRow(stateDir);
        return row.epoch !== before.epoch ? row : null;
      },
      15_000,
      "the respawned epoch",
    );
    expect(after.record.identityDigest).toBe(before.record.identityDigest);

    const stale = refusal(await gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e));
    expect(stale.code).toBe(-32051);
    expect(stale.data).toMatchObject({
      error: "authorization_stale",
      approvedEpoch: before.epoch,
      currentEpoch: after.epoch,
    });
    expect(project.records().filter((r) => r.tool === "read_status")).toHaveLength(1);
  });
});
