// What a person does at the terminal while a gateway waits for a decision: list the pending
// requests (`portcullis approvals --json`), wait for a new one, approve, deny or revoke through
// the real CLI with the test passphrase.
import { statSync } from "node:fs";
import { join } from "node:path";
import { expect } from "vitest";
import { publicRequest } from "../../src/approval/render.js";
import { pendingRequests } from "../../src/approval/requests.js";
import { openRecords } from "../../src/audit/log.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore, openStoreToRead } from "../../src/store/db.js";
import { type Truthy, waitFor } from "./files.js";
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
  createdAt: string;
  /** when the request stops being pending unless decided (its created time plus its life) */
  expiresAt: string;
}

export async function pending(stateDir: string): Promise<Pending[]> {
  const r = await runCli(["approvals", "--json", "--state-dir", stateDir]);
  expect(r.code).toBe(0);
  return (JSON.parse(r.stdout) as { requests: Pending[] }).requests;
}

/**
 * The pending requests as `portcullis approvals --json` lists them, read in the test process: for
 * a test that waits for a gateway's request and whose subject is not the listing (a listing is a
 * process of its own, about 0.2 s of CPU). The command first closes the requests that are overdue
 * or whose gateway is gone (src/approval/abandoned.ts), then lists the rest; this reader writes
 * nothing and leaves those out (`waiting`), so it lists what the command would. A test about the
 * listing, or about that closing, runs the command (`pending`).
 */
export function storedPending(stateDir: string): Pending[] {
  const db = openStoreToRead(stateDir);
  try {
    return pendingRequests(db)
      .filter((r) => r.waiting)
      .map((r) => publicRequest(r) as unknown as Pending);
  } finally {
    db.close();
  }
}

/**
 * What a write to the store changes: the database's and its -wal's identity, size and mtime.
 * Read with `stat` alone: no SQLite connection, no lock (a read-only connection opened 40 times a
 * second beside the gateways made approval tests time out under load, cause not found).
 */
export function storeStamp(stateDir: string): string {
  return ["portcullis.db", "portcullis.db-wal"]
    .map((f) => {
      try {
        const s = statSync(join(stateDir, f));
        return `${s.ino}:${s.size}:${s.mtimeMs}`;
      } catch {
        return "-";
      }
    })
    .join("|");
}

/** While the store is unchanged, the CLI is still asked this often (a request can also end by time). */
const CLI_AT_LEAST_EVERY_MS = 1_000;

/**
 * Waits until `pick` finds what it wants in the pending requests as `portcullis approvals --json`
 * lists them. The CLI is a process of its own (about 0.3 s of CPU): it is asked again only once
 * the store has changed since it was last asked, or a second has passed, not every 25 ms.
 * `read`: how they are read, the CLI (`pending`) unless given (`storedPending`: in the test process).
 */
export async function waitForPending<T>(
  stateDir: string,
  pick: (requests: Pending[]) => T,
  ms = 20_000,
  what = "an approval request",
  read: (stateDir: string) => Pending[] | Promise<Pending[]> = pending,
): Promise<Truthy<T>> {
  let asked: { stamp: string; at: number } | null = null;
  return waitFor(
    async () => {
      const stamp = storeStamp(stateDir);
      if (asked !== null && asked.stamp === stamp && Date.now() - asked.at < CLI_AT_LEAST_EVERY_MS)
        return null;
      asked = { stamp, at: Date.now() }; // taken before the CLI reads: a write meanwhile changes it
      return pick(await read(stateDir));
    },
    ms,
    what,
  ) as Promise<Truthy<T>>;
}

/**
 * The first pending request not in `seen` (which it joins), waiting up to 20 s for one; read by
 * the CLI unless `read` says otherwise (`storedPending`, or `nextStoredRequest` below).
 */
export async function nextRequest(
  stateDir: string,
  seen: Set<string> = new Set(),
  read: (stateDir: string) => Pending[] | Promise<Pending[]> = pending,
): Promise<Pending> {
  const p = await waitForPending(
    stateDir,
    (list) => list.find((q) => !seen.has(q.request)) ?? null,
    20_000,
    "an approval request",
    read,
  );
  seen.add(p.request);
  return p;
}

/** `nextRequest` read in the test process (`storedPending`): no listing process. */
export function nextStoredRequest(stateDir: string, seen: Set<string> = new Set()): Promise<Pending> {
  return nextRequest(stateDir, seen, storedPending);
}

/**
 * `portcullis approve|deny|revoke ID [extra…]` with the test passphrase; it must succeed. The
 * tests run without a terminal, where `approve` takes no default reach: an approve given no
 * `--for` gets the one a terminal's `approve ID` defaults to (the request's mode says which).
 */
export async function decideByCli(
  stateDir: string,
  verb: "approve" | "deny" | "revoke",
  id: string,
  ...extra: string[]
): Promise<CliResult> {
  if (verb === "approve" && !extra.some((a) => a === "--for" || a.startsWith("--for="))) {
    // the reach its tool asks for, read from the request's row (the listing is not the subject:
    // a process of its own per approve cost more than the approve)
    const db = openStoreToRead(stateDir);
    let mode: string | undefined;
    try {
      mode = (
        db.prepare("SELECT mode FROM approval_requests WHERE request = ?").get(id) as
          | { mode: string }
          | undefined
      )?.mode;
    } finally {
      db.close();
    }
    extra = [...extra, "--for", mode === "per-call" ? "call" : "session"];
  }
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

/**
 * Every audit event with its `seq`, after `portcullis audit verify` found the chain whole (exit 0):
 * one CLI process and one decryption, where `audit show SEQ` per record verified the chain again
 * in a process of its own for each.
 */
export async function verifiedAuditEvents(
  stateDir: string,
): Promise<{ seq: number; type: string; [k: string]: unknown }[]> {
  const verified = await runCli(["audit", "verify", "--state-dir", stateDir]);
  expect(verified.code, verified.stderr).toBe(0);
  const db = openStore(stateDir);
  try {
    const { auditPrivateKey } = await unlockKeyring(stateDir, TEST_PASSPHRASE);
    return [...openRecords(db, auditPrivateKey)].map((r) => ({ seq: r.seq, ...r.event }));
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
