// `portcullis revoke` of a session grant while a call it covered is already at the server. The
// grant covered that call when it was sent (its intent is recorded under the grant), and a revoke
// takes authority away from the next call on: it does not recall a call the server is already
// running. So the held call's answer reaches the client and is recorded after the revoke, the next
// call of the same tool is held for a human (not covered), and the audit shows, in order: the
// held call's intent under the grant, the revoke, the held call's result, the next call's request.
// A real gateway, the fixture server holding slow_write until released, the CLI.
import { afterEach, expect, it } from "vitest";
import { decideByCli, verifiedAuditEvents } from "../helpers/approvals.js";
import {
  callHeldUnderGrant,
  expectHeldCallAround,
  grantOf,
  heldCallAnswered,
  nextCallDenied,
  theOne,
} from "../helpers/heldCallUnderGrant.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it("a call at the server when its session grant is revoked is answered and recorded; the next call asks a human", async () => {
  const k = await callHeldUnderGrant((c) => cleanup.push(c));
  const grant = grantOf(k.stateDir, k.asked.request);
  const revoked = await decideByCli(k.stateDir, "revoke", grant);
  expect(revoked.stdout).toContain(`revoked ${grant}`);

  // the revoke does not recall a call already sent; the next call is not covered (denied here)
  await heldCallAnswered(k);
  const again = await nextCallDenied(k, "after the revoke", async (id) => {
    await decideByCli(k.stateDir, "deny", id);
  });
  await k.gw.close();

  const events = await verifiedAuditEvents(k.stateDir);
  const revoke = theOne(events, (e) => e.type === "grants_revoked", "the revoke");
  expect(revoke.grants).toEqual([grant]);
  expectHeldCallAround(events, grant, revoke.seq, again.request);
}, 30_000);
