// `portcullis rotate-keys` while a call covered by a session grant (signed with the key rotated
// away) is already at the server. The grant covered that call when its intent was written, so the
// call is not recalled: its answer reaches the client and its result is recorded after the
// rotation record. The next call of the tool is not covered (DecisionVerifier.authorityHolds: the
// key the grant verified under is no longer the chain's end) and asks a human again. What it would
// catch: a running gateway that keeps a grant verified before the rotation covering calls after
// it, or one that drops the answer of a call already sent. A real gateway, the fixture server
// holding slow_write until released, the real CLI approving, rotating and denying.
import { afterEach, expect, it } from "vitest";
import { openRecords } from "../../src/audit/log.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { runCli } from "../helpers/gateway.js";
import {
  callHeldUnderGrant,
  expectHeldCallAround,
  grantOf,
  heldCallAnswered,
  nextCallDenied,
} from "../helpers/heldCallUnderGrant.js";
import { withPassphrase } from "../helpers/passphraseChange.js";
import { rotateByCli } from "../helpers/rotation.js";
import { passphraseEnv } from "../helpers/state.js";

const NEW = "the passphrase after a rotation mid-call";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

it("a call at the server when the keys are rotated is answered and recorded; the next call under its grant asks a human", async () => {
  // approved for the session with the key about to be rotated away, and a call it covers held
  const k = await callHeldUnderGrant((c) => cleanup.push(c));
  const rotated = await rotateByCli(k.stateDir, passphraseEnv(), NEW, ["--json"]);
  expect(rotated.code, rotated.stderr).toBe(0);
  const summary = JSON.parse(rotated.stdout) as { rotationRecord: number; grantsNoLongerHonoured: number };
  expect(summary.grantsNoLongerHonoured).toBe(1);

  // a rotation does not recall a call already sent; the next call is not covered by the grant
  // the old key signed (denied with the new passphrase)
  await heldCallAnswered(k);
  const again = await nextCallDenied(k, "after the rotation", async (id) => {
    const denied = await runCli(["deny", id], { stateDir: k.stateDir, env: withPassphrase(NEW) });
    expect(denied.code, denied.stderr).toBe(0);
  });
  await k.gw.close();

  const verified = await runCli(["audit", "verify"], { stateDir: k.stateDir });
  expect(verified.code, verified.stderr).toBe(0);
  const grant = grantOf(k.stateDir, k.asked.request);
  const keys = await unlockKeyring(k.stateDir, NEW);
  const db = openStore(k.stateDir);
  let events: { seq: number; type: string; [key: string]: unknown }[];
  try {
    events = [...openRecords(db, [keys.auditPrivateKey, ...keys.earlierAuditKeys])].map((r) => ({
      seq: r.seq,
      ...r.event,
    }));
  } finally {
    db.close();
  }
  expectHeldCallAround(events, grant, summary.rotationRecord, again.request);
}, 30_000);
