// What the two cases of a passkey's removal in test/approval/passkey.test.ts share: a session
// grant approved by a pinned passkey for a call that waited on it, and, once the passkey is
// removed and a store writer undid the grant's end, the proof that only the removal record stops
// the next call (asked again, the grant's refusal recorded).
import { expect } from "vitest";
import { completePasskeyDecision, preparePasskeyDecision } from "../../src/approval/passkey.js";
import type { ApprovalRequest } from "../../src/approval/requests.js";
import type { Run } from "../../src/approval/runs.js";
import type { Store } from "../../src/store/db.js";
import { type SoftAuthenticator, TEST_ORIGIN, TEST_RP_ID } from "../helpers/authenticator.js";
import { callOf, makeAuthorizer, pendingOf, publishPreview, testRun, throughStep8 } from "./helpers.js";

export interface PasskeyGrant {
  run: Run;
  auth: ReturnType<typeof makeAuthorizer>["auth"];
  rec: ReturnType<typeof makeAuthorizer>["rec"];
  /** the call that asked, of publishPreview at the epoch given */
  call: ReturnType<typeof callOf>;
  /** its request, decided by the passkey */
  req: ApprovalRequest;
  grant: string;
}

/**
 * A run whose call of publishPreview at `epoch` asked a human (`db`), approved by `key` on the
 * other connection as the console does: the call is answered with the passkey's grant.
 */
export async function grantedByPasskey(
  db: Store,
  other: Store,
  stateDir: string,
  key: SoftAuthenticator,
  epoch: string,
): Promise<PasskeyGrant> {
  const run = testRun(db);
  const { auth, rec } = makeAuthorizer(db, run);
  const call = callOf(publishPreview, epoch);
  const asked = auth.obtain(call);
  const req = await pendingOf(other, run);
  const prepared = preparePasskeyDecision(other, req.request, "approve");
  const { grant } = await completePasskeyDecision(other, prepared, key.assert(prepared.options.challenge), {
    origin: TEST_ORIGIN,
    rpId: TEST_RP_ID,
    stateDir,
  });
  expect(await asked).toEqual({ grant: grant!.grant });
  return { run, auth, rec, call, req, grant: grant!.grant };
}

/**
 * Call once the passkey of `g` was removed: a store writer undoes the grant's end, so only the
 * removal record can stop the next call. That call (through step 8) is not covered: a new request
 * is made and the grant's refusal recorded (decision_rejected, "was removed"). Returns the new
 * request, and `done` to cancel it and let the call's wait end.
 */
export async function askedAgainAfterRemoval(
  other: Store,
  g: PasskeyGrant,
  epoch: string,
): Promise<{ req2: ApprovalRequest; done(): Promise<void> }> {
  other.prepare("UPDATE grants SET ended_at = NULL, ended_reason = NULL WHERE grant_id = ?").run(g.grant);
  const asksAgain = throughStep8(g.auth, () => callOf(publishPreview, epoch));
  const req2 = await pendingOf(other, g.run);
  expect(req2.request).not.toBe(g.req.request);
  expect(g.rec.events).toContainEqual(
    expect.objectContaining({
      type: "decision_rejected",
      grant: g.grant,
      why: expect.stringMatching(/was removed/),
    }),
  );
  return {
    req2,
    async done() {
      other.prepare("UPDATE approval_requests SET state = 'cancelled' WHERE request = ?").run(req2.request);
      await asksAgain;
    },
  };
}
