// `portcullis revoke` of a session grant while a call it covered is already at the server. The
// grant covered that call when it was sent (its intent is recorded under the grant), and a revoke
// takes authority away from the next call on: it does not recall a call the server is already
// running. So the held call's answer reaches the client and is recorded after the revoke, the next
// call of the same tool is held for a human (not covered), and the audit shows, in order: the
// held call's intent under the grant, the revoke, the held call's result, the next call's request.
// A real gateway, the fixture server holding slow_write until released, the CLI.
import { rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, expect, it } from "vitest";
import { decideByCli, nextStoredRequest, verifiedAuditEvents } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const resultText = (r: unknown) => JSON.stringify((r as { content?: unknown }).content);

it("a call at the server when its session grant is revoked is answered and recorded; the next call asks a human", async () => {
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

  // approved for the session; released so that it answers
  const first = call("approved");
  const asked = await nextStoredRequest(stateDir, seen);
  await decideByCli(stateDir, "approve", asked.request, "--for", "session");
  await waitFor(() => project.counter() === 1, 15_000, "the approved call to reach the server");
  project.release();
  expect((await first).isError).toBeFalsy();
  rmSync(project.releaseFile);

  // covered by the grant, and held at the server
  const held = call("held at the server");
  await waitFor(() => project.counter() === 2, 15_000, "the covered call to reach the server");
  const db = new Database(join(stateDir, "portcullis.db"), { readonly: true });
  const grant = db
    .prepare("SELECT grant_id FROM grants WHERE request = ?")
    .pluck()
    .get(asked.request) as string;
  db.close();
  const revoked = await decideByCli(stateDir, "revoke", grant);
  expect(revoked.stdout).toContain(`revoked ${grant}`);

  // the held call's answer reaches the client: the revoke does not recall a call already sent
  project.release();
  const answer = await held;
  expect(answer.isError, resultText(answer)).toBeFalsy();
  expect(resultText(answer)).toContain("slow_write released");

  // the next call is not covered: it asks for a human (denied here), and never reaches the server
  const next = call("after the revoke").catch((e: unknown) => e);
  const again = await nextStoredRequest(stateDir, seen);
  expect(again.tool).toBe("slow_write");
  await decideByCli(stateDir, "deny", again.request);
  expect(String(await next)).toContain("A human denied this call");
  expect(project.counter()).toBe(2);
  await gw.close();

  const events = await verifiedAuditEvents(stateDir);
  const at = (pick: (e: Record<string, unknown>) => boolean, what: string) => {
    const found = events.filter(pick);
    expect(found, what).toHaveLength(1);
    return found[0]!;
  };
  // the approved call's intent, then the held one's: both under the grant
  const underGrant = events.filter((e) => e.type === "tool_called" && e.grant === grant);
  expect(underGrant).toHaveLength(2);
  const heldIntent = underGrant[1]!;
  expect(heldIntent.callKey).toBeDefined();
  const revoke = at((e) => e.type === "grants_revoked", "the revoke");
  const heldResult = at((e) => e.type === "tool_result" && e.callKey === heldIntent.callKey, "held result");
  const nextRequest = at(
    (e) => e.type === "approval_requested" && e.approvalRequest === again.request,
    "the next call's request",
  );
  expect(revoke.grants).toEqual([grant]);
  expect(heldResult.outcome).toBe("ok");
  expect(heldIntent.seq).toBeLessThan(revoke.seq);
  expect(revoke.seq).toBeLessThan(heldResult.seq);
  expect(heldResult.seq).toBeLessThan(nextRequest.seq);
  // nothing after the revoke went out under the grant
  expect(events.filter((e) => e.type === "tool_called" && e.grant === grant && e.seq > revoke.seq)).toEqual(
    [],
  );
}, 30_000);
