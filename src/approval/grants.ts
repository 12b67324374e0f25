import { dirname } from "node:path";
import { AuditLog } from "../audit/log.js";
import type { ApprovalMode } from "../config/config.js";
import { processLiveness } from "../identity/proc.js";
import type { Store } from "../store/db.js";
import { LIST_OF_NAMED, LIST_OF_NAMES, OBJECTS_BY_NAME, storedJson } from "../store/storedJson.js";
import { StoreFiles } from "../store/storeFiles.js";

export type { ApprovalMode } from "../config/config.js";

/** A server's approval configuration: `approval: {default, tools, resources}` in portcullis.json. */
export interface ApprovalConfig {
  default: ApprovalMode;
  tools: Record<string, ApprovalMode>;
  /** the recorded reads (resources/read, prompts/get …); absent: "none" */
  resources?: ApprovalMode;
}

/**
 * The approval mode of one tool: its own entry, else the server's default, else `session`. A tool
 * that is not listed but whose name reads as a listed one's gets the stricter of that entry and
 * the default: with `{"default": "none", "tools": {"deploy": "per-call"}}`, a server that adds
 * `Deploy` would otherwise have it run with no human seeing a review, the one place its look-alike
 * name is pointed out. A plain ASCII name reads as another only by case. Any other name may imitate
 * any entry: a soft hyphen, a zero-width, tag or control character, a separator, an accent, a
 * full-width letter, or a letter of another script that looks Latin (a Cyrillic `о` in `deplоy`,
 * which no fold catches without a table of confusables). So a tool not listed whose name is not
 * plain ASCII gets the strictest of every entry and the default. Tool names are ASCII letters,
 * digits, `_`, `-` and `.` by the protocol's advice: a real one rarely is anything else.
 */
export function resolveMode(
  approval: Partial<ApprovalConfig> | null | undefined,
  tool: string,
): ApprovalMode {
  const tools = approval?.tools;
  const d = approval?.default;
  const byDefault: ApprovalMode = d === "session" || d === "per-call" || d === "none" ? d : "session";
  if (!tools) return byDefault;
  // Own keys only: a tool named "constructor" or "__proto__" must not read the prototype.
  if (Object.hasOwn(tools, tool)) {
    const m = tools[tool];
    if (isMode(m)) return m;
  }
  let mode = byDefault;
  const anyEntry = !plainAscii(tool);
  const key = tool.toLowerCase();
  for (const [name, m] of Object.entries(tools))
    if (
      isMode(m) &&
      name !== tool &&
      (anyEntry || name.toLowerCase() === key) &&
      STRICTNESS[m] > STRICTNESS[mode]
    )
      mode = m;
  return mode;
}

const STRICTNESS: Record<ApprovalMode, number> = { none: 0, session: 1, "per-call": 2 };

function isMode(m: unknown): m is ApprovalMode {
  return m === "session" || m === "per-call" || m === "none";
}

/** Printable ASCII, the space aside: a name made of these imitates another only by case. */
function plainAscii(name: string): boolean {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    if (c < 0x21 || c > 0x7e) return false;
  }
  return true;
}

/** The credential scope names a server's tools need (config `credentials`: env var → scope). */
export function requiredScopes(credentials: Record<string, string> | null | undefined): string[] {
  return [...new Set(Object.values(credentials ?? {}))].sort();
}

export interface ToolScopeEntry {
  name: string;
  fingerprint: string;
}

/** A grant, in the shape of docs/design.md ("Grants and approval modes"). */
export interface Grant {
  grant: string;
  agentRun: string;
  serverLabel: string;
  executionEpoch: string;
  toolScope: ToolScopeEntry[];
  credentialScope: string[];
  /** `session`: reusable for the run and the epoch; `per-call`: one call, never remembered */
  mode: "session" | "per-call";
  issuedAt: string;
  /** `agent-run-ends` for session grants, `this-call` for single-use ones */
  expiresWhen: "agent-run-ends" | "this-call";
}

/** A grant with what the store keeps beside it. */
export interface GrantRecord extends Grant {
  catalogRevision: number;
  /** the tool definitions as approved, by name (null when the tool was not in the catalog) */
  toolDefinitions: Record<string, Record<string, unknown> | null>;
  request: string | null;
  approvedBy: string;
  revokedAt: string | null;
  revokedBy: string | null;
  endedAt: string | null;
  endedReason: string | null;
  /** per-call grants: the digest of the arguments of the one call approved */
  argumentsDigest: string | null;
  /** the approver's Ed25519 signature over the grant's decision digest (src/approval/decision.ts) */
  signature: string | null;
  /** the digest of the review the approval was given on (null: a grant signed before it existed) */
  reviewDigest: string | null;
  /**
   * Set when a scope column of the row cannot be read (storedJson): which and why. Such a grant
   * is read with no tool, no credential and no definition, so it covers no call.
   */
  unreadable?: string;
}

export interface GrantDbRow {
  grant_id: string;
  agent_run: string;
  server_label: string;
  execution_epoch: string;
  catalog_revision: number;
  tool_scope_json: string;
  tool_defs_json: string;
  credential_scope_json: string;
  mode: "session" | "per-call";
  issued_at: string;
  expires_when: "agent-run-ends" | "this-call";
  request: string | null;
  approved_by: string;
  revoked_at: string | null;
  revoked_by: string | null;
  ended_at: string | null;
  ended_reason: string | null;
  arguments_digest: string | null;
  signature: string | null;
  review_digest?: string | null;
}

export function toGrantRecord(r: GrantDbRow): GrantRecord {
  const toolScope = storedJson(r.tool_scope_json, "grants", "tool_scope_json", LIST_OF_NAMED);
  const credentialScope = storedJson(
    r.credential_scope_json,
    "grants",
    "credential_scope_json",
    LIST_OF_NAMES,
  );
  const toolDefinitions = storedJson(r.tool_defs_json, "grants", "tool_defs_json", OBJECTS_BY_NAME);
  const unreadable = [toolScope, credentialScope, toolDefinitions].find((c) => !c.ok);
  // Deny first: a grant any of whose scope columns cannot be read covers no tool and no credential.
  const readable = toolScope.ok && credentialScope.ok && toolDefinitions.ok;
  return {
    ...(unreadable && !unreadable.ok ? { unreadable: unreadable.why } : {}),
    grant: r.grant_id,
    agentRun: r.agent_run,
    serverLabel: r.server_label,
    executionEpoch: r.execution_epoch,
    toolScope: readable ? (toolScope.value as ToolScopeEntry[]) : [],
    credentialScope: readable ? credentialScope.value : [],
    mode: r.mode,
    issuedAt: r.issued_at,
    expiresWhen: r.expires_when,
    catalogRevision: r.catalog_revision,
    toolDefinitions: readable ? toolDefinitions.value : {},
    request: r.request,
    approvedBy: r.approved_by,
    revokedAt: r.revoked_at,
    revokedBy: r.revoked_by,
    endedAt: r.ended_at,
    endedReason: r.ended_reason,
    argumentsDigest: r.arguments_digest,
    signature: r.signature,
    reviewDigest: r.review_digest ?? null,
  };
}

/** The documented shape of a grant (docs/design.md), without the store's bookkeeping. */
export function publicGrant(g: GrantRecord): Grant {
  return {
    grant: g.grant,
    agentRun: g.agentRun,
    serverLabel: g.serverLabel,
    executionEpoch: g.executionEpoch,
    toolScope: g.toolScope,
    credentialScope: g.credentialScope,
    mode: g.mode,
    issuedAt: g.issuedAt,
    expiresWhen: g.expiresWhen,
  };
}

export function getGrant(db: Store, grant: string): GrantRecord | null {
  const r = db.prepare("SELECT * FROM grants WHERE grant_id = ?").get(grant) as GrantDbRow | undefined;
  return r ? toGrantRecord(r) : null;
}

/**
 * Grant writes made through this module on one connection. SQLite's data_version
 * tells a connection about commits of every *other* connection; this counter tells
 * it about its own, so a cache of grants can key on both (Authorizer).
 */
const ownGrantWrites = new WeakMap<Store, number>();

export function grantWritesOn(db: Store): number {
  return ownGrantWrites.get(db) ?? 0;
}

/** Every write to the grants table through `db` calls this, so caches on `db` see it. */
export function grantsWritten(db: Store): void {
  ownGrantWrites.set(db, grantWritesOn(db) + 1);
}

/** Session grants of a run for a server that still count (not revoked, not ended). */
export function liveSessionGrants(db: Store, run: string, serverLabel: string): GrantRecord[] {
  const rows = db
    .prepare(
      `SELECT * FROM grants
       WHERE agent_run = ? AND server_label = ? AND mode = 'session' AND revoked_at IS NULL AND ended_at IS NULL
       ORDER BY issued_at, grant_id`,
    )
    .all(run, serverLabel) as GrantDbRow[];
  return rows.map(toGrantRecord);
}

export interface ActiveGrant extends GrantRecord {
  /** false when the gateway serving the run is provably gone without ending it: the grant can no longer be used */
  runAlive: boolean;
  /**
   * The epoch that the gateway which minted the grant's epoch serves now, as its status row says;
   * null when no row says (an ended gateway, a store without the row). Another epoch than the
   * grant's means new code runs behind it: the grant covers none of its calls, and ends at the
   * run's next call that needs an approval (step 2). Shown, never decided on.
   */
  serverEpoch: string | null;
}

/** Grants that can still cover a call: session grants not revoked, not ended, of runs not ended. */
export function activeGrants(db: Store): ActiveGrant[] {
  const rows = db
    .prepare(
      `SELECT g.*, r.gateway_pid AS gateway_pid, r.gateway_pid_start AS gateway_pid_start,
              r.gateway_pid_ns AS gateway_pid_ns, r.gateway_boot AS gateway_boot,
              (SELECT gw.epoch FROM epochs e JOIN gateways gw ON gw.gateway_id = e.gateway_id
                WHERE e.epoch = g.execution_epoch AND gw.ended_at IS NULL) AS server_epoch
       FROM grants g JOIN runs r ON r.run = g.agent_run
       WHERE g.mode = 'session' AND g.revoked_at IS NULL AND g.ended_at IS NULL AND r.ended_at IS NULL
       ORDER BY g.issued_at, g.grant_id`,
    )
    .all() as (GrantDbRow & {
    gateway_pid: number;
    gateway_pid_start: string | null;
    gateway_pid_ns: string | null;
    gateway_boot: string | null;
    server_epoch: unknown;
  })[];
  return rows.map((r) => ({
    ...toGrantRecord(r),
    serverEpoch: typeof r.server_epoch === "string" ? r.server_epoch : null,
    // as RunRow.gatewayAlive: a gateway this process cannot judge (another PID namespace) may use it
    runAlive:
      processLiveness({
        pid: r.gateway_pid,
        start: r.gateway_pid_start,
        pidNs: r.gateway_pid_ns,
        boot: r.gateway_boot,
      }) !== "gone",
  }));
}

export class GrantError extends Error {
  override name = "GrantError";
  constructor(
    message: string,
    readonly kind: "not-found" | "not-active",
  ) {
    super(message);
  }
}

/**
 * Revokes a grant: it stops covering from the next call on. The revocation's audit record
 * (`grants_revoked`, reason `revoked by a human`, with `revokedBy`) is appended in the same
 * transaction, as a decision's is (decideRequest): a human's revoke is in the chain exactly once,
 * or it is not made. `stateDir` holds the keyring the record is sealed to (by default the store's
 * directory); no passphrase is needed, as for any record.
 */
export function revokeGrant(
  db: Store,
  grant: string,
  by: string,
  stateDir: string = dirname(db.name),
): GrantRecord {
  grantsWritten(db);
  // Opened first: without a keyring the revocation could not be recorded (nor could a grant
  // have been decided).
  const audit = AuditLog.open(db, stateDir);
  try {
    return db
      .transaction(() => {
        // Under the write lock, as a decision: a revocation written through a store file deleted
        // or replaced since this process opened it would be lost, and the grant would go on covering.
        StoreFiles.of(db).assertKept();
        const g = getGrant(db, grant);
        if (!g) throw new GrantError(`there is no grant ${grant}`, "not-found");
        if (g.revokedAt)
          throw new GrantError(`grant ${grant} was already revoked at ${g.revokedAt}`, "not-active");
        if (g.endedAt)
          throw new GrantError(
            `grant ${grant} already ended at ${g.endedAt} (${g.endedReason})`,
            "not-active",
          );
        const now = new Date().toISOString();
        db.prepare("UPDATE grants SET revoked_at = ?, revoked_by = ? WHERE grant_id = ?").run(now, by, grant);
        // Last in the transaction (a savepoint of it), as decideRequest's record.
        audit.append({
          type: "grants_revoked",
          run: g.agentRun,
          serverLabel: g.serverLabel,
          epoch: g.executionEpoch,
          grants: [grant],
          reason: "revoked by a human",
          revokedBy: by,
        });
        return { ...g, revokedAt: now, revokedBy: by };
      })
      .immediate();
  } finally {
    audit.close();
  }
}

/** Ends grants (superseded, consumed). Returns how many changed. */
export function endGrants(db: Store, grants: readonly string[], reason: string): number {
  if (grants.length === 0) return 0;
  grantsWritten(db);
  const now = new Date().toISOString();
  const stmt = db.prepare(
    "UPDATE grants SET ended_at = ?, ended_reason = ? WHERE grant_id = ? AND ended_at IS NULL",
  );
  return db.transaction(() => grants.reduce((n, g) => n + stmt.run(now, reason, g).changes, 0)).immediate();
}
