import { canonicalJson, sha256Tag } from "../util/canonical.js";
import type { GrantRecord, ToolScopeEntry } from "./grants.js";

/**
 * What a human decision's signature covers (docs/security.md, "Signed decisions"): the
 * sha256 of the RFC 8785 canonical JSON of these fields. Any change to one of them in the
 * store (an epoch, a tool, a run edited by SQL) makes the signature fail.
 */
export interface DecisionStatement {
  v: "portcullis-decision/1";
  request: string | null;
  decision: "approve" | "deny";
  /** the grant's mode for an approval (session | per-call); the request's mode for a denial */
  mode: "session" | "per-call";
  agentRun: string;
  serverLabel: string;
  epoch: string;
  tools: ToolScopeEntry[];
  credentialScope: string[];
  /** the held call's argument digest, for per-call approvals (and denials of per-call requests) */
  argumentsDigest: string | null;
  /** a denial's reason (null when none was given, and for approvals) */
  reason: string | null;
  /** the grant an approval created (null for a denial) */
  grant: string | null;
  /** when the grant was issued, or the denial made */
  issuedAt: string;
  /**
   * An approval's: the digest of the review the human was shown (reviewDigest). The gateway that
   * wrote the review honours the grant only when it names that review, so a review rewritten in
   * the store shows the human one call while the signature approves nothing. Absent from
   * denials, and from grants signed before it existed (the key is then left out, not null, so
   * their digest is unchanged).
   */
  review?: string;
}

export function decisionDigest(s: DecisionStatement): string {
  return sha256Tag(canonicalJson(s));
}

/** The digest of a review as it is stored and shown: RFC 8785 canonical JSON, SHA-256. */
export function reviewDigest(review: unknown): string {
  return sha256Tag(canonicalJson(review));
}

/** The statement a grant row stands for (its signature must cover exactly this). */
export function grantStatement(
  g: Pick<
    GrantRecord,
    | "grant"
    | "request"
    | "mode"
    | "agentRun"
    | "serverLabel"
    | "executionEpoch"
    | "toolScope"
    | "credentialScope"
    | "issuedAt"
    | "argumentsDigest"
    | "reviewDigest"
  >,
): DecisionStatement {
  const s: DecisionStatement = {
    v: "portcullis-decision/1",
    request: g.request,
    decision: "approve",
    mode: g.mode,
    agentRun: g.agentRun,
    serverLabel: g.serverLabel,
    epoch: g.executionEpoch,
    tools: g.toolScope,
    credentialScope: g.credentialScope,
    argumentsDigest: g.mode === "per-call" ? g.argumentsDigest : null,
    reason: null,
    grant: g.grant,
    issuedAt: g.issuedAt,
  };
  if (g.reviewDigest !== null) s.review = g.reviewDigest;
  return s;
}

/** What a denial covers: the fields of a request row (requests.ts's ApprovalRequest has them all). */
export interface DeniedRequest {
  request: string;
  mode: "session" | "per-call";
  agentRun: string;
  serverLabel: string;
  executionEpoch: string;
  tool: string;
  fingerprint: string;
  credentialScope: string[];
  argumentsDigest: string | null;
  reason: string | null;
  decidedAt: string | null;
}

/** The statement a denied request row stands for. */
export function denialStatement(r: DeniedRequest): DecisionStatement {
  return {
    v: "portcullis-decision/1",
    request: r.request,
    decision: "deny",
    mode: r.mode,
    agentRun: r.agentRun,
    serverLabel: r.serverLabel,
    epoch: r.executionEpoch,
    tools: [{ name: r.tool, fingerprint: r.fingerprint }],
    credentialScope: r.credentialScope,
    argumentsDigest: r.mode === "per-call" ? r.argumentsDigest : null,
    reason: r.reason,
    grant: null,
    issuedAt: r.decidedAt ?? "",
  };
}
