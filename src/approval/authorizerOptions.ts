import type { ExecutionRecord } from "../identity/index.js";
import type { Store } from "../store/db.js";
import type { Logger } from "../util/log.js";
import type { VaultPort } from "../vault/port.js";
import type { ToolsConfig } from "../vault/toolScopes.js";
import type { ApprovalConfig } from "./grants.js";
import type { Run } from "./runs.js";
import type { DecisionVerifier } from "./trust.js";

/** How long a call waits for a human: below the common 60 s client request timeout. */
export const DEFAULT_HOLD_MS = 50_000;
/** How long a request waits for a decision after its call gave up (retries join it). */
export const DEFAULT_REQUEST_TTL_MS = 10 * 60_000;

export interface AuthorizerEvents {
  /**
   * best effort (the gateway's audit sink): approval_requested, approval_denied (revoked),
   * decision_rejected, … With a `condition`, read under the audit log's write lock just before the
   * record is written: false writes nothing (approval_expired: the request's close).
   */
  emit(e: { type: string; [k: string]: unknown }, condition?: () => boolean): void;
  /**
   * Written with the sink's next group, resolving once it is (false: the condition did not hold);
   * rejects when it could not be (another process held the store's lock past the busy timeout,
   * the event loop free meanwhile). An approval request is stored as its record's condition so.
   */
  emitDurable(e: { type: string; [k: string]: unknown }, condition?: () => boolean): Promise<boolean>;
  /** writes what is queued now (an expired request's close is written with its record at once) */
  flush(): void;
}

export interface AuthorizerOptions {
  db: Store;
  run: Run;
  serverLabel: string;
  /** config `approval: {default, tools, resources}` */
  approval: ApprovalConfig;
  /** config `credentials`: env var → scope name */
  credentials: Record<string, string>;
  /** config `tools.<name>.credentials`: the scopes each tool uses (absent: every tool uses all) */
  tools?: ToolsConfig;
  /** step 6: the vault holder (absent: a server without credentials never asks) */
  vault?: VaultPort;
  /** how long a call waits for a human (default 50 s, below common client timeouts) */
  timeoutMs?: number;
  /** how long a request stays pending for retries of its call after the call gave up (default 10 min) */
  requestTtlMs?: number;
  /**
   * what follows the request id in the `portcullis approve ID` printed for a human and in the
   * agent's refusals: ` --state-dir DIR` when this gateway's state directory is not the default
   * (src/store/stateDir.ts, stateDirFlagFor); absent: nothing
   */
  stateDirFlag?: string;
  /** the console page of a request, when a console runs (null: none runs) */
  consolePage?: (request: string) => string | null;
  /** tells the human a new request is waiting (default: a desktop notification, src/approval/notify.ts) */
  notify?: (tool: string, serverLabel: string, stateDirFlag: string) => void;
  /** how often the store is read for a decision (default 150 ms) */
  pollMs?: number;
  /** how often `progress` is called while waiting (default 3 s) */
  progressEveryMs?: number;
  log: Pick<Logger, "info" | "warn">;
  events: AuthorizerEvents;
  /**
   * The current epoch's execution record (null when not captured yet), why that epoch began (its
   * EpochReason: the review says when a replaced epoch began, not when its process started) and
   * the catalog revision.
   */
  context: () => { record: ExecutionRecord | null; reason?: string | null; revision: number };
  /** checks each decision's signature against the approver key pinned in the audit chain */
  verifier: DecisionVerifier;
  /** told of each new request (the gateway starts the console); must not throw or block */
  onRequest?: (request: string) => void;
}
