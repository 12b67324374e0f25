import type { ArgumentValidator, CatalogSnapshot } from "../catalog/index.js";
import type { ErrorObject } from "../relay/jsonrpc.js";
import {
  canonicalJson,
  isWellFormedString,
  type NonFinite,
  nonFiniteAt,
  sha256Tag,
} from "../util/canonical.js";
import { pathText } from "../util/valuePath.js";
import type { RespelledInteger } from "../util/writtenIntegers.js";
import { refuse } from "./refusals.js";

/**
 * The decision every tools/call goes through, in the order docs/design.md describes
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
  /**
   * What this client connection last listed completely: its revision and each tool's
   * fingerprint in it. null when the client never listed (a call before any list is judged on
   * the current catalog).
   */
  seen: ListedCatalog | null;
  /**
   * An integer of the arguments, as the client wrote it, that JSON.parse and re-serialising would
   * forward as another integer (src/util/writtenIntegers.ts): refused at step 5.
   */
  respelled?: RespelledInteger;
}

export interface ListedCatalog {
  revision: number;
  fingerprints: ReadonlyMap<string, string>;
}

/**
 * Step 3, per tool: the client is behind for this call only when the tool it calls is absent
 * from what it last listed, or listed there with another fingerprint than now. A change to some
 * other tool does not lock it out (some hosts never re-list within a session).
 */
function behindFor(
  seen: ListedCatalog | null,
  tool: string,
  current: string | undefined,
  revision: number,
): boolean {
  if (seen === null || seen.revision === revision) return false;
  return seen.fingerprints.get(tool) !== current;
}

/** How a tool the client is behind on differs: new since its list, gone since, or redefined. */
function staleChange(
  seen: ListedCatalog | null,
  tool: string,
  inCatalog: boolean,
): "added" | "removed" | "changed" {
  if (!inCatalog) return "removed";
  return seen?.fingerprints.has(tool) ? "changed" : "added";
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
    hooks: {
      progress?: (message: string) => void;
      signal?: AbortSignal;
      waiting?: (request: string) => void;
    },
  ): Promise<{ grant: string | null } | { error: ErrorObject }>;
  /**
   * What the decision rests on (the grant still live), to be read again at step 8 under the
   * audit log's write lock, atomically with the intent record; undefined when nothing needs to.
   */
  condition(call: ApprovedCall): (() => boolean) | undefined;
  /**
   * Once the call is forwarded: whether the session grant it went out under still holds, asked
   * while it is at the server (a revoke closes its credential release window at once); undefined
   * when it rests on no session grant.
   */
  holding?(call: ApprovedCall): (() => boolean) | undefined;
  /**
   * The served catalog changed within one epoch and the change expands authority (onExpand
   * "run"): every grant of the run ends, so the next call of any tool asks a human again.
   */
  catalogExpanded?(change: { revision: number; previousRevision: number; expanding: ExpandingEntry[] }): void;
  /**
   * A call refused because the server lists its tool with different definitions (between steps 2
   * and 3): a change of the tool as any other, so the session grants that covered it end, as a
   * call refused on an expanded tool ends them (onExpand "tool"; under "run" none is left).
   */
  ambiguousRefused?(call: ApprovedCall): void;
  /**
   * Whether every recorded read asks a human (approval.resources "per-call"): a read the gateway
   * would make on its own (a subscription re-opened on a new process) is then not made, since no
   * agent request waits for that human's answer.
   */
  readsAskHuman?(): boolean;
}

/** One catalog diff entry that expands authority, as recorded when it ends a run's grants. */
export interface ExpandingEntry {
  tool: string;
  kind: "added" | "removed" | "modified";
  changes: string[];
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
  /** set for a recorded read (resources/read …): approved as a pseudo-tool named by method and target */
  read?: ReadFacts;
}

/**
 * A request that reads the server's data without being a tool call. With an approval mode for
 * reads, it is approved like a call of a pseudo-tool named `<method> <target>`, whose fingerprint
 * is a digest of exactly that pair: a session grant covers the same read again, never another.
 */
export interface ReadFacts {
  method: string;
  /** the resource uri, the prompt name, or the completion's ref */
  target: string;
  /** the request's params, shown (redacted) in the review */
  params: Record<string, unknown>;
  /**
   * the request the client sent, when it asks for this read under another method: a 2026-07-28
   * subscriptions/listen, whose resource uris are each approved as `resources/subscribe URI`.
   * Shown to the human; the name and fingerprint stay `method`'s, so that one grant covers both.
   */
  via?: string;
}

/** The pseudo-tool call a read is approved as. */
export function readCall(read: ReadFacts, epoch: string, revision: number): ApprovedCall {
  const name = `${read.method} ${read.target}`;
  // Asked under another method (a modern listen's uri): what the human sees says what was sent,
  // and why it carries this name (the grant's scope, shared by both eras' subscriptions of it).
  const asked =
    read.via === undefined
      ? {
          description: `Not a tool: the MCP request ${read.method} for ${read.target}, which reads the server's data.`,
        }
      : {
          title: `asked as ${read.via} for ${read.target}`,
          description: `Not a tool: the MCP request ${read.via} (2026-07-28), asking for updates of ${read.target} (its notifications.resourceSubscriptions). Approved under the name ${name}, as the earlier eras' ${read.method} of it is, so that one approval covers the subscription in either form.`,
          via: read.via,
        };
  return {
    tool: name,
    definition: {
      name,
      ...asked,
      method: read.method,
      target: read.target,
    },
    fingerprint: sha256Tag(canonicalJson({ method: read.method, target: read.target })),
    epoch,
    revision,
    effective: read.params,
    grant: null,
    read,
  };
}

/**
 * Steps 1 and 2 for a read: held while identity-pending; an approval of an older epoch is stale.
 * Between them, a read whose params (`params`, the request's whole params) hold a number beyond
 * the range of JSON numbers is refused: nothing could digest them for its approval or its record
 * (step 2 already digests them when a one-call grant is live).
 */
function precheckRead(
  server: ServerView,
  read: ReadFacts,
  params: unknown,
  auth: AuthorizationPort | null,
): Verdict | { action: "continue"; call: ApprovedCall } {
  if (server.state !== "ready" || !server.epoch) return { action: "hold" };
  const huge = nonFiniteAt(params);
  if (huge) {
    return {
      action: "refuse",
      error: refuse.numberOutOfRange(fieldName(huge.path), huge.value),
      reason: "number_out_of_range",
    };
  }
  // a target the store cannot keep as written: its approval request would name another target
  // than its review, and no approval of it could be given (docs/security.md)
  if (!isWellFormedString(read.target)) {
    return {
      action: "refuse",
      error: refuse.targetNotWellFormed(read.method),
      reason: "target_not_well_formed",
    };
  }
  const call = readCall(read, server.epoch, server.revision ?? 0);
  const stale = auth?.stale(call);
  if (stale) return { action: "refuse", error: stale, reason: "authorization_stale" };
  return { action: "continue", call };
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
    if (
      behindFor(facts.seen, facts.tool, entry?.fingerprint, server.revision) &&
      typeof stale.data === "object" &&
      stale.data !== null
    ) {
      stale.data = {
        ...stale.data,
        seenRevision: facts.seen?.revision ?? null,
        currentRevision: server.revision,
      };
    }
    return { action: "refuse", error: stale, reason: "authorization_stale" };
  }
  // Between 2 and 3: listed by the server more than once with different definitions (or also with
  // one it cannot fingerprint), so not served (tool_not_in_catalog, saying why), whatever the
  // client last listed: it cannot be called until the server is fixed, and re-listing, which
  // catalog_stale asks for, cannot help.
  const ambiguous = server.snapshot.ambiguous?.get(facts.tool);
  if (ambiguous) {
    // Refused while ambiguous: the grant for the definition approved ends here, so that the server
    // listing it alone again is asked about again, never covered by it (docs/security.md).
    auth?.ambiguousRefused?.(call);
    const unfingerprintable = server.snapshot.unfingerprintable?.get(facts.tool) ?? 0;
    return {
      action: "refuse",
      error: refuse.toolAmbiguous(
        facts.tool,
        server.revision,
        (server.snapshot.repeated?.get(facts.tool)?.length ?? ambiguous.length) + unfingerprintable,
        ambiguous.length,
        unfingerprintable,
      ),
      reason: "tool_not_in_catalog",
    };
  }
  // 3. the client's last list shows this tool otherwise than the current catalog does.
  if (behindFor(facts.seen, facts.tool, entry?.fingerprint, server.revision)) {
    return {
      action: "refuse",
      error: refuse.catalogStale(
        facts.tool,
        facts.seen?.revision ?? null,
        server.revision,
        staleChange(facts.seen, facts.tool, entry !== undefined),
      ),
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
  // 5. arguments against the current input schema. First, a number beyond the range of JSON
  // numbers (`1e400` parses to Infinity): no schema check sees it as wrong, yet nothing can
  // digest it for the approval or the intent record, nor forward it as sent (it would go out as
  // null). It is refused here, before anything digests the arguments.
  const huge = nonFiniteAt(facts.args);
  if (huge) return { action: "invalid-arguments", errors: [nonFiniteSentence(huge)] };
  // An integer the gateway would forward as another one (`9007199254740993` goes out rounded): the
  // digest, the record and an approval would be of the number the server gets, not of the one the
  // client wrote, and a server that reads integers exactly would act on another.
  if (facts.respelled) return { action: "invalid-arguments", errors: [respelledSentence(facts.respelled)] };
  const checked = server.validator.validate(facts.tool, facts.args ?? {});
  if (!checked.ok) return { action: "invalid-arguments", errors: checked.errors };
  call.effective = checked.effective;
  return { action: "continue", call };
}

/** A path of keys and indexes as the validator names fields: `items[0].price` (src/util/valuePath.ts). */
function fieldName(path: (string | number)[]): string {
  return pathText(path, "field");
}

/** Step 5's sentence for arguments holding an integer the gateway cannot forward as written. */
function respelledSentence(r: RespelledInteger): string {
  const field = fieldName(r.path);
  const subject = field === "" ? "The arguments hold" : `Field ${JSON.stringify(field)} holds`;
  const shown =
    r.written.length > 40 ? `${r.written.slice(0, 40)}… (${r.written.length} characters)` : r.written;
  return (
    `${subject} the number ${shown}, which the gateway reads as a double and would forward as another ` +
    "number: send at most 15 significant digits and nothing nearer 0 than 1e-307 (0 itself is fine), or " +
    "send it as a string if the tool takes one."
  );
}

/** Step 5's sentence for arguments holding a number beyond the range of JSON numbers. */
function nonFiniteSentence(huge: NonFinite): string {
  const field = fieldName(huge.path);
  const subject = field === "" ? "The arguments are" : `Field ${JSON.stringify(field)} is`;
  return (
    `${subject} a number beyond the range of JSON numbers (it reads as ${huge.value}), which the gateway ` +
    "can neither check nor record: send a number within range, or send it as a string if the tool takes one."
  );
}

export interface DecideOptions {
  /** read again after every wait: the state may have moved on meanwhile */
  server: () => ServerView;
  /** for a read, `args` is the request's whole params, checked only for numbers out of range */
  facts: CallFacts;
  /**
   * A recorded read instead of a tool call: steps 1, 2, 7 and 8 only, and the refusal of params
   * holding a number out of range. No catalog or schema checks (reads are not in the tool
   * catalog), and no vault check (the server's credentials are for its tools; reads were never
   * stopped by a locked vault).
   */
  read?: ReadFacts;
  /** null: no approval layer (steps 2, 6 and 7 are skipped) */
  auth: AuthorizationPort | null;
  /** required: nothing is forwarded without its intent record */
  intent: IntentPort;
  hooks?: { progress?: (message: string) => void; signal?: AbortSignal; waiting?: (request: string) => void };
}

/** The whole decision: precheck, then steps 6, 7 and 8. */
export async function decide(o: DecideOptions, attempt = 1): Promise<Verdict> {
  const { server, facts, auth, intent, hooks = {} } = o;
  const first = o.read ? precheckRead(server(), o.read, facts.args, auth) : precheck(server(), facts, auth);
  if (first.action !== "continue") return first;
  const call = first.call;
  if (auth) {
    // 6. credentials needed and the vault is locked, or lacks one of them.
    const locked = o.read ? null : await auth.vault(call);
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
    if (now.epoch !== call.epoch) return decide(o, attempt);
    // Or a catalog change within the epoch: the human approved the tool as the review showed
    // it, and a definition listed since (a new input, a wider enum, "also deletes") was never
    // seen. The call is judged again on the current catalog (the client, behind, is told the
    // tool changed; a grant the change expands past no longer covers it), never forwarded on
    // the definition it was held under.
    if (!o.read && now.snapshot?.byName.get(call.tool)?.fingerprint !== call.fingerprint)
      return decide(o, attempt);
  }
  // 8. the intent record, durably, before anything is forwarded. The grant is read again in the
  // same transaction: a revoke that landed meanwhile means this decision is made again.
  try {
    if (!(await intent.intent(call, auth?.condition(call)))) {
      if (attempt < MAX_DECISIONS) return decide(o, attempt + 1);
      throw new Error(`the approval changed while the call was being recorded, ${MAX_DECISIONS} times`);
    }
  } catch (e) {
    return {
      action: "refuse",
      error: refuse.auditUnavailable((e as Error).message),
      reason: "audit_unavailable",
    };
  }
  return { action: "forward", call };
}
