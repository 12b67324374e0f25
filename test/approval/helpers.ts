// Shared set-up for the approval tests: a real store in a temp dir with the approval
// migration applied, tool definitions, calls as the guard builds them, and a way to
// decide from another connection.

import { dirname, join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, beforeEach, expect } from "vitest";
import { Authorizer, type AuthorizerOptions } from "../../src/approval/authorizer.js";
import type { ApprovalConfig } from "../../src/approval/grants.js";
import { pinnedSigner } from "../../src/approval/pin.js";
import {
  type ApprovalRequest,
  type Decision,
  decideRequest,
  getRequest,
} from "../../src/approval/requests.js";
import { type Run, startRun } from "../../src/approval/runs.js";
import { DecisionVerifier } from "../../src/approval/trust.js";
import { openRecords } from "../../src/audit/log.js";
import { toolFingerprint } from "../../src/catalog/index.js";
import type { ApprovedCall } from "../../src/guard/guard.js";
import type { DecisionSigner } from "../../src/keyring/approver.js";
import { initKeyring, unlockKeyring } from "../../src/keyring/keyring.js";
import { INSECURE_TEST_KDF_ENV } from "../../src/keyring/keyWrapping.js";
import { openStore, type Store } from "../../src/store/db.js";
import { PUBLISH_PREVIEW_V2 } from "../helpers/catalog.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";

export const DB_FILE = "portcullis.db";
export const PASSPHRASE = "approval tests passphrase";

/**
 * The state dir's keyring (made if missing, with the cheap test KDF) opened with the passphrase,
 * its approver key pinned in the audit chain: what `portcullis approve` signs with.
 */
export async function signerFor(stateDir: string, db: Store): Promise<DecisionSigner> {
  process.env[INSECURE_TEST_KDF_ENV] = "1";
  try {
    await initKeyring(stateDir, PASSPHRASE);
  } catch (e) {
    if ((e as Error).name !== "KeyringExistsError") throw e;
  }
  return pinnedSigner(db, stateDir, PASSPHRASE);
}

/** The signer of the current test's state dir (twoConnectionsPerTest). */
let currentSigner: DecisionSigner | null = null;
export function signer(): DecisionSigner {
  if (!currentSigner) throw new Error("no signer: use twoConnectionsPerTest");
  return currentSigner;
}

/** The store as every gateway opens it (the approval tables come with its migrations). */
export function openTestStore(stateDir: string): Store {
  return openStore(stateDir);
}

/** A second, independent connection to the same store file (as another process would have). */
export function otherConnection(stateDir: string): Store {
  const db = new Database(join(stateDir, DB_FILE));
  db.pragma("busy_timeout = 10000");
  db.pragma("foreign_keys = ON");
  return db;
}

export type ToolDef = { name: string; [k: string]: unknown };

export const publishPreview: ToolDef = {
  name: "publish_preview",
  description: "Publish a preview of a branch.",
  inputSchema: {
    type: "object",
    required: ["branch"],
    properties: { branch: { type: "string" } },
    additionalProperties: false,
  },
};

/** Same tool, whitespace fixed in the description: cosmetic (punctuation or case would not be). */
export const publishPreviewCosmetic: ToolDef = {
  ...publishPreview,
  description: "Publish a preview  of a branch. ",
};

/** Same tool, the branch bounded: narrows. */
export const publishPreviewNarrowed: ToolDef = {
  ...publishPreview,
  inputSchema: {
    type: "object",
    required: ["branch"],
    properties: { branch: { type: "string", maxLength: 100 } },
    additionalProperties: false,
  },
};

/** Same tool, a `target` selector with a default: expands (the seed's example, as in the catalog tests). */
export const publishPreviewExpanded: ToolDef = {
  ...publishPreview,
  inputSchema: PUBLISH_PREVIEW_V2.inputSchema,
};

export const readTool: ToolDef = {
  name: "inventory_lookup",
  description: "Look up an item.",
  inputSchema: { type: "object", properties: { sku: { type: "string" } } },
};

/** A call as the guard's precheck hands it to the authorization port. */
export function callOf(
  def: ToolDef,
  epoch: string,
  opts: { revision?: number; effective?: Record<string, unknown> } = {},
): ApprovedCall {
  return {
    tool: def.name,
    definition: def,
    fingerprint: toolFingerprint(def),
    epoch,
    revision: opts.revision ?? 1,
    effective: opts.effective ?? { branch: "main" },
    grant: null,
  };
}

export interface Recorded {
  events: { type: string; [k: string]: unknown }[];
  lines: string[];
}

export function makeAuthorizer(
  db: Store,
  run: Run,
  over: Partial<AuthorizerOptions> & { approval?: ApprovalConfig } = {},
): { auth: Authorizer; rec: Recorded } {
  const rec: Recorded = { events: [], lines: [] };
  const auth = new Authorizer({
    db,
    run,
    serverLabel: "inventory-local",
    approval: { default: "session", tools: {} },
    credentials: {},
    timeoutMs: 20_000,
    pollMs: 20,
    log: { info: (m) => rec.lines.push(m), warn: (m) => rec.lines.push(`warning: ${m}`) },
    // as the audit sink: a condition decides whether the event is recorded
    events: {
      emit: (e, condition) => {
        if (!condition || condition()) rec.events.push(e);
      },
      emitDurable: async (e, condition) => {
        if (condition && !condition()) return false;
        rec.events.push(e);
        return true;
      },
      flush: () => {},
    },
    context: () => ({ record: null, revision: 1 }),
    verifier: new DecisionVerifier(db, dirname(db.name)),
    ...over,
  });
  return { auth, rec };
}

/** Starts a run whose chain begins at this test process. */
export function testRun(db: Store, label = "inventory-local"): Run {
  return startRun(db, label, { fromPid: process.pid });
}

/** The pending request of a run, once the authorizer has written it. */
export async function pendingOf(db: Store, run: Run, ms = 10_000): Promise<ApprovalRequest> {
  const id = await waitFor(
    () =>
      (
        db
          .prepare(
            "SELECT request FROM approval_requests WHERE agent_run = ? AND state = 'pending' ORDER BY created_at",
          )
          .get(run.run) as { request: string } | undefined
      )?.request,
    ms,
    `a pending approval request for run ${run.run}`,
  );
  return getRequest(db, id)!;
}

/** Waits for the run's pending request and decides it from `db` (another connection). */
export async function decideNext(db: Store, run: Run, decision: Decision, by = "test (another connection)") {
  const req = await pendingOf(db, run);
  return decideRequest(db, req.request, decision, by, signer());
}

/** Every audit event in the state dir's chain, opened with the test passphrase. */
export async function chainEvents(stateDir: string): Promise<Record<string, unknown>[]> {
  const db = openTestStore(stateDir);
  try {
    const { auditPrivateKey } = await unlockKeyring(stateDir, PASSPHRASE);
    return [...openRecords(db, auditPrivateKey)].map((r) => r.event);
  } finally {
    db.close();
  }
}

export function requestCount(db: Store, run: Run): number {
  return (
    db.prepare("SELECT COUNT(*) AS n FROM approval_requests WHERE agent_run = ?").get(run.run) as {
      n: number;
    }
  ).n;
}

/**
 * One call through the authorizer as the guard makes it (src/guard/guard.ts decide): step 2,
 * step 7, then step 8's re-read of the grant (condition), which the audit log makes under its
 * write lock with the intent record; a grant gone by then means the decision is made again.
 */
export async function throughStep8(
  auth: Authorizer,
  call: () => ApprovedCall,
): Promise<{ grant: string | null } | { error: { code: number; message: string; data?: unknown } }> {
  for (let attempt = 0; attempt < 3; attempt++) {
    const c = call();
    const stale = auth.stale(c);
    if (stale) return { error: stale };
    const got = await auth.obtain(c, {});
    if ("error" in got) return got;
    c.grant = got.grant;
    const condition = auth.condition(c);
    if (!condition || condition()) return got;
  }
  throw new Error("the grant's condition failed three times");
}

/**
 * For each test: a fresh state directory, the store opened as a gateway opens it (`db`), and a
 * second connection to it, as another process has (`other`); closed and removed after the test.
 * `use` receives them before each test.
 */
export function twoConnectionsPerTest(
  prefix: string,
  use: (s: { dir: string; db: Store; other: Store }) => void,
): void {
  let s: { dir: string; db: Store; other: Store } | null = null;
  beforeEach(async () => {
    const dir = tempDir(prefix);
    s = { dir, db: openTestStore(dir), other: otherConnection(dir) };
    currentSigner = await signerFor(dir, s.db);
    use(s);
  });
  afterEach(() => {
    s?.other.close();
    s?.db.close();
    if (s) removeDir(s.dir);
    s = null;
    currentSigner = null;
  });
}

/**
 * A run whose first call of publish_preview at `epoch` asked a human, and got a session grant
 * (approved through `other`, as the CLI would).
 */
export async function sessionGranted(db: Store, other: Store, epoch: string) {
  const run = testRun(db);
  const { auth } = makeAuthorizer(db, run);
  const call = callOf(publishPreview, epoch);
  const asked = auth.obtain(call);
  const { grant } = await decideNext(other, run, { approve: true, for: "session" });
  expect(await asked).toEqual({ grant: grant!.grant });
  return { run, auth, call, grant: grant! };
}
