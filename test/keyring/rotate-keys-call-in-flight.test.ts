// `portcullis rotate-keys` while a call covered by a session grant (signed with the key rotated
// away) is already at the server. The grant covered that call when its intent was written, so the
// call is not recalled: its answer reaches the client and its result is recorded after the
// rotation record. The next call of the tool is not covered (DecisionVerifier.authorityHolds: the
// key the grant verified under is no longer the chain's end) and asks a human again. What it would
// catch: a running gateway that keeps a grant verified before the rotation covering calls after
// it, or one that drops the answer of a call already sent. A real gateway, the fixture server
// holding slow_write until released, the real CLI approving, rotating and denying.
import { rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { openRecords } from "../../src/audit/log.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { passphraseFile, withPassphrase } from "../helpers/passphraseChange.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

const NEW = "the passphrase after a rotation mid-call";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const resultText = (r: unknown) => JSON.stringify((r as { content?: unknown }).content);

it("a call at the server when the keys are rotated is answered and recorded; the next call under its grant asks a human", async () => {
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  const stateDir = newStateDir();
  const gw = await startInventory(project, ["--approval", "session", "--approval-timeout", "60000"], {
    stateDir,
    env: { PORTCULLIS_NO_CONSOLE: "1" },
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const call = (note: string) =>
    gw.client.callTool({ name: "slow_write", arguments: { note } }, undefined, { timeout: 60_000 });
  const seen = new Set<string>();

  // approved for the session with the key about to be rotated away; released so that it answers
  const first = call("approved");
  const asked = await nextStoredRequest(stateDir, seen);
  await decideByCli(stateDir, "approve", asked.request, "--for", "session");
  await waitFor(() => project.counter() === 1, 15_000, "the approved call to reach the server");
  project.release();
  expect((await first).isError).toBeFalsy();
  rmSync(project.releaseFile);

  // covered by the grant, and held at the server while the keys are rotated
  const held = call("held at the server");
  await waitFor(() => project.counter() === 2, 15_000, "the covered call to reach the server");
  const rotated = await runCli(["rotate-keys", "--json"], {
    stateDir,
    env: { ...passphraseEnv(), PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(NEW) },
  });
  expect(rotated.code, rotated.stderr).toBe(0);
  const summary = JSON.parse(rotated.stdout) as { rotationRecord: number; grantsNoLongerHonoured: number };
  expect(summary.grantsNoLongerHonoured).toBe(1);

  // the held call's answer reaches the client: a rotation does not recall a call already sent
  project.release();
  const answer = await held;
  expect(answer.isError, resultText(answer)).toBeFalsy();
  expect(resultText(answer)).toContain("slow_write released");

  // the next call is not covered by the grant the old key signed: it asks a human (denied with
  // the new passphrase) and never reaches the server
  const next = call("after the rotation").catch((e: unknown) => e);
  const again = await nextStoredRequest(stateDir, seen);
  expect(again.tool).toBe("slow_write");
  const denied = await runCli(["deny", again.request], { stateDir, env: withPassphrase(NEW) });
  expect(denied.code, denied.stderr).toBe(0);
  expect(String(await next)).toContain("A human denied this call");
  expect(project.counter()).toBe(2);
  await gw.close();

  const verified = await runCli(["audit", "verify"], { stateDir });
  expect(verified.code, verified.stderr).toBe(0);
  const rdb = new Database(join(stateDir, "portcullis.db"), { readonly: true });
  const grant = rdb.prepare("SELECT grant_id FROM grants WHERE request = ?").pluck().get(asked.request);
  rdb.close();
  const keys = await unlockKeyring(stateDir, NEW);
  const db = openStore(stateDir);
  let events: { seq: number; type: string; [k: string]: unknown }[];
  try {
    events = [...openRecords(db, [keys.auditPrivateKey, ...keys.earlierAuditKeys])].map((r) => ({
      seq: r.seq,
      ...r.event,
    }));
  } finally {
    db.close();
  }
  const one = (pick: (e: Record<string, unknown>) => boolean, what: string) => {
    const found = events.filter(pick);
    expect(found, what).toHaveLength(1);
    return found[0]!;
  };
  const underGrant = events.filter((e) => e.type === "tool_called" && e.grant === grant);
  expect(underGrant).toHaveLength(2);
  const heldIntent = underGrant[1]!;
  const heldResult = one(
    (e) => e.type === "tool_result" && e.callKey === heldIntent.callKey,
    "the held call's result",
  );
  const nextRequest = one(
    (e) => e.type === "approval_requested" && e.approvalRequest === again.request,
    "the next call's request",
  );
  expect(heldResult.outcome).toBe("ok");
  // in order: the held call's intent, the rotation record, its result, the next call's request
  expect(heldIntent.seq).toBeLessThan(summary.rotationRecord);
  expect(summary.rotationRecord).toBeLessThan(heldResult.seq);
  expect(heldResult.seq).toBeLessThan(nextRequest.seq);
  // nothing after the rotation went out under the grant
  expect(
    events.filter((e) => e.type === "tool_called" && e.grant === grant && e.seq > summary.rotationRecord),
  ).toEqual([]);
}, 30_000);
