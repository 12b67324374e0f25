import type { ArgumentValidator, CatalogSnapshot } from "../catalog/index.js";
import type { ErrorObject } from "../relay/jsonrpc.js";
import { refuse } from "./refusals.js";

/**
 * The decision every tools/call goes through, in the order of DESIGN.md
 * (deny first, cheapest first). This is the only place that order lives; the
 * gateway supplies the facts through narrow ports and performs the forward.
 */
export type ServerState = "starting" | "identity-pending" | "ready" | "stopped";

export interface ServerView {
  state: ServerState;
  epoch: string | null;
  revision: number | null;
  snapshot: CatalogSnapshot | null;
  validator: ArgumentValidator | null;
}

export interface CallFacts {
  tool: string;
  args: unknown;
  /** catalog revision this client connection last listed completely */
  seenRevision: number | null;
}

/** Step 2 and steps 6–7: filled in by the approval module; absent means "no approval layer". */
export interface AuthorizationPort {
  /** Step 2: the run's approval belongs to an older epoch / older tool version. */
  stale(call: ApprovedCall): ErrorObject | null;
  /** Step 6: the credential scopes this tool needs, when the vault is locked or lacks one (a refusal). */
  vault(call: ApprovedCall): Promise<ErrorObject | null>;
  /** Step 7: a covering grant, or a human decision (may wait; `progress` keeps the client informed). */
  obtain(
    call: ApprovedCall,
    hooks: { progress?: (message: string) => void; signal?: AbortSignal },
  ): Promise<{ grant: string | null } | { error: ErrorObject }>;
  /**
   * What the decision rests on (the grant still live), to be read again at step 8 under the
   * audit log's write lock, atomically with the intent record; undefined when nothing needs to.
   */
  condition(call: ApprovedCall): (() => boolean) | undefined;
}

/**
 * Step 8: the durable intent record; resolves true once it is on disk, false when `condition`
 * no longer held when the record was due (nothing written), rejects when it cannot be written.
 */
export interface IntentPort {
  intent(call: ApprovedCall, condition?: () => boolean): Promise<boolean>;
}

/** Decisions made again when what one rested on changed before its intent was recorded. */
const MAX_DECISIONS = 3;

export interface ApprovedCall {
  tool: string;
  /** the tool object as listed in the current catalog (for review and for diffs against a granted version) */
  definition: Record<string, unknown> | null;
  fingerprint: string;
  epoch: string;
  revision: number;
  effective: Record<string, unknown>;
  grant: string | null;
}

export type Verdict =
  | { action: "hold" }
  | { action: "refuse"; error: ErrorObject; reason: string }
  | { action: "invalid-arguments"; errors: string[] }
  | { action: "forward"; call: ApprovedCall };

/** Steps 1, 3, 4, 5 (and 2 when an approval layer is present): synchronous, no waiting. */
export function precheck(
  server: ServerView,
  facts: CallFacts,
  auth: AuthorizationPort | null,
): Verdict | { action: "continue"; call: ApprovedCall } {
  // 1. identity-pending: hold, never forward.
  if (
    server.state !== "ready" ||
    !server.epoch ||
    !server.snapshot ||
    !server.validator ||
    server.revision === null
  ) {
    return { action: "hold" };
  }
  const entry = server.snapshot.byName.get(facts.tool);
  const call: ApprovedCall = {
    tool: facts.tool,
    fingerprint: entry?.fingerprint ?? "",
    definition: entry?.tool ?? null,
    epoch: server.epoch,
    revision: server.revision,
    effective: {},
    grant: null,
  };
  // 2. the run's approval belongs to an older epoch (reported before staleness).
  const stale = auth?.stale(call);
  if (stale) {
    // When the client is also behind, say so too: it must re-list before asking again.
    if (facts.seenRevision !== server.revision && typeof stale.data === "object" && stale.data !== null) {
      stale.data = { ...stale.data, seenRevision: facts.seenRevision, currentRevision: server.revision };
    }
    return { action: "refuse", error: stale, reason: "authorization_stale" };
  }
  // 3. the client has not listed the current revision.
  if (facts.seenRevision !== server.revision) {
    return {
      action: "refuse",
      error: refuse.catalogStale(facts.seenRevision, server.revision),
      reason: "catalog_stale",
    };
  }
  // 4. not in the current catalog, even if the server would answer.
  if (!entry) {
    return {
      action: "refuse",
      error: refuse.toolNotInCatalog(facts.tool, server.revision),
      reason: "tool_not_in_catalog",
    };
  }
  // 5. arguments against the current input schema.
  const checked = server.validator.validate(facts.tool, facts.args ?? {});
  if (!checked.ok) return { action: "invalid-arguments", errors: checked.errors };
  call.effective = checked.effective;
  return { action: "continue", call };
}

/** The whole decision: precheck, then steps 6, 7 and 8. */
export async function decide(
  server: () => ServerView,
  facts: CallFacts,
  auth: AuthorizationPort | null,
  intent: IntentPort | null,
  hooks: { progress?: (message: string) => void; signal?: AbortSignal } = {},
  attempt = 1,
): Promise<Verdict> {
  const first = precheck(server(), facts, auth);
  if (first.action !== "continue") return first;
  const call = first.call;
  if (auth) {
    // 6. credentials needed and the vault is locked, or lacks one of them.
    const locked = await auth.vault(call);
    if (locked)
      return {
        action: "refuse",
        error: locked,
        reason: String((locked.data as { error?: string })?.error),
      };
    // 7. a grant, or a human decision.
    const got = await auth.obtain(call, hooks);
    if ("error" in got)
      return {
        action: "refuse",
        error: got.error,
        reason: String((got.error.data as { error?: string })?.error),
      };
    call.grant = got.grant;
    // The wait may have spanned an epoch change: the approval is for the epoch it named.
    const now = server();
    if (now.epoch !== call.epoch) return decide(server, facts, auth, intent, hooks, attempt);
  }
  // 8. the intent record, durably, before anything is forwarded. The grant is read again in the
  // same transaction: a revoke that landed meanwhile means this decision is made again.
  if (intent) {
    try {
      if (!(await intent.intent(call, auth?.condition(call)))) {
        if (attempt < MAX_DECISIONS) return decide(server, facts, auth, intent, hooks, attempt + 1);
        throw new Error(`the approval changed while the call was being recorded, ${MAX_DECISIONS} times`);
      }
    } catch (e) {
      return {
        action: "refuse",
        error: {
          code: -32603,
          message: "The audit log could not record this call, so it was not forwarded.",
          data: {
            error: "audit_unavailable",
            reason: (e as Error).message,
            retry: "ask a human to check the audit log",
          },
        },
        reason: "audit_unavailable",
      };
    }
  }
  return { action: "forward", call };
}
