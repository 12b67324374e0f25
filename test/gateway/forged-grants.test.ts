// Signed decisions, end to end: real gateways in front of the real inventory fixture, the real
// CLI deciding with the passphrase, and an attacker that writes the store (plain SQL, or the
// approval module's own code without the passphrase) or swaps keyring.json. Nothing the attacker
// writes is honoured; what was refused is in the audit as decision_rejected.

import { spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { describe, type ExpectStatic, it } from "vitest";
import { openRecords } from "../../src/audit/log.js";
import { approverKeyId } from "../../src/keyring/approver.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { decideByCli, nextStoredRequest, type Pending, storedPending } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { inventoryGateway } from "../helpers/inventoryGateway.js";
import { NODE, REPO } from "../helpers/paths.js";
import { makeProject, type Project } from "../helpers/project.js";
import { newKeyringOnlyStateDir, newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";
import { type Cleanup, teardownOf } from "../helpers/teardown.js";

/** A connection to the gateway's store, as any process of the same user can open one. */
function sql(stateDir: string, cleanup: Cleanup): Database.Database {
  const db = new Database(join(stateDir, "portcullis.db"));
  db.pragma("busy_timeout = 10000");
  cleanup.push(() => {
    db.close();
  });
  return db;
}

/** Every audit event, decrypted with the passphrase. */
async function auditEvents(stateDir: string): Promise<Record<string, unknown>[]> {
  const db = openStore(stateDir);
  try {
    const { auditPrivateKey } = await unlockKeyring(stateDir, TEST_PASSPHRASE);
    return [...openRecords(db, auditPrivateKey)].map((r) => r.event);
  } finally {
    db.close();
  }
}

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

/**
 * A gateway before the inventory fixture, asking a human for `timeoutMs` (10 s by default: the
 * CLI's decision of a first call, and a forger's write, must land within it on a loaded machine
 * with the cases side by side; a case that waits it out does so beside the others).
 */
async function gateway(project: Project, stateDir: string, cleanup: Cleanup, timeoutMs = 10_000) {
  const gw = await startInventory(project, ["--approval-timeout", String(timeoutMs)], { stateDir });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return gw;
}

/** gateway() in a case's own state directory, before its own project (the fixture at revision A). */
const ownGateway = (cleanup: Cleanup, timeoutMs = 10_000) =>
  inventoryGateway("A", ["--approval-timeout", String(timeoutMs)], cleanup);

/** A grant row as an attacker writes it: the request's subject, any signature (or none). */
function forgeGrant(db: Database.Database, p: Pending, grant: string, signature: string | null) {
  db.prepare(
    `INSERT INTO grants (grant_id, agent_run, server_label, execution_epoch, catalog_revision, tool_scope_json,
       tool_defs_json, credential_scope_json, mode, issued_at, expires_when, request, approved_by, signature)
     VALUES (?, ?, ?, ?, 1, ?, '{}', '[]', 'session', ?, 'agent-run-ends', ?, 'attacker', ?)`,
  ).run(
    grant,
    p.agentRun,
    p.serverLabel,
    p.executionEpoch,
    JSON.stringify([{ name: p.tool, fingerprint: p.fingerprint }]),
    new Date().toISOString(),
    p.request,
    signature,
  );
}

const TIMEOUT = -32058;

/**
 * A gateway (10 s approval timeout) whose run asked once and was denied by the human with the
 * CLI: the approver key is pinned, so what a case forges next is refused for its signature, not
 * for want of a pin. `pinned`: that denied request (its run, epoch and tool are the next call's).
 */
async function pinnedGateway(cleanup: Cleanup, expect: ExpectStatic) {
  const { stateDir, project, gw } = await ownGateway(cleanup);
  const seen = new Set<string>();
  const db = sql(stateDir, cleanup);
  // the handler is attached at once: the denial can arrive while the CLI is still exiting
  const denied = gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
  const pinned = await nextStoredRequest(stateDir, seen);
  await decideByCli(stateDir, "deny", pinned.request);
  expect(refusal(await denied).data).toMatchObject({ error: "approval_denied" });
  return { stateDir, project, gw, seen, db, pinned };
}

// Each case has its own state directory, project and gateways, and most wait out an approval
// timeout (10 s to 15 s): they run side by side.
describe.concurrent("decisions written without the approver key are not honoured", () => {
  // (Two cases, each waiting out one approval timeout, side by side: one case waited out both in turn.)
  it("a request approved by SQL, with a grant that has no signature, keeps the call waiting", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    const { stateDir, project, gw, seen, db } = await pinnedGateway(cleanup, expect);

    // approved by SQL, with a grant that has no signature
    const first = gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    const r1 = await nextStoredRequest(stateDir, seen);
    forgeGrant(db, r1, "01FORGEDGRANT0000000000001", null);
    db.prepare(
      "UPDATE approval_requests SET state = 'approved', decided_by = 'sql', decision_for = 'session', grant_id = ? WHERE request = ?",
    ).run("01FORGEDGRANT0000000000001", r1.request);
    // not an expiry: the request was decided, with nothing this call could use, and a retry asks again
    expect(refusal(await first)).toMatchObject({
      code: TIMEOUT,
      data: {
        error: "approval_timeout",
        reason: "approval request decided, but the decision did not verify",
        retry: "retry the call to ask a human again (a new approval request)",
        approvalRequest: r1.request,
        pendingUntil: null,
      },
    });

    expect(project.records()).toEqual([]);
    expect(gw.stderr()).toMatch(/grant 01FORGEDGRANT0000000000001 is not honoured: it is not signed/);
    const rejected = (await auditEvents(stateDir)).filter((e) => e.type === "decision_rejected");
    expect(rejected).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ what: "grant", grant: "01FORGEDGRANT0000000000001", request: r1.request }),
      ]),
    );
    // once, although the gateway read it many times
    expect(rejected.filter((e) => e.grant === "01FORGEDGRANT0000000000001")).toHaveLength(1);
  });

  it("a session grant inserted by SQL with a garbage signature covers nothing; a request denied by SQL keeps the call waiting", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    const { stateDir, project, gw, seen, db, pinned } = await pinnedGateway(cleanup, expect);

    // a session grant inserted by SQL for the run (the subject of the run's request the human
    // denied), garbage signature: the next call asks a human
    forgeGrant(db, { ...pinned, request: "none" }, "01FORGEDGRANT0000000000002", "A".repeat(86));
    const second = gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    const r2 = await nextStoredRequest(stateDir, seen);
    // … and denying it by SQL does not end the wait either
    db.prepare(
      "UPDATE approval_requests SET state = 'denied', decided_by = 'sql', reason = 'x', decision_signature = 'garbage' WHERE request = ?",
    ).run(r2.request);
    expect(refusal(await second).code).toBe(TIMEOUT);

    expect(project.records()).toEqual([]);
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => /grant 01FORGEDGRANT0000000000002 is not honoured/.test(gw.stderr()),
      20_000,
      "the gateway's line on the forged grant",
    );
    expect(gw.stderr()).toMatch(
      /grant 01FORGEDGRANT0000000000002 is not honoured: its signature does not verify/,
    );
    const rejected = (await auditEvents(stateDir)).filter((e) => e.type === "decision_rejected");
    expect(rejected).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ what: "grant", grant: "01FORGEDGRANT0000000000002" }),
        expect.objectContaining({ what: "denial", request: r2.request }),
      ]),
    );
  });

  it("a signed grant edited by SQL (run, tools) stops covering; restored, it covers again", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const x = await gateway(project, stateDir, cleanup, 30_000);
    const y = await gateway(project, stateDir, cleanup, 30_000);
    await y.client.listTools();
    const seen = new Set<string>();
    const db = sql(stateDir, cleanup);
    const callX = x.client.callTool({ name: "read_status", arguments: {} });
    const rx = await nextStoredRequest(stateDir, seen);
    await decideByCli(stateDir, "approve", rx.request);
    await callX;
    const grant = db.prepare("SELECT * FROM grants WHERE request = ?").get(rx.request) as {
      grant_id: string;
      agent_run: string;
      tool_scope_json: string;
    };
    // Y's run id, from Y's own request (denied by the human)
    const asked = y.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    const ry = await nextStoredRequest(stateDir, seen);
    await decideByCli(stateDir, "deny", ry.request);
    await asked;

    // the run changed to Y's: Y is not covered (it asks)
    db.prepare("UPDATE grants SET agent_run = ? WHERE grant_id = ?").run(ry.agentRun, grant.grant_id);
    const callY = y.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    await decideByCli(stateDir, "deny", (await nextStoredRequest(stateDir, seen)).request);
    expect(refusal(await callY).data).toMatchObject({ error: "approval_denied" });

    // the tools changed (a second tool added): X is not covered any more either
    const widened = JSON.parse(grant.tool_scope_json) as { name: string; fingerprint: string }[];
    widened.push({ name: "adjust_inventory", fingerprint: widened[0]!.fingerprint });
    db.prepare("UPDATE grants SET agent_run = ?, tool_scope_json = ? WHERE grant_id = ?").run(
      grant.agent_run,
      JSON.stringify(widened),
      grant.grant_id,
    );
    const callX2 = x.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    await decideByCli(stateDir, "deny", (await nextStoredRequest(stateDir, seen)).request);
    expect(refusal(await callX2).data).toMatchObject({ error: "approval_denied" });

    // restored to what was signed: it covers again, without asking
    db.prepare("UPDATE grants SET tool_scope_json = ? WHERE grant_id = ?").run(
      grant.tool_scope_json,
      grant.grant_id,
    );
    await x.client.callTool({ name: "read_status", arguments: {} });
    expect(storedPending(stateDir)).toEqual([]);
    expect(project.records().map((r) => r.tool)).toEqual(["read_status", "read_status"]);
    const rejected = (await auditEvents(stateDir)).filter((e) => e.type === "decision_rejected");
    expect(rejected.filter((e) => e.grant === grant.grant_id).length).toBeGreaterThanOrEqual(2);
  });

  it("the approval module's own code without the passphrase cannot sign; its own key's signatures fail", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    // The forged grant must be written while the call still waits for a decision: a node process
    // writes it, which on a loaded machine outlasted a 4 s wait (the call timed out
    // before the gateway could see the grant, and no line said it was not honoured). The call
    // still ends with the wait; 15 s is room for the forger, not a subject.
    const { stateDir, project, gw } = await ownGateway(cleanup, 15_000);
    const seen = new Set<string>();
    const legit = gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    await decideByCli(stateDir, "deny", (await nextStoredRequest(stateDir, seen)).request);
    await legit;

    const call = gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    const r = await nextStoredRequest(stateDir, seen);
    const script = join(tempDir("portcullis-attacker-"), "attack.mjs");
    writeFileSync(
      script,
      `
      import { randomBytes } from "node:crypto";
      import { decideRequest } from ${JSON.stringify(join(REPO, "dist/approval/index.js"))};
      import { DecisionSigner, mintSigner } from ${JSON.stringify(join(REPO, "dist/keyring/approver.js"))};
      import { openStore } from ${JSON.stringify(join(REPO, "dist/store/db.js"))};
      try { new DecisionSigner(Symbol("approver signer"), randomBytes(32)); console.log("minted"); }
      catch (e) { console.log("refused: " + e.message); }
      const db = openStore(process.argv[2]);
      const own = mintSigner(randomBytes(32));
      const { grant } = decideRequest(db, process.argv[3], { approve: true, for: "session" }, "attacker", own);
      console.log("wrote " + grant.grant);
      `,
    );
    const ran = spawnSync(NODE, [script, stateDir, r.request], { encoding: "utf8" });
    expect(ran.stderr).toBe("");
    expect(ran.stdout).toMatch(/^refused: a DecisionSigner comes only from an unlocked keyring\nwrote /);
    const forged = ran.stdout.trim().split("wrote ")[1]!;
    // seen and refused while the call waits (the line and the answer travel on different pipes)
    await gw.waitForStderr(
      new RegExp(`grant ${forged} is not honoured: its signature does not verify against the pinned`),
    );
    expect(refusal(await call).code).toBe(TIMEOUT);
    expect(project.records()).toEqual([]);
    expect(await auditEvents(stateDir)).toContainEqual(
      expect.objectContaining({ type: "decision_rejected", grant: forged, request: r.request }),
    );
  });

  it("a keyring whose approver public key was swapped is detected: nothing is honoured, approve exits 1", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    const { stateDir, project, gw } = await ownGateway(cleanup, 30_000);
    const seen = new Set<string>();
    const first = gw.client.callTool({ name: "read_status", arguments: {} });
    await decideByCli(stateDir, "approve", (await nextStoredRequest(stateDir, seen)).request);
    await first;

    // the attacker's own pair; its public half goes into keyring.json
    const pair = generateKeyPairSync("ed25519");
    const raw = Buffer.from(pair.publicKey.export({ format: "jwk" }).x!, "base64url");
    const path = join(stateDir, "keyring.json");
    const keyring = JSON.parse(readFileSync(path, "utf8"));
    keyring.approver.publicKey = raw.toString("base64url");
    keyring.approver.keyId = approverKeyId(raw);
    writeFileSync(path, JSON.stringify(keyring, null, 2));

    // a new tool asks; the attacker approves it with its own key, through the approval module
    const call = gw.client
      .callTool({ name: "adjust_inventory", arguments: { sku: "S-1", delta: 1 } })
      .catch((e) => e);
    const r = await nextStoredRequest(stateDir, seen);
    const script = join(tempDir("portcullis-attacker-"), "attack.mjs");
    const d = pair.privateKey.export({ format: "jwk" }).d!;
    writeFileSync(
      script,
      `
      import { decideRequest } from ${JSON.stringify(join(REPO, "dist/approval/index.js"))};
      import { mintSigner } from ${JSON.stringify(join(REPO, "dist/keyring/approver.js"))};
      import { openStore } from ${JSON.stringify(join(REPO, "dist/store/db.js"))};
      const signer = mintSigner(Buffer.from(${JSON.stringify(d)}, "base64url"));
      decideRequest(openStore(process.argv[2]), process.argv[3], { approve: true, for: "session" }, "attacker", signer);
      `,
    );
    expect(spawnSync(NODE, [script, stateDir, r.request], { encoding: "utf8" }).status).toBe(0);
    await gw.waitForStderr(/is not the one pinned in the audit chain/, 20_000);

    // the human's passphrase command refuses the swapped keyring (exit 1), and says why
    const again = gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    const r2 = await nextStoredRequest(stateDir, seen); // the legitimate grant is no longer honoured either
    const refused = await runCli(["approve", r2.request, "--for", "session", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/approver private key does not open .*public half was changed/);
    // a gateway started now says so at once
    const later = await gateway(project, stateDir, cleanup, 30_000);
    await later.waitForStderr(
      /no grant will be honoured: the keyring's approver key [0-9a-f]{32} is not the one pinned/,
    );
    await gw.client.close();
    await Promise.allSettled([call, again]);
    expect(project.records().map((x) => x.tool)).toEqual(["read_status"]);
  });
});

describe("a keyring made before decisions were signed", () => {
  it("gets its approver key when the audit is read with the passphrase, pinned in the chain", async ({
    expect,
  }) => {
    const stateDir = newKeyringOnlyStateDir(); // its store not made yet: made before the pin existed
    const path = join(stateDir, "keyring.json");
    const old = JSON.parse(readFileSync(path, "utf8"));
    delete old.approver;
    writeFileSync(path, JSON.stringify(old, null, 2));
    const read = await runCli(["audit", "activity", "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(read.code).toBe(0);
    expect(read.stderr).toMatch(
      /keyring upgraded: approver key [0-9a-f]{32} pinned in the audit chain \(record 1\)/,
    );
    const upgraded = JSON.parse(readFileSync(path, "utf8"));
    expect(await auditEvents(stateDir)).toEqual([
      expect.objectContaining({ type: "approver_key_pinned", approverKeyId: upgraded.approver.keyId }),
    ]);
  });

  it("gets its approver key at the next passphrase command, pinned in the audit chain", async ({
    expect,
    onTestFinished,
  }) => {
    const cleanup = teardownOf(onTestFinished);
    const stateDir = newKeyringOnlyStateDir(); // its store not made yet: made before the pin existed
    const path = join(stateDir, "keyring.json");
    const old = JSON.parse(readFileSync(path, "utf8"));
    delete old.approver;
    writeFileSync(path, JSON.stringify(old, null, 2));
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await gateway(project, stateDir, cleanup, 30_000);
    const call = gw.client.callTool({ name: "read_status", arguments: {} });
    const r = await nextStoredRequest(stateDir, new Set());
    const approved = await decideByCli(stateDir, "approve", r.request);
    expect(approved.stderr).toMatch(/approver key [0-9a-f]{32} pinned in the audit chain/);
    await call;
    const upgraded = JSON.parse(readFileSync(path, "utf8"));
    expect(upgraded.approver).toMatchObject({
      alg: "Ed25519",
      keyId: expect.stringMatching(/^[0-9a-f]{32}$/),
    });
    expect(await auditEvents(stateDir)).toContainEqual(
      expect.objectContaining({
        type: "approver_key_pinned",
        approverKeyId: upgraded.approver.keyId,
        approverPublicKey: upgraded.approver.publicKey,
      }),
    );
    expect(project.records().map((x) => x.tool)).toEqual(["read_status"]);
  });
});
