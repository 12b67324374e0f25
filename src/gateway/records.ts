import { argumentsDigest, auditable, redactSecrets } from "../audit/index.js";
import type { ApprovedCall } from "../guard/guard.js";
import type { DownReason, LinkGeneration as Generation } from "../supervisor/link.js";
import { nonFiniteAt } from "../util/canonical.js";
import { scrubbedStrings } from "../util/log.js";
import { redactRecord } from "../util/redact.js";
import type { CallName } from "./clientIdText.js";
import type { EventSink } from "./events.js";
import { defaultsApplied } from "./text.js";

/**
 * What one gateway connection records, and with which fields (docs/audit-format.md, "Event
 * fields"): every event shape the gateway writes lives here. Only a call's intent is durable
 * (it must be on disk before the call is forwarded); the rest is written with the next group.
 * Arguments are recorded as digests (over the real values): they may carry anything; with
 * `audit.arguments: "clear"`, also in clear after src/util/redact.ts took out every secret-named
 * value (at any depth) and every credential-shaped string. A redacted value becomes
 * `{ "redacted": true }`, never a string, so the event stays auditable. The execution record in
 * `server_started` is redacted the same way as in the store.
 *
 * A call is named by the client's own JSON-RPC id (its JSON text as the client wrote it,
 * `clientIdText.ts`), never by the id the gateway holds it under (a stand-in, a wire id), and
 * joined to its end by its call key (`callKey`), which no other call of this gateway process has.
 */
export class GatewayRecords {
  /** the agent run this connection serves, once the client spoke */
  run: string | null = null;

  constructor(
    private readonly events: EventSink,
    private readonly label: string,
    private readonly auditArguments: "digest" | "clear" = "digest",
    /** the credential scopes a call of a tool uses (absent or empty: none are recorded) */
    private readonly scopesFor?: (tool: string) => string[],
  ) {}

  /**
   * A request that is not a tool call but reads the server's data (resources/read,
   * resources/subscribe, prompts/get, completion/complete): durable before it is forwarded, with
   * the epoch it went to, a digest of its parameters and, when a human approved it
   * (`approval.resources`), the grant. Resolves false, writing nothing, when `condition` (the
   * grant still live) no longer held under the write lock.
   */
  requestForwarded(
    name: CallName,
    method: string,
    params: unknown,
    call: ApprovedCall,
    condition?: () => boolean,
  ): Promise<boolean> {
    return this.events.emitDurable(
      {
        type: "request_forwarded",
        run: this.run,
        serverLabel: this.label,
        ...callFields(name),
        method,
        epoch: call.epoch,
        paramsDigest: argumentsDigest(params ?? {}),
        ...(call.grant ? { grant: call.grant } : {}),
      },
      condition,
    );
  }

  catalogServed(epoch: string | undefined, revision: number | null, fingerprint: string): void {
    this.events.emit({
      type: "catalog_served",
      run: this.run,
      serverLabel: this.label,
      epoch,
      revision,
      fingerprint,
    });
  }

  /**
   * The intent of a call the guard let through: resolves true once durable, false when
   * `condition` (what the decision rested on) no longer held under the write lock, and nothing
   * was written; rejects if it cannot be written.
   */
  toolCalled(name: CallName, args: unknown, call: ApprovedCall, condition?: () => boolean): Promise<boolean> {
    const given = argumentsDigest(args ?? {});
    const scopes = this.scopesFor?.(call.tool) ?? [];
    const noDefaults = call.effective === args; // the validator made no copy: no default applies
    return this.events.emitDurable(
      {
        type: "tool_called",
        run: this.run,
        serverLabel: this.label,
        ...callFields(name),
        tool: call.tool,
        fingerprint: call.fingerprint,
        epoch: call.epoch,
        revision: call.revision,
        grant: call.grant,
        ...(scopes.length > 0 ? { credentialScope: scopes } : {}),
        argumentsDigest: given,
        effectiveArgumentsDigest: noDefaults ? given : argumentsDigest(call.effective),
        defaultsApplied: noDefaults ? [] : Object.keys(defaultsApplied(args, call.effective)),
        ...(this.auditArguments === "clear" ? { arguments: redactSecrets(args ?? {}) } : {}),
      },
      condition,
    );
  }

  /**
   * A call the guard refused, or whose arguments did not validate. Arguments holding a number
   * beyond the range of JSON numbers have no digest (null): the guard refuses them for that very
   * reason, and the refusal is recorded all the same.
   */
  denied(
    name: CallName,
    tool: string,
    args: unknown,
    at: { epoch: string | null; revision: number | null },
    reason: string,
  ): void {
    this.events.emit({
      type: "authorization_denied",
      run: this.run,
      serverLabel: this.label,
      ...callFields(name),
      tool,
      epoch: at.epoch,
      revision: at.revision,
      reason,
      argumentsDigest: refusedDigest(args),
    });
  }

  toolResult(
    name: CallName,
    tool: string | undefined,
    epoch: string,
    outcome: "ok" | "error" | "tool-error",
    /** a guarded read's method (resources/read …), whose end this is; absent for a tools/call */
    method?: string,
  ): void {
    this.events.emit({
      type: "tool_result",
      run: this.run,
      serverLabel: this.label,
      ...callFields(name),
      tool,
      ...(method ? { method } : {}),
      epoch,
      outcome,
    });
  }

  /**
   * A call's (or a guarded read's: `method`) intent closed without a result: written to a process
   * that went away (answered epoch_transition, never retried: outcome unknown), cancelled by the
   * client once sent (outcome unknown), or never sent at all because the client cancelled it, its
   * decision was made again, no process was there to take it, or the gateway ended the connection
   * while it was decided (`connection_ended`), or a fault of the gateway's own stopped a listen's
   * decision (`gateway_error`) (outcome not_forwarded); or sent
   * to a server reached by URL that answered it for a session it no longer knows (outcome
   * not_run: the server said it did not run it).
   */
  callInterrupted(
    name: CallName,
    tool: string | undefined,
    epoch: string,
    reason:
      | "epoch_transition"
      | "cancelled"
      | "redecided"
      | "server_unavailable"
      | "connection_ended"
      | "listen_refused"
      | "gateway_error" = "epoch_transition",
    outcome: "unknown" | "not_forwarded" | "not_run" = "unknown",
    method?: string,
  ): void {
    this.events.emit({
      type: "call_interrupted",
      run: this.run,
      serverLabel: this.label,
      ...callFields(name),
      tool,
      ...(method ? { method } : {}),
      epoch,
      reason,
      outcome,
    });
  }

  /**
   * The epoch's execution record as completed once the server answered (the processes a wrapper
   * started; for a server reached by URL, what it said of itself at initialize), when its
   * identity digest is not the one `server_started` recorded.
   */
  serverIdentified(gen: Generation): void {
    this.events.emit({
      type: "server_identified",
      serverLabel: this.label,
      epoch: gen.epoch,
      identityDigest: gen.record.identityDigest,
      // what a server reached by URL says of itself (serverInfo, capabilities) has keys it chose
      record: auditable(redactRecord(scrubbedStrings(gen.record))),
    });
  }

  /** A new execution epoch, with its execution record; server_replaced too when one came before. */
  serverStarted(gen: Generation, previous: Generation | null): void {
    this.events.emit({
      type: "server_started",
      serverLabel: this.label,
      epoch: gen.epoch,
      previousEpoch: previous?.epoch ?? null,
      reason: gen.reason,
      // what a server reached by URL says of itself (serverInfo, capabilities) has keys it chose
      record: auditable(redactRecord(scrubbedStrings(gen.record))),
    });
    if (previous) {
      this.events.emit({
        type: "server_replaced",
        serverLabel: this.label,
        oldEpoch: previous.epoch,
        newEpoch: gen.epoch,
        reason: gen.reason,
      });
    }
  }

  serverExited(gen: Generation, why: DownReason, detail: string): void {
    this.events.emit({ type: "server_exited", serverLabel: this.label, epoch: gen.epoch, why, detail });
  }

  artifactChanged(gen: Generation, paths: string[], parts: string[]): void {
    this.events.emit({ type: "artifact_changed", serverLabel: this.label, epoch: gen.epoch, paths, parts });
  }
}

/** The digest of a refused call's arguments, or null when they have no canonical form. */
function refusedDigest(args: unknown): string | null {
  return nonFiniteAt(args) === null ? argumentsDigest(args ?? {}) : null;
}

/** A call's name fields: its id (requestIdFields) and its call key, which joins its intent to its end. */
export function callFields(name: CallName): { requestId: unknown; requestIdText?: string; callKey?: number } {
  // the key added to requestIdFields' own new object, not both spread into a third: every intent
  // and every result comes here
  const fields: { requestId: unknown; requestIdText?: string; callKey?: number } = requestIdFields(
    name.idText,
  );
  if (name.key !== undefined) fields.callKey = name.key;
  return fields;
}

/**
 * A call's id fields: `requestId`, the client's id as a JSON value, and `requestIdText`, its text
 * as the client wrote it, only where that value does not serialise back to it (`9007199254740993`,
 * which no JSON number holds exactly; `1.0`; `"a\/b"`): the views name the call by that text.
 */
export function requestIdFields(idText: string): { requestId: unknown; requestIdText?: string } {
  const plain = plainIntegerId(idText);
  if (plain !== null) return { requestId: plain };
  const requestId: unknown = JSON.parse(idText);
  return JSON.stringify(requestId) === idText ? { requestId } : { requestId, requestIdText: idText };
}

/**
 * The id a client most often writes, an integer of at most 15 digits with no sign but a leading
 * minus and no leading zero, as its number; else null. Such a text is the number's own
 * serialisation (every integer of 15 digits is exact in a double, and `String` writes it back the
 * same), so the JSON parse and the serialisation that would compare them are spared. `-0` is not
 * one: it serialises as `0`.
 */
function plainIntegerId(idText: string): number | null {
  const n = idText.length;
  if (n === 0 || n > 16) return null;
  let i = idText.charCodeAt(0) === 45 /* - */ ? 1 : 0;
  if (i === n) return null; // "-" alone (no JSON text, but never NaN)
  const first = idText.charCodeAt(i);
  // a leading zero only as the whole text "0"; the digits after the sign at most 15
  if (first === 48 /* 0 */) return n === 1 ? 0 : null;
  if (first < 49 || first > 57 || n - i > 15) return null;
  for (i++; i < n; i++) {
    const c = idText.charCodeAt(i);
    if (c < 48 || c > 57) return null;
  }
  return Number(idText);
}
