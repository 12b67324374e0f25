// A call covered by a session grant, held at the server while something takes the grant's
// authority away (a revoke, a key rotation): the setup and the checks of the tests that say such a
// call is not recalled, its answer reaches the client, and the next call asks a human
// (test/approval/revoke-call-in-flight, test/keyring/rotate-keys-call-in-flight). A real gateway
// with `--approval session` in front of the inventory fixture, whose slow_write waits for its
// release; the real CLI approving.
import { rmSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { expect } from "vitest";
import { decideByCli, nextStoredRequest, type Pending } from "./approvals.js";
import { waitFor } from "./files.js";
import { startInventory } from "./gateway.js";
import { makeProject } from "./project.js";
import { newStateDir } from "./state.js";

type Gateway = Awaited<ReturnType<typeof startInventory>>;
type CallResult = Awaited<ReturnType<Gateway["client"]["callTool"]>>;

export interface HeldUnderGrant {
  stateDir: string;
  project: ReturnType<typeof makeProject>;
  gw: Gateway;
  /** the request the human approved for the session (its grant covers the held call) */
  asked: Pending;
  /** the second call, at the server and waiting for its release */
  held: Promise<CallResult>;
  /** requests seen so far, for nextStoredRequest */
  seen: Set<string>;
  call(note: string): Promise<CallResult>;
}

const resultText = (r: unknown) => JSON.stringify((r as { content?: unknown }).content);

/**
 * A slow_write approved for the session and answered, then a second one covered by that grant
 * held at the server (the fixture counted it). What is started is ended by the functions given to
 * `onCleanup`.
 */
export async function callHeldUnderGrant(
  onCleanup: (c: () => Promise<void> | void) => void,
): Promise<HeldUnderGrant> {
  const project = makeProject("A");
  onCleanup(() => project.cleanup());
  const stateDir = newStateDir();
  const gw = await startInventory(project, ["--approval", "session", "--approval-timeout", "60000"], {
    stateDir,
    env: { PORTCULLIS_NO_CONSOLE: "1" },
  });
  onCleanup(() => gw.close());
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
  return { stateDir, project, gw, asked, held, seen, call };
}

/** The held call released: its answer reaches the client (nothing recalled a call already sent). */
export async function heldCallAnswered(k: HeldUnderGrant): Promise<void> {
  k.project.release();
  const answer = await k.held;
  expect(answer.isError, resultText(answer)).toBeFalsy();
  expect(resultText(answer)).toContain("slow_write released");
}

/**
 * The next call (`note`) is not covered: it asks a human, `deny` denies it, and it never reaches
 * the server. Returns the request it made.
 */
export async function nextCallDenied(
  k: HeldUnderGrant,
  note: string,
  deny: (request: string) => Promise<void>,
): Promise<Pending> {
  const next = k.call(note).catch((e: unknown) => e);
  const again = await nextStoredRequest(k.stateDir, k.seen);
  expect(again.tool).toBe("slow_write");
  await deny(again.request);
  expect(String(await next)).toContain("A human denied this call");
  expect(k.project.counter()).toBe(2);
  return again;
}

/** The grant the approval of `request` made. */
export function grantOf(stateDir: string, request: string): string {
  const db = new Database(join(stateDir, "portcullis.db"), { readonly: true });
  try {
    return db.prepare("SELECT grant_id FROM grants WHERE request = ?").pluck().get(request) as string;
  } finally {
    db.close();
  }
}

/** The audit event picked by `pick`, which must be the only one. */
export function theOne<E extends Record<string, unknown>>(
  events: E[],
  pick: (e: E) => boolean,
  what: string,
): E {
  const found = events.filter(pick);
  expect(found, what).toHaveLength(1);
  return found[0]!;
}

/**
 * The audit's order around the break at record `breakSeq` (the revoke, the rotation record): the
 * held call's intent under the grant, the break, the held call's result (ok), the next call's
 * request; nothing went out under the grant after the break.
 */
export function expectHeldCallAround(
  events: { seq: number; type: string; [k: string]: unknown }[],
  grant: string,
  breakSeq: number,
  nextRequest: string,
): void {
  // the approved call's intent, then the held one's: both under the grant
  const underGrant = events.filter((e) => e.type === "tool_called" && e.grant === grant);
  expect(underGrant).toHaveLength(2);
  const heldIntent = underGrant[1]!;
  expect(heldIntent.callKey).toBeDefined();
  const heldResult = theOne(
    events,
    (e) => e.type === "tool_result" && e.callKey === heldIntent.callKey,
    "the held call's result",
  );
  const next = theOne(
    events,
    (e) => e.type === "approval_requested" && e.approvalRequest === nextRequest,
    "the next call's request",
  );
  expect(heldResult.outcome).toBe("ok");
  expect(heldIntent.seq).toBeLessThan(breakSeq);
  expect(breakSeq).toBeLessThan(heldResult.seq);
  expect(heldResult.seq).toBeLessThan(next.seq);
  expect(events.filter((e) => e.type === "tool_called" && e.grant === grant && e.seq > breakSeq)).toEqual([]);
}
