// What a person does at the terminal while a gateway waits for a decision: list the pending
// requests (`portcullis approvals --json`), wait for a new one, approve, deny or revoke through
// the real CLI with the test passphrase.
import { expect } from "vitest";
import { openRecords } from "../../src/audit/log.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { waitFor } from "./files.js";
import { type CliResult, runCli } from "./gateway.js";
import { passphraseEnv, TEST_PASSPHRASE } from "./state.js";

/** A pending request as `portcullis approvals --json` prints it (the fields tests read). */
export interface Pending {
  request: string;
  tool: string;
  mode: string;
  agentRun: string;
  serverLabel: string;
  executionEpoch: string;
  fingerprint: string;
}

export async function pending(stateDir: string): Promise<Pending[]> {
  const r = await runCli(["approvals", "--json", "--state-dir", stateDir]);
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { requests: Pending[] }).requests;
}

/** The first pending request not in `seen` (which it joins), waiting up to 20 s for one. */
export async function nextRequest(stateDir: string, seen: Set<string> = new Set()): Promise<Pending> {
  const p = await waitFor(
    async () => (await pending(stateDir)).find((q) => !seen.has(q.request)) ?? null,
    20_000,
    "an approval request",
  );
  seen.add(p.request);
  return p;
}

/** `portcullis approve|deny|revoke ID [extra…]` with the test passphrase; it must succeed. */
export async function decideByCli(
  stateDir: string,
  verb: "approve" | "deny" | "revoke",
  id: string,
  ...extra: string[]
): Promise<CliResult> {
  const r = await runCli([verb, id, ...extra, "--state-dir", stateDir], { env: passphraseEnv() });
  expect(r.code, r.stderr).toBe(0);
  return r;
}

/** Every audit event of the state dir, decrypted with the test passphrase. */
export async function auditEvents(stateDir: string): Promise<Record<string, unknown>[]> {
  const db = openStore(stateDir);
  try {
    const { auditPrivateKey } = await unlockKeyring(stateDir, TEST_PASSPHRASE);
    return [...openRecords(db, auditPrivateKey)].map((r) => r.event);
  } finally {
    db.close();
  }
}

/** One row of `audit activity --json`: a call, how it was decided and how it ended. */
export interface ActivityRow {
  call: string;
  tool: string;
  outcome: string;
  interruption: string | null;
  [k: string]: unknown;
}

/** `portcullis audit activity --json` of the state dir, with the test passphrase; it must succeed. */
export async function auditActivity(stateDir: string): Promise<ActivityRow[]> {
  const r = await runCli(["audit", "activity", "--json", "--state-dir", stateDir], { env: passphraseEnv() });
  expect(r.code, r.stderr).toBe(0);
  return JSON.parse(r.stdout) as ActivityRow[];
}

/**
 * A call that waited for a human, refused when its gateway (or session) ended: from the request on,
 * the audit holds the call's refusal, the server's exit, the request closed with the run and the
 * run's end (a watcher's artifact_changed aside), and the request's row says it was cancelled so.
 */
export async function expectRequestClosedWithRun(stateDir: string): Promise<void> {
  const all = await auditEvents(stateDir);
  const after = all
    .slice(all.findIndex((e) => e.type === "approval_requested"))
    .map((e) => [e.type, e.reason ?? null, e.requestId ?? null])
    .filter(([type]) => type !== "artifact_changed");
  expect(after).toEqual([
    ["approval_requested", null, null],
    ["authorization_denied", "authorization_required", "waits"],
    ["server_exited", null, null],
    ["approval_expired", "agent run ended", null],
    ["run_ended", null, null],
  ]);
  const db = openStore(stateDir);
  try {
    expect(db.prepare("SELECT state, reason FROM approval_requests").all()).toEqual([
      { state: "cancelled", reason: "agent run ended" },
    ]);
  } finally {
    db.close();
  }
}
