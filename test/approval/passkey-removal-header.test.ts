// "A gateway recognises a removal record by its header alone, so one it cannot open still counts"
// (docs/security.md, "Signed decisions", passkeys; src/approval/passkeyChain.ts `removal`).
//
// The attack, by a process of the same user that writes the store but has no passphrase: after
// `portcullis passkey rm`, it overwrites the sealed body of the `passkey_removed` record with
// random bytes (its header, with seq, type and epk, kept), which nobody can open any more, not
// even with the passphrase, and leaves the chain's links whole (the record is the head, so no
// later header names its old hash: `audit verify` still passes). Then it undoes every other trace
// of the removal in the store: the passkeys row's removed_at and the passkey's grant's end.
//
// Observed, with real processes (gateways in front of the inventory fixture, the real CLI) and a
// software authenticator (test/helpers/authenticator.ts) registered after the passphrase:
//  - `passkey list` lists the passkey as not honoured, because it was removed;
//  - the session grant it gave covers nothing at the next call of the gateway that had honoured
//    it (it had no call between the removal and the attack, so it reads the record only after
//    its body was destroyed), and the rejection is reported on its stderr and audited
//    (decision_rejected);
//  - a gateway started afterwards refuses the removed passkey's new decision, written straight
//    into the store as the approval module's code would write it (the call keeps waiting until a
//    human with the passphrase decides), and the console's own path refuses it too.
//
// What it would catch being removed: a removal that is honoured only when its body opens and
// names the credential (the record read like a pin, through openDerivedRecord): the destroyed
// record would then be skipped, the passkey would be honoured again, the grant would cover the
// third call (no request would be made, the wait below would time out), and `passkey list` would
// say honoured: true. Checked on a copy of the build with that change: this test fails on both
// (list, then the third call), while test/approval/passkey-gateway.test.ts still passes.
import { randomBytes } from "node:crypto";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import {
  completePasskeyDecision,
  finishPasskeyRegistration,
  passkeyRegistrationOptions,
  preparePasskeyDecision,
} from "../../src/approval/passkey.js";
import { encodePasskeySignature } from "../../src/approval/passkeyAssertion.js";
import { pinnedSigner } from "../../src/approval/pin.js";
import { decideRequest, pendingRequests } from "../../src/approval/requests.js";
import { openRecords, storedRecords } from "../../src/audit/index.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore, type Store } from "../../src/store/db.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { waitForAuditEvents } from "../helpers/auditWait.js";
import { SoftAuthenticator, TEST_ORIGIN, TEST_RP_ID } from "../helpers/authenticator.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { makeProject, type Project } from "../helpers/project.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const EXPECT = { origin: TEST_ORIGIN, rpId: TEST_RP_ID };

function store(stateDir: string): Store {
  const db = openStore(stateDir);
  cleanup.push(() => {
    db.close();
  });
  return db;
}

async function gateway(project: Project, stateDir: string) {
  const gw = await startInventory(project, ["--approval-timeout", "60000"], { stateDir });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return gw;
}

/** Registration as the console does it: the passphrase gives the signer, the browser the answer. */
async function register(db: Store, stateDir: string, name: string): Promise<SoftAuthenticator> {
  const key = new SoftAuthenticator();
  const signer = await pinnedSigner(db, stateDir, TEST_PASSPHRASE);
  const options = await passkeyRegistrationOptions(
    { rpId: TEST_RP_ID, rpName: "portcullis", userName: "me" },
    db,
  );
  await finishPasskeyRegistration(db, stateDir, signer, key.register(options), {
    challenge: options.challenge,
    ...EXPECT,
    name,
  });
  return key;
}

/** The header of a stored audit record, as text (everything before the first 0x0A). */
function headerText(record: Uint8Array): string {
  const b = Buffer.from(record);
  return b.toString("latin1", 0, b.indexOf(0x0a));
}

/** The events that still open, with their seq: every record but the destroyed one. */
async function openableEvents(
  stateDir: string,
  skip: number,
): Promise<{ seq: number; [k: string]: unknown }[]> {
  const db = openStore(stateDir);
  try {
    const { auditPrivateKey } = await unlockKeyring(stateDir, TEST_PASSPHRASE);
    const kept = [...storedRecords(db)].filter((r) => !headerText(r).includes(`"seq":${skip},`));
    return [...openRecords(db, auditPrivateKey, kept)].map((r) => ({ seq: r.seq, ...r.event }));
  } finally {
    db.close();
  }
}

describe("a passkey removal record whose body cannot be opened", () => {
  it("still takes the passkey's authority away: its grant covers nothing, its decisions are refused, list says removed", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await gateway(project, stateDir);
    const db = store(stateDir);
    const key = await register(db, stateDir, "old phone");
    const seen = new Set<string>();

    // the passkey approves for the session; a second call is covered without asking
    const first = gw.client.callTool({ name: "read_status", arguments: {} });
    const asked = await nextStoredRequest(stateDir, seen);
    const prepared = preparePasskeyDecision(db, asked.request, "approve");
    const { grant } = await completePasskeyDecision(db, prepared, key.assert(prepared.options.challenge), {
      ...EXPECT,
      stateDir,
    });
    expect((await first).isError).toBeFalsy();
    expect((await gw.client.callTool({ name: "read_status", arguments: {} })).isError).toBeFalsy();
    const grantId = grant!.grant;
    // the second call's result is committed after its answer: in the chain before the removal,
    // which must be the head below
    await waitForAuditEvents(
      stateDir,
      (all) => all.filter((e) => e.type === "tool_result" && e.tool === "read_status").length >= 2,
      "both calls' tool_result",
    );

    const removed = await runCli(["passkey", "rm", key.id, "--state-dir", stateDir]);
    expect(removed.code, removed.stderr).toBe(0);

    // The store writer destroys the removal record's sealed body and undoes the rest.
    const raw = new Database(join(stateDir, "portcullis.db"));
    cleanup.push(() => {
      raw.close();
    });
    const head = raw.prepare("SELECT seq, record FROM audit_records ORDER BY seq DESC LIMIT 1").get() as {
      seq: number;
      record: Buffer;
    };
    const header = headerText(head.record);
    expect(header).toContain('"type":"passkey_removed"');
    const sealedLength = head.record.length - header.length - 1;
    const destroyed = Buffer.concat([Buffer.from(`${header}\n`, "latin1"), randomBytes(sealedLength)]);
    raw.transaction(() => {
      raw.exec("DROP TRIGGER audit_records_no_update");
      raw.prepare("UPDATE audit_records SET record = ? WHERE seq = ?").run(destroyed, head.seq);
      raw.exec(`CREATE TRIGGER audit_records_no_update BEFORE UPDATE ON audit_records
                  BEGIN SELECT RAISE(ABORT, 'audit records are append-only'); END;`);
      raw.prepare("UPDATE passkeys SET removed_at = NULL WHERE credential_id = ?").run(key.id);
      raw.prepare("UPDATE grants SET ended_at = NULL, ended_reason = NULL WHERE grant_id = ?").run(grantId);
    })();

    // The chain's links still hold (verify reads ciphertext only), but the body opens for nobody.
    const verify = await runCli(["audit", "verify", "--json", "--state-dir", stateDir]);
    expect(verify.code, verify.stderr).toBe(0);
    const shown = await runCli(["audit", "show", String(head.seq), "--json", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(shown.code).toBe(1);
    expect(shown.stderr).toMatch(new RegExp(`record ${head.seq} does not open`));

    // `passkey list`: the table's row is back, and it is listed as not honoured, removed
    const listed = await runCli(["passkey", "list", "--json", "--state-dir", stateDir]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(JSON.parse(listed.stdout).passkeys).toEqual([
      expect.objectContaining({
        id: key.id,
        honoured: false,
        why: expect.stringMatching(new RegExp(`was removed \\(record ${head.seq}\\)`)),
      }),
    ]);

    // The gateway that honoured the grant meets the removal now, destroyed: the grant covers nothing.
    const human = await pinnedSigner(db, stateDir, TEST_PASSPHRASE);
    const third = gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    const thirdAsked = await waitFor(
      () => pendingRequests(db).find((r) => !seen.has(r.request)) ?? null,
      20_000,
      "the third call's approval request (the passkey's grant must not cover it)",
    );
    seen.add(thirdAsked.request);
    await gw.waitForStderr(new RegExp(`grant ${grantId} is not honoured: passkey ${key.id} was removed`));
    decideRequest(db, thirdAsked.request, { approve: false, reason: "no" }, "test human (passphrase)", human);
    expect((await third).data).toMatchObject({ error: "approval_denied" });

    // A gateway started now: the removed passkey's new decision decides nothing there either.
    const gw2 = await gateway(project, stateDir);
    const fourth = gw2.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    const fourthAsked = await nextStoredRequest(stateDir, seen);
    const again = preparePasskeyDecision(db, fourthAsked.request, "approve");
    // the console's own path refuses it
    await expect(
      completePasskeyDecision(db, again, key.assert(again.options.challenge), { ...EXPECT, stateDir }),
    ).rejects.toThrow(/was removed/);
    // written straight into the store, as the approval module's code would
    const a = key.assert(again.options.challenge);
    const forged = decideRequest(db, fourthAsked.request, again.decision, "attacker", {
      kind: "passkey",
      statement: again.statement,
      signature: encodePasskeySignature({
        credentialId: a.id,
        authenticatorData: a.response.authenticatorData,
        clientDataJSON: a.response.clientDataJSON,
        signature: a.response.signature,
      }),
    }).grant!.grant;
    await gw2.waitForStderr(new RegExp(`grant ${forged} is not honoured: passkey ${key.id} was removed`));
    // the call is still waiting: the human's denial is what ends it
    raw
      .prepare(
        "UPDATE approval_requests SET state = 'pending', decided_at = NULL, grant_id = NULL, decision_signature = NULL WHERE request = ?",
      )
      .run(fourthAsked.request);
    decideRequest(
      db,
      fourthAsked.request,
      { approve: false, reason: "no" },
      "test human (passphrase)",
      human,
    );
    expect((await fourth).data).toMatchObject({ error: "approval_denied" });
    // the server ran the two covered calls only
    expect(project.records().map((r) => r.tool)).toEqual(["read_status", "read_status"]);

    const rejected = (await openableEvents(stateDir, head.seq)).filter((e) => e.type === "decision_rejected");
    expect(rejected).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ grant: grantId, why: expect.stringMatching(/was removed/) }),
        expect.objectContaining({ grant: forged, why: expect.stringMatching(/was removed/) }),
      ]),
    );
  });
});
