// A same-user agent (no passphrase; it can write any file of the state directory and any row of
// the store) against a rotation a human made with `portcullis rotate-keys`. It holds a copy of
// keyring.json made before the rotation and the old passphrase (the leak the rotation answers),
// or only a key of its own. A real gateway in front of the inventory fixture, the real CLI; the
// attacks are plain file copies and SQL on the live store. What each test would catch: a gateway
// (running, or started after the attack) that honours a grant signed with the old key once
// keyring.json is put back; a pin or rotation record appended by SQL, signed by a key the writer
// made, taken as moving the chain to its key; a chain whose rotation record was deleted (trigger
// dropped) letting the old keyring and its key back in, unseen by `audit verify`.

import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { reviewDigest } from "../../src/approval/decision.js";
import { decideRequest, getRequest } from "../../src/approval/requests.js";
import { type DecisionSigner, mintSigner } from "../../src/keyring/approver.js";
import { loadPublicKeyring, unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { nextStoredRequest, type Pending } from "../helpers/approvals.js";
import { held } from "../helpers/browser.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { withPassphrase } from "../helpers/passphraseChange.js";
import { makeProject } from "../helpers/project.js";
import { appendRotation, forgedRotation, rotateByCli } from "../helpers/rotation.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

const NEW = "the passphrase of the human's rotation";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A state directory with a pinned key, a copy of its keyring.json (the leak), then rotated by the CLI. */
async function rotatedWithLeak() {
  const stateDir = newStateDir();
  cleanup.push(() => removeDir(stateDir));
  const thief = tempDir("portcullis-thief-");
  cleanup.push(() => removeDir(thief));
  mkdirSync(thief, { recursive: true });
  copyFileSync(join(stateDir, "keyring.json"), join(thief, "keyring.json"));
  const rotated = await rotateByCli(stateDir, passphraseEnv(), NEW, ["--json"]);
  expect(rotated.code, rotated.stderr).toBe(0);
  const summary = JSON.parse(rotated.stdout) as { rotationRecord: number; approverKeyId: string };
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  return { stateDir, thief, summary, project };
}

async function gatewayOf(stateDir: string, project: ReturnType<typeof makeProject>) {
  const gw = await startInventory(project, ["--approval-timeout", "60000"], { stateDir });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return gw;
}

/** `req` approved for the session by `signer`, written straight into the live store. */
function signedBy(stateDir: string, keyringDir: string, signer: DecisionSigner, req: Pending): void {
  const db = openStore(stateDir);
  try {
    const stored = getRequest(db, req.request)!;
    decideRequest(
      db,
      req.request,
      { approve: true, for: "session", reviewed: reviewDigest(stored.review) },
      "attacker",
      signer,
      keyringDir,
    );
  } finally {
    db.close();
  }
}

async function oldSigner(thief: string): Promise<DecisionSigner> {
  const { signer, dataKey } = await unlockKeyring(thief, TEST_PASSPHRASE);
  dataKey.fill(0);
  return signer!;
}

/** What a gateway and `grants` say of a keyring.json put back to a copy made before the rotation. */
const ROTATED_AWAY_KEYRING =
  /the keyring's approver key [0-9a-f]{32} was rotated away \(audit record \d+\): keyring\.json is a copy made before that rotation/;
/** What they say of a chain with a record deleted. */
const MISSING = /the audit chain has a record missing/;

const forwarded = (project: ReturnType<typeof makeProject>) =>
  project.records().filter((r) => r.tool === "read_status").length;

describe("a same-user writer against a rotation", () => {
  it("the old keyring.json put back: neither the running gateway nor a restarted one honours the old key's grant", async () => {
    const { stateDir, thief, project } = await rotatedWithLeak();
    let gw = await gatewayOf(stateDir, project);
    const seen = new Set<string>();
    const rotatedKeyring = readFileSync(join(stateDir, "keyring.json"));
    copyFileSync(join(thief, "keyring.json"), join(stateDir, "keyring.json"));

    held(gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e));
    const r1 = await nextStoredRequest(stateDir, seen);
    const at = gw.stderr().length;
    signedBy(stateDir, thief, await oldSigner(thief), r1);
    await gw.waitForStderr(ROTATED_AWAY_KEYRING, 10_000, at);
    const listed = await runCli(["grants"], { stateDir });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`NOT HONOURED by any gateway: ${ROTATED_AWAY_KEYRING.source}`));
    expect(forwarded(project)).toBe(0);
    await gw.close();

    // started with the old keyring in place: it reads the rotation from the chain alone
    gw = await gatewayOf(stateDir, project);
    expect(gw.stderr()).toMatch(new RegExp(`no grant will be honoured: ${ROTATED_AWAY_KEYRING.source}`));
    held(gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e));
    const r2 = await nextStoredRequest(stateDir, seen);
    const at2 = gw.stderr().length;
    signedBy(stateDir, thief, await oldSigner(thief), r2);
    await gw.waitForStderr(ROTATED_AWAY_KEYRING, 10_000, at2);
    expect(forwarded(project)).toBe(0);
    await gw.close();
    writeFileSync(join(stateDir, "keyring.json"), rotatedKeyring, { mode: 0o600 });
  }, 30_000);

  it("a rotation record of the writer's own key appended with SQL is ignored: its grant is refused, the human's new key honoured", async () => {
    const { stateDir, project } = await rotatedWithLeak();
    const gw = await gatewayOf(stateDir, project);
    const seen = new Set<string>();
    // the record made as a real rotation is (session derived from the chain's current key, sealed
    // to its audit key, both public), naming the writer's key, signed by it; built on a copy of
    // the store and INSERTed into the live one
    const now = loadPublicKeyring(stateDir)!;
    const own = mintSigner(randomBytes(32));
    const forged = forgedRotation(own, own, now.publicKeyRaw, now.approver!.publicKeyRaw);
    const scratch = tempDir("portcullis-forge-");
    cleanup.push(() => removeDir(scratch));
    // (the gateway may append records of its own meanwhile: the record's seq is sealed in it, so it
    // is made again on a fresh copy until it goes in at the head)
    let row: { seq: number; record: Buffer } | null = null;
    for (let attempt = 0; row === null; attempt++) {
      const live = new Database(join(stateDir, "portcullis.db"));
      const copyDir = join(scratch, `copy-${attempt}`);
      mkdirSync(copyDir);
      live.exec(`VACUUM INTO '${join(copyDir, "portcullis.db")}'`);
      const copy = openStore(copyDir);
      let made: { seq: number; record: Buffer };
      try {
        const seq = appendRotation(copy, forged, now.publicKeyRaw, now.approver!.publicKeyRaw);
        made = copy.prepare("SELECT seq, record FROM audit_records WHERE seq = ?").get(seq) as typeof made;
      } finally {
        copy.close();
      }
      try {
        live.prepare("INSERT INTO audit_records (seq, record) VALUES (?, ?)").run(made.seq, made.record);
        row = made;
      } catch (e) {
        if (attempt >= 10) throw e;
      } finally {
        live.close();
      }
    }

    // the writer's grant, signed by its key: refused; the record reported as an ignored pin
    held(gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e));
    const r1 = await nextStoredRequest(stateDir, seen);
    const at = gw.stderr().length;
    signedBy(stateDir, stateDir, own, r1);
    await gw.waitForStderr(
      /is not honoured: its signature does not verify against the pinned approver key/,
      10_000,
      at,
    );
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => gw.stderr().includes(`records ${row.seq}`),
      20_000,
      "the gateway's line on the ignored record",
    );
    expect(gw.stderr()).toContain(`records ${row.seq}`);
    expect(forwarded(project)).toBe(0);
    const listed = await runCli(["grants"], { stateDir });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain(
      "NOT HONOURED by any gateway: its signature does not verify against the pinned approver key",
    );
    // the human's decision with the new keyring is still honoured by the same gateway
    const call = held(gw.client.callTool({ name: "read_status", arguments: {} }));
    const r2 = await nextStoredRequest(stateDir, seen);
    const approved = await runCli(["approve", r2.request, "--for", "session"], {
      stateDir,
      env: withPassphrase(NEW),
    });
    expect(approved.code, approved.stderr).toBe(0);
    expect((await call).isError).toBeFalsy();
    expect(forwarded(project)).toBe(1);
  }, 30_000);

  it("the rotation record deleted (its trigger dropped), the old keyring put back: audit verify fails and a gateway honours nothing", async () => {
    const { stateDir, thief, summary, project } = await rotatedWithLeak();
    const seen = new Set<string>();
    const db = new Database(join(stateDir, "portcullis.db"));
    db.exec("DROP TRIGGER audit_records_no_delete");
    db.prepare("DELETE FROM audit_records WHERE seq = ?").run(summary.rotationRecord);
    db.close();
    copyFileSync(join(thief, "keyring.json"), join(stateDir, "keyring.json"));
    const verified = await runCli(["audit", "verify"], { stateDir });
    expect(verified.code).toBe(1);
    expect(verified.stdout + verified.stderr).toContain(`record ${summary.rotationRecord} is missing`);

    // a gateway started after it: the chain now ends at the old key, and keyring.json holds it;
    // the gap is what gives the deletion away
    const gw = await gatewayOf(stateDir, project);
    // (its first look for a missing record is made in steps once it serves)
    await gw.waitForStderr(new RegExp(`no grant will be honoured: ${MISSING.source}`), 10_000);
    held(gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e));
    const r1 = await nextStoredRequest(stateDir, seen);
    const at = gw.stderr().length;
    signedBy(stateDir, thief, await oldSigner(thief), r1);
    await gw.waitForStderr(new RegExp(`is not honoured: ${MISSING.source}`), 10_000, at);
    expect(forwarded(project)).toBe(0);
    const listed = await runCli(["grants"], { stateDir });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`NOT HONOURED by any gateway: ${MISSING.source}`));
    await gw.close();
  }, 30_000);
});
