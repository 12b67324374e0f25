import { displayValue, safeText } from "../catalog/text.js";
import {
  isSecretName,
  REDACTED,
  redactRecord,
  redactStrings,
  redactText,
  redactValue,
} from "../util/redact.js";
import { displayCommand } from "./chain.js";
import type { ActiveGrant } from "./grants.js";
import type { ApprovalRequest, Review } from "./requests.js";

/**
 * A request as it may be printed (`approvals --json`): its arguments and execution record
 * redacted, then every string, whatever reached the store before redaction was applied there.
 */
export function publicRequest<T extends ApprovalRequest>(req: T): T {
  const r = req.review;
  const rec = r.epoch.record as { launchCommand?: unknown } | null;
  const review: Review = {
    ...r,
    epoch: {
      ...r.epoch,
      record:
        rec && Array.isArray(rec.launchCommand)
          ? (redactRecord(rec as { launchCommand: string[] }) as Review["epoch"]["record"])
          : r.epoch.record,
    },
    arguments: r.arguments.map((a) =>
      isSecretName(a.name)
        ? { ...a, value: a.value === null ? null : REDACTED }
        : { ...a, value: redactValue(a.value) },
    ),
  };
  return redactStrings({ ...req, review }) as T;
}

/**
 * The review a human reads before deciding, as text. Everything in it is stored
 * with the request; text that came from a process or a server is made
 * terminal-safe here again (a description cannot drive the terminal it is shown on).
 */
export function renderReview(given: ApprovalRequest & { waiting?: boolean }): string {
  const req = publicRequest(given);
  const r: Review = req.review;
  const lines: string[] = [];
  const t = (s: string) => safeText(s);
  lines.push(
    `approval request ${req.request}  (${req.state}${req.waiting === false ? ", nobody is waiting for it any more" : ""})`,
  );
  lines.push(`  asked      ${r.createdAt}, expires ${r.expiresAt}`);
  lines.push(`  server     ${t(r.serverLabel)}`);
  lines.push(
    `  tool       ${t(r.tool.name)}  mode ${r.tool.mode === "per-call" ? "per-call (this call only)" : "session (this run and epoch)"}`,
  );
  lines.push(`  credentials ${r.credentialScope.length ? r.credentialScope.map(t).join(", ") : "(none)"}`);
  if (r.newDestinations?.length)
    lines.push(
      `  NEW egress  ${r.newDestinations.map(t).join(", ")} (never contacted under the last approved epoch)`,
    );
  lines.push("");
  lines.push(`agent run ${r.agentRun.run}, started ${r.agentRun.startedAt}`);
  lines.push(
    `  process chain (the agent that launched the gateway, then its ancestors) ${r.agentRun.chainDigest}`,
  );
  for (const e of r.agentRun.chain) {
    lines.push(
      `    pid ${e.pid}${e.startedAt ? ` since ${e.startedAt}` : ""}  ${e.executable ? t(e.executable) : "(executable unknown)"}`,
    );
    if (e.sha256) lines.push(`      ${e.sha256}`);
    if (e.signingAuthority?.length) lines.push(`      signed: ${e.signingAuthority.map(t).join(" ← ")}`);
    if (e.command) lines.push(`      $ ${t(e.command)}`);
    if (e.note) lines.push(`      (${t(e.note)})`);
  }
  lines.push("");
  lines.push(`execution epoch ${r.epoch.current}`);
  lines.push(`  ${t(r.epoch.summary)}`);
  const rec = r.epoch.record as Record<string, unknown> | null;
  if (rec) {
    const cmd = Array.isArray(rec.launchCommand) ? t(displayCommand(rec.launchCommand.map(String))) : "";
    if (cmd) lines.push(`  command    ${cmd}`);
    const exe = rec.executable as { path?: string; sha256?: string } | null;
    if (exe?.path)
      lines.push(`  executable ${t(exe.path)}  sha256:${String(exe.sha256 ?? "").slice(0, 16)}…`);
    const entry = rec.entry as { path?: string; sha256?: string } | null;
    if (entry?.path)
      lines.push(`  entry      ${t(entry.path)}  sha256:${String(entry.sha256 ?? "").slice(0, 16)}…`);
    if (typeof rec.identityDigest === "string") lines.push(`  identity   ${t(rec.identityDigest)}`);
    if (typeof rec.processId === "number")
      lines.push(`  server pid ${rec.processId}, started ${String(rec.startedAt ?? "?")}`);
  }
  lines.push("");
  lines.push(
    `catalog revision ${r.catalog.revision}` +
      (r.catalog.lastApprovedRevision !== null ? ` (last approved: ${r.catalog.lastApprovedRevision})` : "") +
      (r.catalog.classification ? `  ${r.catalog.classification.toUpperCase()}` : ""),
  );
  for (const l of r.catalog.rendered.split("\n")) lines.push(`  ${l}`);
  lines.push("");
  lines.push("the tool as listed now:");
  for (const l of r.tool.rendered.split("\n")) lines.push(`  ${l}`);
  lines.push(`  ${r.tool.fingerprint}`);
  const since = r.tool.sinceLastGrant;
  if (since) {
    lines.push(`  since the last grant of this tool (${since.grant}): ${since.classification}`);
    // The catalog diff above already shows the change when this grant was given at its base revision.
    const shownAbove = since.revision === r.catalog.lastApprovedRevision && r.catalog.classification !== null;
    if (since.classification !== "unchanged" && !shownAbove) {
      for (const l of since.rendered.split("\n")) lines.push(`    ${l}`);
    }
  }
  lines.push("");
  lines.push("arguments (schema defaults applied):");
  if (r.arguments.length === 0) lines.push("  (none)");
  for (const a of r.arguments) {
    lines.push(
      `  ${t(a.name)} = ${a.value === null && a.note ? "(hidden)" : displayValue(a.value, 400)}${a.note ? `   ← ${t(a.note)}` : ""}`,
    );
  }
  return redactText(lines.join("\n"));
}

/** One grant, on a few lines. */
export function renderGrant(g: ActiveGrant): string {
  const tools = g.toolScope.map((s) => `${safeText(s.name)} (${s.fingerprint.slice(0, 19)}…)`).join(", ");
  return [
    `grant ${g.grant}  ${g.mode}  until ${g.expiresWhen}${g.runAlive ? "" : "  (its gateway is gone: unusable)"}`,
    `  run ${g.agentRun}  server ${safeText(g.serverLabel)}  epoch ${g.executionEpoch}  catalog revision ${g.catalogRevision}`,
    `  tools ${tools}`,
    `  credentials ${g.credentialScope.length ? g.credentialScope.map(safeText).join(", ") : "(none)"}`,
    `  issued ${g.issuedAt} by ${safeText(g.approvedBy)}`,
  ].join("\n");
}
