import type { AuditEvent } from "../audit/events.js";
import type { Grant } from "./grants.js";

/** What the record says of the request decided (an ApprovalRequest as the decision left it). */
interface Decided {
  request: string;
  agentRun: string;
  serverLabel: string;
  executionEpoch: string;
  catalogRevision: number;
  tool: string;
  fingerprint: string;
  credentialScope: string[];
  decidedBy: string | null;
  reason: string | null;
}

/**
 * The audit record of a human's decision, written by the process that decides (the CLI, the
 * console, the demo, the drill) in the transaction that writes the decision (decideRequest).
 * A decision is recorded there, not by the gateway that uses it: a request outlives the call
 * that raised it, so the human may decide while no call waits, and the grant is then used by a
 * retry that only finds it live in the store; a denial nobody retries is never seen by a gateway
 * at all. Written with the decision, each is in the chain exactly once, whoever uses it and
 * however many gateways do, and before any call it allows.
 *
 * `approval_granted`: the grant, its mode and how long it lasts, who decided. `approval_denied`
 * (outcome `denied`): who decided and why. `request` is the request as the decision left it.
 */
export function decisionEvent(request: Decided, grant: Grant | null): AuditEvent {
  const subject = {
    run: request.agentRun,
    serverLabel: request.serverLabel,
    epoch: request.executionEpoch,
    revision: request.catalogRevision,
    tool: request.tool,
    fingerprint: request.fingerprint,
    approvalRequest: request.request,
    credentialScope: request.credentialScope,
    decidedBy: request.decidedBy,
  };
  if (grant) {
    return {
      type: "approval_granted",
      ...subject,
      grant: grant.grant,
      mode: grant.mode,
      expiresWhen: grant.expiresWhen,
    };
  }
  return { type: "approval_denied", ...subject, outcome: "denied", reason: request.reason };
}
