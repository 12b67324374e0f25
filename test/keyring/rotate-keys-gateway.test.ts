// `portcullis rotate-keys` against a thief holding a copy of keyring.json made before the rotation
// and the old passphrase: a real gateway in front of the inventory fixture, the real CLI deciding
// and rotating. The thief signs grants the way such a copy lets anyone: the old keyring opened
// with the old passphrase, its approver key signing the request's own review (decideRequest, as
// `approve` does), the grant written into the live store. What each test would catch: a running
// gateway that keeps honouring the old key after a rotation (it learnt the pin once), or a
// restarted one that does (it trusts the first pin); a session grant of the old key still covering
// calls; a decision signed with the new key not honoured; a rotation record signed by a made-up
// key taken as a rotation.

import { randomBytes } from "node:crypto";
import { copyFileSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { reviewDigest } from "../../src/approval/decision.js";
import { PinTracker } from "../../src/approval/pin.js";
import { decideRequest, getRequest } from "../../src/approval/requests.js";
import { storedRecords } from "../../src/audit/log.js";
import { parseHeader, splitRecord } from "../../src/audit/record.js";
import { mintSigner } from "../../src/keyring/approver.js";
import { loadPublicKeyring, unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { nextStoredRequest, type Pending } from "../helpers/approvals.js";
import { held } from "../helpers/browser.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { withPassphrase } from "../helpers/passphraseChange.js";
import { makeProject } from "../helpers/project.js";
import { appendRotation, forgedRotation, readStatusGranted, rotateByCli } from "../helpers/rotation.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

const NEW = "the passphrase after the rotation";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** The thief's copy: keyring.json as it was before the rotation, in a directory of its own. */
function thiefCopy(stateDir: string): string {
  const dir = tempDir("portcullis-thief-");
  cleanup.push(() => removeDir(dir));
  mkdirSync(dir, { recursive: true });
  copyFileSync(join(stateDir, "keyring.json"), join(dir, "keyring.json"));
  return dir;
}

/** The thief approves `req` with the old keyring and passphrase, writing into the live store. */
async function thiefApproves(stateDir: string, thief: string, req: Pending): Promise<void> {
  const { signer, dataKey } = await unlockKeyring(thief, TEST_PASSPHRASE);
  dataKey.fill(0);
  const db = openStore(stateDir);
  try {
    const stored = getRequest(db, req.request)!;
    const reach = stored.mode === "per-call" ? "call" : "session";
    // its record sealed to the old audit key (the copy's), as the thief's own keyring gives it
    decideRequest(
      db,
      req.request,
      { approve: true, for: reach, reviewed: reviewDigest(stored.review) },
      "thief",
      signer!,
      thief,
    );
  } finally {
    db.close();
  }
}

/** `approve ID --for session` with the new passphrase; it must succeed. */
async function approveWithNew(stateDir: string, id: string): Promise<void> {
  const r = await runCli(["approve", id, "--for", "session"], { stateDir, env: withPassphrase(NEW) });
  expect(r.code, r.stderr).toBe(0);
}

/** The headers of the records of type `type` a process wrote, in order. */
function gatewayRecords(stateDir: string, pid: number, type: string): { seq: number; key: string }[] {
  const db = openStore(stateDir);
  try {
    return [...storedRecords(db)]
      .map((r) => parseHeader(splitRecord(r)!.header)!)
      .filter((h) => h.pid === pid && h.type === type)
      .map((h) => ({ seq: h.seq, key: h.key }));
  } finally {
    db.close();
  }
}

function refusal(e: unknown) {
  return e as { code: number; data: Record<string, unknown> };
}

const NOT_VERIFIED = "approval request decided, but the decision did not verify";
const HOLD_MS = "6000";
/** What a gateway says of a grant signed by the key rotated away (stderr, and decision_rejected). */
const ROTATED_AWAY = /is not honoured: it was signed by approver key [0-9a-f]{32}, rotated away/;

describe("portcullis rotate-keys", () => {
  it("the old key's grants are honoured neither by the running gateway nor by a restarted one; the new key's are", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const thief = thiefCopy(stateDir);
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    // the thief's approvals hold their calls until this timeout: short, as the real ones are quick
    let gw = await startInventory(project, ["--approval-timeout", HOLD_MS], { stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const seen = new Set<string>();
    const forwarded = () => project.records().filter((r) => r.tool === "read_status").length;

    // a real session grant before the rotation
    await readStatusGranted(gw, stateDir, seen);
    expect(forwarded()).toBe(1);

    const rotated = await rotateByCli(stateDir, passphraseEnv(), NEW, ["--json"]);
    expect(rotated.code, rotated.stderr).toBe(0);
    const summary = JSON.parse(rotated.stdout) as Record<string, unknown>;
    expect(summary).toMatchObject({ rotated: true, grantsNoLongerHonoured: 1 });
    expect(summary.rotationRecord).toEqual(expect.any(Number));

    // `grants`: the old grant NOT HONOURED, saying it was signed by a key rotated away
    const listed = await runCli(["grants"], { stateDir });
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      /NOT HONOURED by any gateway: it was signed by approver key [0-9a-f]{32}, rotated away/,
    );

    // the running gateway: the session grant covers no more call; the call asks again
    const second = held(gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e));
    const r2 = await nextStoredRequest(stateDir, seen);
    const at2 = gw.stderr().length;
    await thiefApproves(stateDir, thief, r2);
    await gw.waitForStderr(ROTATED_AWAY, 10_000, at2);
    expect(refusal(await second)).toMatchObject({
      data: { error: "approval_timeout", reason: NOT_VERIFIED },
    });
    expect(forwarded()).toBe(1);

    // a decision made with the new keyring is honoured by the same running gateway
    const third = held(gw.client.callTool({ name: "read_status", arguments: {} }));
    const r3 = await nextStoredRequest(stateDir, seen);
    await approveWithNew(stateDir, r3.request);
    expect((await third).isError).toBeFalsy();
    expect(forwarded()).toBe(2);

    // the running gateway seals its records to the new audit key since it saw the rotation (its
    // last call came after the thief's approval held a call for seconds)
    const newAuditKeyId = loadPublicKeyring(stateDir)!.keyId;
    expect(newAuditKeyId).toBe(summary.auditKeyId);
    const lastCall = gatewayRecords(stateDir, gw.pid, "tool_called").at(-1)!;
    expect(lastCall.seq).toBeGreaterThan(summary.rotationRecord as number);
    expect(lastCall.key).toBe(newAuditKeyId);

    // restarted: the old key's grant is not honoured, the new key's is
    await gw.close();
    gw = await startInventory(project, ["--approval-timeout", HOLD_MS], { stateDir });
    await gw.client.listTools();
    const fourth = held(gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e));
    const r4 = await nextStoredRequest(stateDir, seen);
    const at4 = gw.stderr().length;
    await thiefApproves(stateDir, thief, r4);
    await gw.waitForStderr(ROTATED_AWAY, 10_000, at4);
    expect(refusal(await fourth)).toMatchObject({
      data: { error: "approval_timeout", reason: NOT_VERIFIED },
    });
    const fifth = held(gw.client.callTool({ name: "read_status", arguments: {} }));
    const r5 = await nextStoredRequest(stateDir, seen);
    await approveWithNew(stateDir, r5.request);
    expect((await fifth).isError).toBeFalsy();
    expect(forwarded()).toBe(3);

    // the chain as any gateway follows it: first pin, the rotation, nothing ignored
    const db = openStore(stateDir);
    try {
      const keyring = loadPublicKeyring(stateDir)!;
      const pins = new PinTracker(db);
      const s = pins.status(keyring.approver!.publicKeyRaw, keyring.publicKey, {
        approvers: keyring.earlierApprovers,
        audits: keyring.earlierAudits,
      });
      expect(s).toEqual({ state: "match", seq: summary.rotationRecord });
      expect(pins.ignored).toEqual([]);
    } finally {
      db.close();
    }
    const verified = await runCli(["audit", "verify"], { stateDir });
    expect(verified.code, verified.stderr).toBe(0);
  }, 60_000);

  it("a rotation record signed by a made-up key is ignored: the chain's key stays, and its decisions are honoured", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval-timeout", "20000"], { stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const seen = new Set<string>();

    // a same-user writer appends a rotation away from the pinned key to its own, signed by a
    // key it made up (it has no copy of the passphrase), sealed as a real one is
    const keyring = loadPublicKeyring(stateDir)!;
    const pinned = keyring.approver!.publicKeyRaw;
    const madeUp = mintSigner(randomBytes(32));
    // the statement names the pinned key as the one replaced; only the signature is the made-up key's
    const forged = forgedRotation(madeUp, madeUp, keyring.publicKeyRaw, pinned);
    const db = openStore(stateDir);
    let forgedSeq: number;
    try {
      forgedSeq = appendRotation(db, forged, keyring.publicKeyRaw, pinned);
      const pins = new PinTracker(db);
      expect(pins.status(pinned, keyring.publicKey)).toMatchObject({ state: "match", seq: 1 });
      expect(pins.ignored).toEqual([forgedSeq]);
    } finally {
      db.close();
    }

    // the pinned key's decision is still honoured by the running gateway; approve still works
    const call = held(gw.client.callTool({ name: "read_status", arguments: {} }));
    const r = await nextStoredRequest(stateDir, seen);
    const approved = await runCli(["approve", r.request, "--for", "session"], {
      stateDir,
      env: passphraseEnv(),
    });
    expect(approved.code, approved.stderr).toBe(0);
    expect((await call).isError).toBeFalsy();
    // and the gateway said the record is ignored
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => gw.stderr().includes(`records ${forgedSeq}`),
      20_000,
      "the gateway's line on the ignored record",
    );
    expect(gw.stderr()).toContain(`records ${forgedSeq}`);
  }, 30_000);
});
