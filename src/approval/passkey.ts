import { randomBytes } from "node:crypto";
import { dirname } from "node:path";
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
  VerifiedRegistrationResponse,
} from "@simplewebauthn/server";
import { ulid } from "ulid";
import { type DecisionSigner, rawEd25519PublicKey } from "../keyring/approver.js";
import type { Store } from "../store/db.js";
import { quotedCommand } from "../store/stateDir.js";
import { StoreFiles } from "../store/storeFiles.js";
import { type DecisionStatement, decisionDigest } from "./decision.js";
import { endGrants } from "./grants.js";
import {
  assertionFault,
  coseKey,
  decisionChallenge,
  encodePasskeySignature,
  PASSKEY_ALGORITHMS,
  parsePasskeySignature,
} from "./passkeyAssertion.js";
import { type PinnedPasskey, writePasskeyPin, writePasskeyRemoval } from "./passkeyChain.js";
import {
  getPasskeyRow,
  insertPasskeyRow,
  markPasskeyRemoved,
  PasskeyError,
  passkeyCounterUsed,
  passkeyRows,
} from "./passkeyRows.js";
import {
  type Decision,
  type DecisionResult,
  decidableRequest,
  decideRequest,
  decisionStatement,
  pendingRequest,
  sameReviewAsShown,
} from "./requests.js";
import { DecisionVerifier } from "./trust.js";

/**
 * Passkeys as approvers (docs/security.md, "Signed decisions"): the interface the console's
 * routes call. The console serves the pages and talks to the browser; everything that decides
 * whether a passkey may approve is here.
 *
 * Registering (after the human proved the passphrase: the caller holds its DecisionSigner):
 *   passkeyRegistrationOptions({ rpId, rpName, userName }, db)  → options for
 *     navigator.credentials.create (keep `options.challenge` for the finish)
 *   finishPasskeyRegistration(db, stateDir, signer, response, { challenge, origin, rpId, name })
 *     → the passkey, pinned in the audit chain by a record the approver key signed
 *
 * Deciding a request with a passkey:
 *   preparePasskeyDecision(db, requestId, "approve" | "deny", { mode, reason, rpId })
 *     → { request, decision, statement, options }: the statement is the decision exactly as it
 *     will be recorded (grant id and time chosen now); options.challenge is its digest. Keep the
 *     whole prepared value on the server side and give `options` to navigator.credentials.get.
 *   completePasskeyDecision(db, prepared, response, { origin, rpId, stateDir?, by? })
 *     (stateDir defaults to the store's directory)
 *     → the DecisionResult of decideRequest (same code path as the CLI), signed by the assertion
 *
 * Proving the human at login with a passkey (no decision):
 *   passkeyLoginOptions(db, { rpId }) and verifyPasskeyLogin(db, stateDir, response, { challenge, origin, rpId })
 *
 * Listing and removing: listPasskeys(db, stateDir), removePasskey(db, stateDir, id, by).
 *
 * Every failure is a PasskeyError whose message names what is wrong (never a secret).
 *
 * Import this file directly, not through approval/index.ts: it loads @simplewebauthn/server,
 * which gateways do not need (they verify with passkeyAssertion.ts, node:crypto only).
 */

export { PasskeyError };

/**
 * The WebAuthn library, loaded when a ceremony is prepared or checked: with the ASN.1 and COSE
 * code it pulls in, it was most of `passkey list`'s and `passkey rm`'s start (about 0.4 s of CPU
 * of 0.55), which only read and write the store.
 */
const webauthn = () => import("@simplewebauthn/server");

const TIMEOUT_MS = 120_000;

/** Options for navigator.credentials.create: user verification required, no attestation. */
export async function passkeyRegistrationOptions(
  o: { rpId: string; rpName: string; userName: string },
  db?: Store,
): Promise<PublicKeyCredentialCreationOptionsJSON> {
  return (await webauthn()).generateRegistrationOptions({
    rpID: o.rpId,
    rpName: o.rpName,
    userName: o.userName,
    attestationType: "none",
    authenticatorSelection: { residentKey: "preferred", userVerification: "required" },
    supportedAlgorithmIDs: [...PASSKEY_ALGORITHMS],
    excludeCredentials: db ? passkeyRows(db).map((r) => ({ id: r.credentialId })) : [],
    timeout: TIMEOUT_MS,
  });
}

export interface RegisteredPasskey {
  credentialId: string;
  name: string;
  createdAt: string;
  /** the pin record's seq in the audit chain */
  seq: number;
}

/**
 * Verifies a registration (user verification required) and pins the new passkey in the audit
 * chain with a record signed by `signer`, which must be the approver key pinned there: the
 * passphrase is what lets a passkey be added.
 */
export async function finishPasskeyRegistration(
  db: Store,
  stateDir: string,
  signer: DecisionSigner,
  response: RegistrationResponseJSON,
  expected: { challenge: string; origin: string; rpId: string; name?: string },
): Promise<RegisteredPasskey> {
  const verifier = new DecisionVerifier(db, stateDir);
  const trust = verifier.trusted();
  if (!trust.ok) throw new PasskeyError(`no passkey can be added: ${trust.why}`);
  if (!rawEd25519PublicKey(trust.key).equals(signer.publicKeyRaw)) {
    throw new PasskeyError(
      "no passkey can be added: the signer is not the approver key pinned in the audit chain",
    );
  }
  const name = passkeyName(expected.name);
  let verified: VerifiedRegistrationResponse;
  try {
    verified = await (await webauthn()).verifyRegistrationResponse({
      response,
      expectedChallenge: expected.challenge,
      expectedOrigin: expected.origin,
      expectedRPID: expected.rpId,
      requireUserVerification: true,
      supportedAlgorithmIDs: [...PASSKEY_ALGORITHMS],
    });
  } catch (e) {
    throw new PasskeyError(`the passkey registration does not verify: ${(e as Error).message}`);
  }
  if (!verified.verified) throw new PasskeyError("the passkey registration does not verify");
  const { credential } = verified.registrationInfo;
  try {
    coseKey(credential.publicKey);
  } catch (e) {
    throw new PasskeyError(`this passkey's key cannot be used: ${(e as Error).message}`);
  }
  const known = verifier.passkey(credential.id);
  if (known.ok) throw new PasskeyError(`passkey ${credential.id} is already registered`);
  if (known.removed) throw new PasskeyError(`passkey ${credential.id} was removed; register a new one`);
  const pin = {
    credentialId: credential.id,
    publicKey: Buffer.from(credential.publicKey).toString("base64url"),
    name,
    counter: credential.counter,
    rpId: expected.rpId,
    createdAt: new Date().toISOString(),
  };
  const seq = writePasskeyPin(db, stateDir, signer, pin);
  insertPasskeyRow(db, { ...pin, transports: credential.transports ?? [], pinSeq: seq });
  return { credentialId: pin.credentialId, name, createdAt: pin.createdAt, seq };
}

function passkeyName(name: string | undefined): string {
  if (name === undefined || name.trim() === "")
    return `passkey added ${new Date().toISOString().slice(0, 10)}`;
  const trimmed = name.trim();
  // shown in terminals and the console: no control or bidi characters, a sensible length
  if (trimmed.length > 64 || /[\p{Cc}\p{Cf}]/u.test(trimmed)) {
    throw new PasskeyError(
      "a passkey's name is at most 64 characters, without control or formatting characters",
    );
  }
  return trimmed;
}

export interface PreparedPasskeyDecision {
  request: string;
  decision: Decision;
  /** exactly what will be recorded and what the passkey signs (its digest is the challenge) */
  statement: DecisionStatement;
  /** for navigator.credentials.get */
  options: PublicKeyCredentialRequestOptionsJSON;
}

/**
 * The decision a passkey is asked to sign. Refused (DecisionError) when the request cannot be
 * decided this way now, like `portcullis approve`/`deny` would be.
 */
export function preparePasskeyDecision(
  db: Store,
  requestId: string,
  decision: "approve" | "deny",
  o: { mode?: "session" | "call" | "per-call"; reason?: string; rpId?: string; reviewed?: string } = {},
): PreparedPasskeyDecision {
  const asked = pendingRequest(db, requestId);
  const forWhat = o.mode ?? (asked.mode === "per-call" ? "call" : "session");
  const d: Decision =
    decision === "approve"
      ? {
          approve: true,
          for: forWhat === "session" ? "session" : "call",
          ...(o.reviewed !== undefined ? { reviewed: o.reviewed } : {}),
        }
      : o.reason === undefined
        ? { approve: false }
        : { approve: false, reason: o.reason };
  const req = decidableRequest(db, requestId, d);
  sameReviewAsShown(req, d);
  const statement = decisionStatement(req, d, ulid(), new Date().toISOString());
  return {
    request: requestId,
    decision: d,
    statement,
    options: requestOptions(db, decisionChallenge(decisionDigest(statement)), o.rpId),
  };
}

/**
 * Verifies the passkey's answer to a prepared decision (user verification required, signature
 * counter checked) against the passkey pinned in the audit chain, then records the decision
 * through decideRequest, with the assertion as its signature.
 */
export async function completePasskeyDecision(
  db: Store,
  prepared: PreparedPasskeyDecision,
  response: AuthenticationResponseJSON,
  expected: { origin: string; rpId: string; stateDir?: string; by?: string },
): Promise<DecisionResult> {
  const digest = decisionDigest(prepared.statement);
  const stateDir = expected.stateDir ?? dirname(db.name);
  const { pin, signature, counter } = await verifiedAssertion(db, stateDir, response, {
    challenge: decisionChallenge(digest),
    origin: expected.origin,
    rpId: expected.rpId,
  });
  const by = expected.by ?? `passkey "${pin.name}" (${pin.credentialId.slice(0, 12)}…, user verified)`;
  // The counter is compared again and stored in the decision's own transaction (decideRequest),
  // after its check of the store's files: the one compared above was read before an await.
  return decideRequest(
    db,
    prepared.request,
    prepared.decision,
    by,
    {
      kind: "passkey",
      statement: prepared.statement,
      signature,
      counter: { credentialId: pin.credentialId, value: counter, floor: pin.counter },
    },
    stateDir,
  );
}

/** Options for proving the human with a passkey at login: a fresh random challenge. */
export function passkeyLoginOptions(
  db: Store,
  o: { rpId?: string } = {},
): PublicKeyCredentialRequestOptionsJSON {
  return requestOptions(db, randomBytes(32).toString("base64url"), o.rpId);
}

/** Which pinned passkey answered a login challenge; PasskeyError when none did. */
export async function verifyPasskeyLogin(
  db: Store,
  stateDir: string,
  response: AuthenticationResponseJSON,
  expected: { challenge: string; origin: string; rpId: string },
): Promise<{ credentialId: string; name: string }> {
  const { pin, counter } = await verifiedAssertion(db, stateDir, response, expected);
  // After the verification's await, under the write lock: the store's files checked again (one
  // replaced meanwhile would take this write with it, and the login would open a session on a
  // store nobody else sees), and the counter compared with the one committed last.
  db.transaction(() => {
    StoreFiles.of(db).assertKept();
    passkeyCounterUsed(db, pin.credentialId, counter, pin.counter, new Date().toISOString());
  }).immediate();
  return { credentialId: pin.credentialId, name: pin.name };
}

function requestOptions(
  db: Store,
  challenge: string,
  rpId: string | undefined,
): PublicKeyCredentialRequestOptionsJSON {
  return {
    challenge,
    ...(rpId ? { rpId } : {}),
    allowCredentials: passkeyRows(db).map((r) => ({
      id: r.credentialId,
      type: "public-key" as const,
      ...(r.transports.length ? { transports: r.transports as never } : {}),
    })),
    userVerification: "required",
    timeout: TIMEOUT_MS,
  };
}

/**
 * The library's verification of an assertion (UV required, counter above the last seen) against
 * the passkey pinned in the chain, then the gateway's own check of the same assertion, so that a
 * decision recorded here is one every gateway honours.
 */
async function verifiedAssertion(
  db: Store,
  stateDir: string,
  response: AuthenticationResponseJSON,
  expected: { challenge: string; origin: string; rpId: string },
): Promise<{ pin: PinnedPasskey; signature: string; counter: number }> {
  if (typeof response?.id !== "string" || typeof response.response !== "object" || !response.response) {
    throw new PasskeyError("the passkey's answer is not a WebAuthn assertion");
  }
  const found = new DecisionVerifier(db, stateDir).passkey(response.id);
  if (!found.ok) throw new PasskeyError(`this passkey has no authority: ${found.why}`);
  const pin = found.pin;
  if (pin.rpId !== expected.rpId) {
    throw new PasskeyError(
      `passkey ${pin.credentialId} was registered for ${pin.rpId}, not ${expected.rpId}`,
    );
  }
  const counter = Math.max(getPasskeyRow(db, pin.credentialId)?.counter ?? 0, pin.counter);
  let newCounter: number;
  try {
    const v = await (await webauthn()).verifyAuthenticationResponse({
      response,
      expectedChallenge: expected.challenge,
      expectedOrigin: expected.origin,
      expectedRPID: expected.rpId,
      credential: {
        id: pin.credentialId,
        publicKey: new Uint8Array(Buffer.from(pin.publicKey, "base64url")),
        counter,
      },
      requireUserVerification: true,
    });
    if (!v.verified) throw new Error("not verified");
    newCounter = v.authenticationInfo.newCounter;
  } catch (e) {
    throw new PasskeyError(`the passkey's answer does not verify: ${(e as Error).message}`);
  }
  const signature = encodePasskeySignature({
    credentialId: response.id,
    authenticatorData: response.response.authenticatorData,
    clientDataJSON: response.response.clientDataJSON,
    signature: response.response.signature,
  });
  // what every gateway will check: refuse here what they would not honour
  const fault = assertionFault(pin, expected.challenge, parsePasskeySignature(signature)!);
  if (fault) throw new PasskeyError(`the passkey's answer is not honoured: ${fault}`);
  return { pin, signature, counter: newCounter };
}

export interface PasskeyInfo {
  id: string;
  name: string;
  createdAt: string;
  lastUsedAt: string | null;
  /** whether a gateway honours its decisions: pinned in the audit chain and not removed */
  honoured: boolean;
  /** why not, when not honoured */
  why?: string;
}

/** The registered passkeys (the table's rows), each checked against the audit chain. */
export function listPasskeys(db: Store, stateDir: string): PasskeyInfo[] {
  const verifier = new DecisionVerifier(db, stateDir);
  return passkeyRows(db).map((r) => {
    const found = verifier.passkey(r.credentialId);
    const sameKey = found.ok && found.pin.publicKey === r.publicKey;
    return {
      id: r.credentialId,
      name: found.ok ? found.pin.name : r.name,
      createdAt: found.ok ? found.pin.createdAt : r.createdAt,
      lastUsedAt: r.lastUsedAt,
      honoured: found.ok,
      ...(found.ok ? {} : { why: found.why }),
      ...(found.ok && !sameKey
        ? { why: "the table's copy of its key differs from the pin (the pin counts)" }
        : {}),
    };
  });
}

/**
 * Takes a passkey's authority away: a `passkey_removed` record in the audit chain (no proof
 * needed, like revoking a grant), after which gateways honour none of its decisions, including
 * grants it approved before. Returns the record's seq.
 */
export function removePasskey(db: Store, stateDir: string, credentialId: string, by: string): number {
  const row = getPasskeyRow(db, credentialId);
  const found = new DecisionVerifier(db, stateDir).passkey(credentialId);
  if (!found.ok && found.removed) {
    markPasskeyRemoved(db, credentialId, new Date().toISOString());
    throw new PasskeyError(`passkey ${credentialId} was already removed (record ${found.seq})`, "not-active");
  }
  // not repeated: a word given where the ID goes may be something else (a passphrase, a secret)
  if (!row && !found.ok)
    throw new PasskeyError(
      `there is no passkey with that ID (not shown, in case it is something else typed in its place); ${quotedCommand("passkey list", stateDir)} shows them`,
      "not-found",
    );
  const seq = writePasskeyRemoval(
    db,
    stateDir,
    credentialId,
    found.ok ? found.pin.name : (row?.name ?? null),
    by,
  );
  markPasskeyRemoved(db, credentialId, new Date().toISOString());
  // `portcullis grants` should not list what no gateway honours any more (gateways read the
  // removal in the chain, which is what counts: this store write could be undone)
  const approved = db
    .prepare(
      `SELECT grant_id FROM grants WHERE ended_at IS NULL AND revoked_at IS NULL AND signature LIKE '{%'
         AND json_valid(signature) AND json_extract(signature, '$.credentialId') = ?`,
    )
    .pluck()
    .all(credentialId) as string[];
  endGrants(db, approved, `passkey ${credentialId} was removed`);
  return seq;
}
