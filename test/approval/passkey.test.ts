// Passkey decisions inside one process, on a real store, with a software authenticator: the
// registration needs the passphrase's signer; an approval or denial by a pinned passkey ends the
// wait; and every forged passkey decision (another credential, another request, another
// statement, no user verification, a credential not pinned, a removed credential) is ignored and
// reported as decision_rejected, while the call keeps waiting.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { copyFileSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  completePasskeyDecision,
  finishPasskeyRegistration,
  listPasskeys,
  PasskeyError,
  passkeyLoginOptions,
  passkeyRegistrationOptions,
  preparePasskeyDecision,
  removePasskey,
  verifyPasskeyLogin,
} from "../../src/approval/passkey.js";
import { encodePasskeySignature } from "../../src/approval/passkeyAssertion.js";
import { getPasskeyRow } from "../../src/approval/passkeyRows.js";
import {
  type ApprovalRequest,
  type Decision,
  decideRequest,
  getRequest,
} from "../../src/approval/requests.js";
import { DecisionVerifier } from "../../src/approval/trust.js";
import { mintSigner } from "../../src/keyring/approver.js";
import { auditKeyId } from "../../src/keyring/x25519.js";
import type { Store } from "../../src/store/db.js";
import { SoftAuthenticator, TEST_ORIGIN, TEST_RP_ID } from "../helpers/authenticator.js";
import { waitFor } from "../helpers/files.js";
import {
  callOf,
  makeAuthorizer,
  pendingOf,
  publishPreview,
  type Recorded,
  signer,
  testRun,
  throughStep8,
  twoConnectionsPerTest,
} from "./helpers.js";
import { askedAgainAfterRemoval, grantedByPasskey } from "./passkeyRemovalKit.js";

const EPOCH = "01JQ7R4S4S0QJ7GZP1S2AAAAAA";
const EXPECT = { origin: TEST_ORIGIN, rpId: TEST_RP_ID };

let dir: string;
let db: Store;
let other: Store;
twoConnectionsPerTest("portcullis-passkey-", (s) => {
  ({ dir, db, other } = s);
});

/** A passkey registered the way the console does it, after the passphrase (the test signer). */
async function registered(name = "test key"): Promise<SoftAuthenticator> {
  const key = new SoftAuthenticator();
  const options = await passkeyRegistrationOptions(
    { rpId: TEST_RP_ID, rpName: "portcullis", userName: "me" },
    other,
  );
  await finishPasskeyRegistration(other, dir, signer(), key.register(options), {
    challenge: options.challenge,
    ...EXPECT,
    name,
  });
  return key;
}

/** A call that asks a human; its pending request; the authorizer's record of what it did. */
async function asking(): Promise<{
  asked: ReturnType<ReturnType<typeof makeAuthorizer>["auth"]["obtain"]>;
  req: ApprovalRequest;
  rec: Recorded;
}> {
  const run = testRun(db);
  const { auth, rec } = makeAuthorizer(db, run);
  const asked = auth.obtain(callOf(publishPreview, EPOCH));
  return { asked, req: await pendingOf(other, run), rec };
}

/**
 * What an attacker writes without completePasskeyDecision: the decision prepared for `req`,
 * recorded through decideRequest with the assertion `answer` gives for the prepared challenge
 * (whatever it signed) as its signature.
 */
function forge(
  req: ApprovalRequest,
  decision: Decision,
  answer: (challenge: string) => ReturnType<SoftAuthenticator["assert"]>,
) {
  const prepared = preparePasskeyDecision(
    other,
    req.request,
    decision.approve ? "approve" : "deny",
    decision.approve
      ? { mode: decision.for }
      : decision.reason === undefined
        ? {}
        : { reason: decision.reason },
  );
  const assertion = answer(prepared.options.challenge);
  const signature = encodePasskeySignature({
    credentialId: assertion.id,
    authenticatorData: assertion.response.authenticatorData,
    clientDataJSON: assertion.response.clientDataJSON,
    signature: assertion.response.signature,
  });
  return decideRequest(other, req.request, decision, "attacker", {
    kind: "passkey",
    statement: prepared.statement,
    signature,
  });
}

/** The challenge of the decision prepared for `req` (as the console would ask the passkey). */
function challengeOf(req: ApprovalRequest, decision: "approve" | "deny" = "approve"): string {
  return preparePasskeyDecision(other, req.request, decision).options.challenge;
}

/** The call's decision_rejected event (waits for it), then the request is cancelled to end the wait. */
async function rejected(
  w: Awaited<ReturnType<typeof asking>>,
  why: RegExp,
): Promise<{ type: string; [k: string]: unknown }> {
  const event = await waitFor(
    () => w.rec.events.find((e) => e.type === "decision_rejected" && why.test(String(e.why))),
    10_000,
    `decision_rejected matching ${why}`,
  );
  other.prepare("UPDATE approval_requests SET state = 'cancelled' WHERE request = ?").run(w.req.request);
  expect("error" in (await w.asked)).toBe(true);
  return event;
}

describe("registering a passkey", () => {
  it("needs the pinned approver key's signer; pins the credential in the audit chain", async () => {
    const key = await registered("laptop");
    expect(listPasskeys(other, dir)).toEqual([
      expect.objectContaining({ id: key.id, name: "laptop", honoured: true, lastUsedAt: null }),
    ]);
    // a signer that is not the pinned approver key (the module's own code, without the passphrase)
    const intruder = new SoftAuthenticator();
    const options = await passkeyRegistrationOptions({ rpId: TEST_RP_ID, rpName: "p", userName: "me" });
    await expect(
      finishPasskeyRegistration(other, dir, mintSigner(randomBytes(32)), intruder.register(options), {
        challenge: options.challenge,
        ...EXPECT,
      }),
    ).rejects.toThrow(/the signer is not the approver key pinned in the audit chain/);
    // an authenticator that did not verify the user
    const lazy = new SoftAuthenticator();
    await expect(
      finishPasskeyRegistration(other, dir, signer(), lazy.register(options, { uv: false }), {
        challenge: options.challenge,
        ...EXPECT,
      }),
    ).rejects.toThrow(PasskeyError);
    // another challenge than the one given
    await expect(
      finishPasskeyRegistration(other, dir, signer(), lazy.register(options), {
        challenge: randomBytes(32).toString("base64url"),
        ...EXPECT,
      }),
    ).rejects.toThrow(/does not verify/);
    expect(listPasskeys(other, dir).map((p) => p.id)).toEqual([key.id]);
  });
});

describe("proving the human with a passkey (console login)", () => {
  it("names the pinned passkey that answered the challenge; refuses another challenge or credential", async () => {
    const key = await registered("desk key");
    const options = passkeyLoginOptions(other, { rpId: TEST_RP_ID });
    expect(options).toMatchObject({ userVerification: "required", allowCredentials: [{ id: key.id }] });
    const login = { challenge: options.challenge, ...EXPECT };
    expect(await verifyPasskeyLogin(other, dir, key.assert(options.challenge), login)).toEqual({
      credentialId: key.id,
      name: "desk key",
    });
    const other2 = passkeyLoginOptions(other).challenge;
    await expect(verifyPasskeyLogin(other, dir, key.assert(other2), login)).rejects.toThrow(
      /does not verify/,
    );
    await expect(
      verifyPasskeyLogin(other, dir, new SoftAuthenticator().assert(options.challenge), login),
    ).rejects.toThrow(/no authority/);
    await expect(
      verifyPasskeyLogin(other, dir, key.assert(options.challenge, { uv: false }), login),
    ).rejects.toThrow(/does not verify/);
  });
});

describe("a passkey decision", () => {
  it("approves for the session: the waiting call gets the grant, signed by the assertion", async () => {
    const key = await registered();
    const w = await asking();
    const prepared = preparePasskeyDecision(other, w.req.request, "approve", { mode: "session" });
    const { grant } = await completePasskeyDecision(other, prepared, key.assert(prepared.options.challenge), {
      ...EXPECT,
      stateDir: dir,
    });
    expect(await w.asked).toEqual({ grant: grant!.grant });
    expect(grant!.grant).toBe(prepared.statement.grant);
    const row = other
      .prepare("SELECT signature, approved_by FROM grants WHERE grant_id = ?")
      .get(grant!.grant) as {
      signature: string;
      approved_by: string;
    };
    expect(JSON.parse(row.signature)).toMatchObject({ v: "webauthn/1", credentialId: key.id });
    expect(row.approved_by).toMatch(/^passkey "test key"/);
    expect(listPasskeys(other, dir)[0]!.lastUsedAt).not.toBeNull();
    // the same assertion again (a replay) is refused: its counter is not above the last seen
    const again = await asking();
    const p2 = preparePasskeyDecision(other, again.req.request, "approve");
    const stale = key.assert(p2.options.challenge);
    key.counter -= 2;
    const older = key.assert(p2.options.challenge);
    await expect(completePasskeyDecision(other, p2, older, { ...EXPECT, stateDir: dir })).rejects.toThrow(
      /counter/,
    );
    await completePasskeyDecision(other, p2, stale, { ...EXPECT, stateDir: dir });
    expect("grant" in (await again.asked)).toBe(true);
  });

  it("approves one call: a per-call grant bound to the held call's arguments", async () => {
    const key = await registered();
    const w = await asking();
    const prepared = preparePasskeyDecision(other, w.req.request, "approve", { mode: "call" });
    expect(prepared.statement).toMatchObject({ mode: "per-call", argumentsDigest: w.req.argumentsDigest });
    // the store's directory is the state directory by default
    const { grant } = await completePasskeyDecision(
      other,
      prepared,
      key.assert(prepared.options.challenge),
      EXPECT,
    );
    expect(grant).toMatchObject({ mode: "per-call", expiresWhen: "this-call" });
    expect(await w.asked).toEqual({ grant: grant!.grant });
  });

  it("denies with a reason: the waiting call is refused as a human's denial", async () => {
    const key = await registered();
    const w = await asking();
    const prepared = preparePasskeyDecision(other, w.req.request, "deny", { reason: "not today" });
    await completePasskeyDecision(other, prepared, key.assert(prepared.options.challenge), {
      ...EXPECT,
      stateDir: dir,
    });
    const got = await w.asked;
    expect(got).toMatchObject({ error: { data: { error: "approval_denied" } } });
    expect(JSON.stringify(got)).toContain("not today");
    expect(getRequest(other, w.req.request)!.decisionSignature).toMatch(/^\{"v":"webauthn\/1"/);
  });

  it("over another statement than the one recorded is refused by completePasskeyDecision", async () => {
    const key = await registered();
    const w = await asking();
    const prepared = preparePasskeyDecision(other, w.req.request, "approve");
    const deny = preparePasskeyDecision(other, w.req.request, "deny");
    await expect(
      completePasskeyDecision(other, prepared, key.assert(deny.options.challenge), {
        ...EXPECT,
        stateDir: dir,
      }),
    ).rejects.toThrow(/does not verify/);
    // no user verification
    await expect(
      completePasskeyDecision(other, prepared, key.assert(prepared.options.challenge, { uv: false }), {
        ...EXPECT,
        stateDir: dir,
      }),
    ).rejects.toThrow(/does not verify/);
    expect(getRequest(other, w.req.request)!.state).toBe("pending");
    other.prepare("UPDATE approval_requests SET state = 'cancelled' WHERE request = ?").run(w.req.request);
    await w.asked;
  });
});

describe("the signature counter, under the write lock", () => {
  it("a clone answering two requests at once with the same counter: one decides, the other is refused", async () => {
    const key = await registered();
    const first = await asking();
    const second = await asking();
    const p1 = preparePasskeyDecision(other, first.req.request, "approve");
    const p2 = preparePasskeyDecision(other, second.req.request, "approve");
    const a1 = key.assert(p1.options.challenge);
    key.counter -= 1; // a clone of the authenticator: the same key, the same counter
    const a2 = key.assert(p2.options.challenge);
    // Both verified while neither is recorded: the counter must be compared again when each
    // decision is written, not only against the value read before the verification's await.
    const settled = await Promise.allSettled([
      completePasskeyDecision(other, p1, a1, { ...EXPECT, stateDir: dir }),
      completePasskeyDecision(other, p2, a2, { ...EXPECT, stateDir: dir }),
    ]);
    const refused = settled.filter((r) => r.status === "rejected");
    expect(refused).toHaveLength(1);
    expect(String((refused[0] as PromiseRejectedResult).reason)).toMatch(/counter/);
    expect((refused[0] as PromiseRejectedResult).reason).toBeInstanceOf(PasskeyError);
    expect(getPasskeyRow(other, key.id)!.counter).toBe(key.counter);
    const loser = settled[0]!.status === "rejected" ? first : second;
    expect(getRequest(other, loser.req.request)!.state).toBe("pending");
    other
      .prepare("UPDATE approval_requests SET state = 'cancelled' WHERE request = ?")
      .run(loser.req.request);
    await Promise.all([first.asked, second.asked]);
  });

  it("a login whose store file was replaced while its answer was verified is refused, nothing written", async () => {
    const key = await registered("desk key");
    const options = passkeyLoginOptions(other, { rpId: TEST_RP_ID });
    const before = getPasskeyRow(other, key.id)!;
    const login = verifyPasskeyLogin(other, dir, key.assert(options.challenge), {
      challenge: options.challenge,
      ...EXPECT,
    });
    // during the verification's await: `mv` and `cp` back, another file at the store's path
    const path = join(dir, "portcullis.db");
    renameSync(path, `${path}.moved`);
    copyFileSync(`${path}.moved`, path);
    await expect(login).rejects.toThrow(/was deleted or replaced/);
    expect(getPasskeyRow(other, key.id)).toEqual(before);
  });
});

describe("the keys passkey records are read with", () => {
  it("another audit key put in keyring.json after the pin was found: nothing is trusted", async () => {
    await registered();
    const verifier = new DecisionVerifier(other, dir);
    expect(verifier.trusted().ok).toBe(true);
    const path = join(dir, "keyring.json");
    const keyring = JSON.parse(readFileSync(path, "utf8"));
    const swapped = generateKeyPairSync("x25519").publicKey.export({ format: "jwk" }).x!;
    const keyId = auditKeyId(Buffer.from(swapped, "base64url"));
    writeFileSync(
      path,
      JSON.stringify({ ...keyring, audit: { ...keyring.audit, publicKey: swapped, keyId } }),
    );
    expect(verifier.trusted()).toMatchObject({
      ok: false,
      mismatch: true,
      why: expect.stringMatching(/audit key/),
    });
  });
});

describe("a forged passkey decision is ignored and recorded as decision_rejected", () => {
  it("by a credential that is not pinned (another authenticator)", async () => {
    await registered();
    const w = await asking();
    const stranger = new SoftAuthenticator();
    forge(w.req, { approve: true, for: "session" }, (c) => stranger.assert(c));
    const e = await rejected(w, /is not pinned in the audit chain/);
    expect(e).toMatchObject({ what: "grant", request: w.req.request });
  });

  it("signed for another request", async () => {
    const key = await registered();
    const first = await asking();
    const second = await asking();
    // the human approved the first request with the passkey; the attacker reuses the assertion
    const theirs = key.assert(challengeOf(first.req));
    forge(second.req, { approve: true, for: "session" }, () => theirs);
    await rejected(second, /the passkey signed another decision/);
    other
      .prepare("UPDATE approval_requests SET state = 'cancelled' WHERE request = ?")
      .run(first.req.request);
    await first.asked;
  });

  it("whose challenge is the digest of another statement (a denial made an approval)", async () => {
    const key = await registered();
    const w = await asking();
    forge(w.req, { approve: true, for: "session" }, () => key.assert(challengeOf(w.req, "deny")));
    await rejected(w, /the passkey signed another decision/);
  });

  it("without user verification (UV flag not set)", async () => {
    const key = await registered();
    const w = await asking();
    forge(w.req, { approve: false, reason: "x" }, (c) => key.assert(c, { uv: false }));
    const e = await rejected(w, /UV flag not set/);
    expect(e).toMatchObject({ what: "denial", request: w.req.request });
  });

  it("by a credential inserted into the passkeys table by SQL, without a pin", async () => {
    const key = new SoftAuthenticator();
    other
      .prepare(
        `INSERT INTO passkeys (credential_id, name, public_key, counter, rp_id, created_at)
         VALUES (?, 'sql', ?, 0, ?, ?)`,
      )
      .run(key.id, Buffer.from(key.coseKey()).toString("base64url"), TEST_RP_ID, new Date().toISOString());
    expect(listPasskeys(other, dir)).toEqual([
      expect.objectContaining({ id: key.id, honoured: false, why: expect.stringMatching(/not pinned/) }),
    ]);
    const w = await asking();
    const prepared = preparePasskeyDecision(other, w.req.request, "approve");
    await expect(
      completePasskeyDecision(other, prepared, key.assert(prepared.options.challenge), {
        ...EXPECT,
        stateDir: dir,
      }),
    ).rejects.toThrow(/this passkey has no authority: .*is not pinned in the audit chain/);
    forge(w.req, { approve: true, for: "session" }, (c) => key.assert(c));
    await rejected(w, /is not pinned in the audit chain/);
  });

  it("removed after its grant covered calls through step 8: the very next call's step 8 sees the removal", async () => {
    // The per-call look for a removal remembers, per credential, where its removal record would be
    // found (the removal session's epk), never whether one was found: covered calls first, so that
    // anything remembered is remembered; then the removal, written by another connection.
    const key = await registered();
    const bystander = await registered("another key");
    const g = await grantedByPasskey(db, other, dir, key, EPOCH);
    for (let i = 0; i < 3; i++)
      expect(await throughStep8(g.auth, () => callOf(publishPreview, EPOCH))).toEqual({ grant: g.grant });
    // another passkey's removal takes nothing from this one
    removePasskey(other, dir, bystander.id, "test");
    expect(await throughStep8(g.auth, () => callOf(publishPreview, EPOCH))).toEqual({ grant: g.grant });

    removePasskey(other, dir, key.id, "test");
    // the grant's end undone by a store writer: only the removal record can stop the call
    const again = await askedAgainAfterRemoval(other, g, EPOCH);
    await again.done();
  });

  it("by a removed credential: its grants stop covering, its new decisions are refused", async () => {
    const key = await registered();
    const g = await grantedByPasskey(db, other, dir, key, EPOCH);
    expect(g.auth.stale(g.call)).toBeNull();
    expect(await g.auth.obtain(g.call)).toEqual({ grant: g.grant }); // covered, no new request

    removePasskey(other, dir, key.id, "test");
    expect(() => removePasskey(other, dir, key.id, "test")).toThrow(/already removed/);
    expect(other.prepare("SELECT ended_reason FROM grants WHERE grant_id = ?").pluck().get(g.grant)).toMatch(
      /was removed/,
    );
    // what counts is the removal in the audit chain: a store writer who undoes the grant's end
    // gains nothing; the grant read earlier is checked again as the call goes through (step 8):
    // not honoured any more
    const { req2, done } = await askedAgainAfterRemoval(other, g, EPOCH);
    const p2 = preparePasskeyDecision(other, req2.request, "approve");
    await expect(
      completePasskeyDecision(other, p2, key.assert(p2.options.challenge), { ...EXPECT, stateDir: dir }),
    ).rejects.toThrow(/was removed/);
    expect(listPasskeys(other, dir)).toEqual([]);
    await done();
  });
});
