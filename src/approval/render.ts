import { renderDiff, shownDiff } from "../catalog/index.js";
import {
  displayJson,
  displayName,
  displayValue,
  isPlainAscii,
  jsonText,
  mixedScriptNote,
  mixedScriptText,
  NOT_ASCII_NOTE,
  safeText,
} from "../catalog/text.js";
import type { CatalogDiff } from "../catalog/types.js";
import { epochBegan } from "../gateway/registry.js";
import { writtenServerInfo } from "../identity/index.js";
import { cutText } from "../util/cut.js";
import {
  isSecretName,
  REDACTED,
  redactRecord,
  redactSchemaDefaults,
  redactStrings,
  redactText,
  redactValueUnder,
} from "../util/redact.js";
import { listedCallWaitText } from "./callWaitText.js";
import { type ChainEntry, displayCommand } from "./chain.js";
import type { ActiveGrant } from "./grants.js";
import { argumentsPartlyHidden } from "./hiddenArguments.js";
import type { ApprovalRequest, PendingRequest, Review } from "./requests.js";
import { notHonoured } from "./shownDecisions.js";
import { toolParts } from "./toolParts.js";

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
        : { ...a, value: redactValueUnder(a.name, a.value) },
    ),
  };
  // the tool's definition as the server listed it (its fingerprint is over that), but shown with
  // a default, const or examples under a secret-like property name redacted, as the review's
  // inputs show them
  const definition = redactSchemaDefaults(req.definition) as T["definition"];
  const out = redactStrings({ ...req, definition, review }) as T;
  // The catalog diffs of a review that keeps them are shown from the diff, piece by piece, not as
  // text redacted whole (which read `passwordLength: property added` as a credential pair).
  // A stored diff of another shape is ignored here too: not carried, its strings only redacted
  // as text (a value under a secret-like key would show), beside the text the review falls back to.
  const catalog = shownCatalog(r.catalog);
  if (catalog) out.review.catalog = catalog;
  else if (out.review.catalog) out.review.catalog = withoutDiff(out.review.catalog);
  const since = r.tool.sinceLastGrant;
  const sinceShown = since ? shownSince(since) : null;
  if (out.review.tool.sinceLastGrant)
    out.review.tool.sinceLastGrant = sinceShown ?? withoutDiff(out.review.tool.sinceLastGrant);
  return out;
}

/** `v` without its `diff` member (one that is not a catalog diff's shape). */
function withoutDiff<T extends object>(v: T): T {
  if (!Object.hasOwn(v, "diff")) return v;
  const { diff: _ignored, ...rest } = v as T & { diff?: unknown };
  return rest as T;
}

const CLASSES = new Set(["expands", "narrows", "cosmetic"]);
const KINDS = new Set(["added", "removed", "modified"]);
const strings = (v: unknown) =>
  v === undefined || (Array.isArray(v) && v.every((x) => typeof x === "string"));

/**
 * A stored diff as it may be rendered, or null. The review is written by the gateway, but the
 * store can be rewritten by any process of the user: a diff of another shape is not rendered (its
 * text is then redacted whole, as an older review's), and every piece is redacted alone again
 * (shownDiff; the words portcullis itself put in it, classifications, kinds and notes, are checked
 * or redacted too), so no rewriting makes the review show a secret the text pass would have hidden.
 */
function storedDiff(v: unknown): CatalogDiff | null {
  const d = v as CatalogDiff | null;
  if (typeof d !== "object" || d === null || !Array.isArray(d.entries) || !Array.isArray(d.renameCandidates))
    return null;
  if (typeof d.expands !== "boolean") return null;
  for (const e of d.entries) {
    if (typeof e !== "object" || e === null || !KINDS.has(e.kind) || !CLASSES.has(e.classification))
      return null;
    if (typeof e.tool !== "string" || !Array.isArray(e.changes)) return null;
    if (e.renameCandidate !== undefined && typeof e.renameCandidate !== "string") return null;
    for (const c of e.changes) {
      if (typeof c !== "object" || c === null || typeof c.path !== "string" || typeof c.change !== "string")
        return null;
      if (!CLASSES.has(c.classification) || !strings(c.sensitive) || !strings(c.newEffects)) return null;
      if (c.detail !== undefined && typeof c.detail !== "string") return null;
    }
  }
  for (const r of d.renameCandidates) {
    if (typeof r !== "object" || r === null) return null;
    if (typeof r.from !== "string" || typeof r.to !== "string" || typeof r.similarity !== "string")
      return null;
  }
  const shown = shownDiff(d);
  for (const e of shown.entries)
    e.changes = e.changes.map((c) => ({
      ...c,
      ...(c.sensitive ? { sensitive: c.sensitive.map((x) => redactText(x)) } : {}),
      ...(c.newEffects ? { newEffects: c.newEffects.map((x) => redactText(x)) } : {}),
    }));
  return shown;
}

/** The review's catalog part rendered from its diff, or null (an older review: no diff kept). */
function shownCatalog(c: Review["catalog"]): Review["catalog"] | null {
  if (!Object.hasOwn(c, "diff")) return null;
  const diff = storedDiff(c.diff);
  const from = c.lastApprovedRevision;
  if (!diff || typeof c.revision !== "number" || (from !== null && typeof from !== "number")) return null;
  return {
    ...c,
    rendered: renderDiff(diff, {
      ...(from === null ? {} : { fromRevision: from }),
      toRevision: c.revision,
    }).trimEnd(),
    diff,
  };
}

type Since = NonNullable<Review["tool"]["sinceLastGrant"]>;

/** As shownCatalog, for the tool's change since its last grant. */
function shownSince(s: Since): Since | null {
  if (!Object.hasOwn(s, "diff")) return null;
  const diff = storedDiff(s.diff);
  return diff ? { ...(redactStrings(s) as Since), rendered: renderDiff(diff).trimEnd(), diff } : null;
}

/**
 * A review's lines, each either text still to redact, or a line already redacted piece by piece
 * (a catalog diff rendered from its diff: `Shown`). Runs of text are redacted as one text each,
 * as the whole review was before (a PEM key spans lines).
 */
class Shown {
  constructor(readonly line: string) {}
}
type ReviewLine = string | Shown;

function redactedLines(lines: ReviewLine[]): string {
  const out: string[] = [];
  let run: string[] = [];
  const flush = () => {
    if (run.length > 0) out.push(redactText(run.join("\n")));
    run = [];
  };
  for (const l of lines) {
    if (l instanceof Shown) {
      flush();
      out.push(l.line);
    } else run.push(l);
  }
  flush();
  return out.join("\n");
}

/** The lines of `text`, shown as they are when `piecewise` (rendered from a diff), else as text. */
function diffLines(text: string, piecewise: boolean, indent: string): ReviewLine[] {
  return text
    .split("\n")
    .map((l) => (piecewise ? new Shown(`${indent}${safeText(l)}`) : `${indent}${safeText(l)}`));
}

/**
 * Whether an argument's value was left out of the review (reviewArguments keeps no value, null,
 * of an argument named like a secret). A null with any other note is the value itself: a schema
 * default of null was shown as "(hidden)", as if the human were not allowed to see it. Such an
 * argument is shown as `NAME (hidden)`, without "=": the review's last pass of redactText reads
 * `NAME = X` after a secret's name as a credential and wrote "[redacted]" over "(hidden)" (and
 * over the note, then "secret: value not stored"), garbling what the human reads.
 */
export function hidden(a: Review["arguments"][number]): boolean {
  return a.value === null && isSecretName(a.name);
}

/** What `approvals` knows of a pending request beside its row: its gateway alive, a call waiting on it. */
type ListedCalls = { waiting?: boolean } & Partial<
  Pick<PendingRequest, "callWaiting" | "callWaitingSince" | "callLeft">
>;

/** The line saying whether a call waits on a listed request (callWaitText); none when not listed. */
function callLine(req: ApprovalRequest & ListedCalls): string[] {
  const text = listedCallWaitText(req);
  return text === null ? [] : [`  call       ${text}`];
}

/**
 * The review a human reads before deciding, as text. Everything in it is stored
 * with the request; text that came from a process or a server is made
 * terminal-safe here again (a description cannot drive the terminal it is shown on).
 */
export function renderReview(
  given: ApprovalRequest & ListedCalls,
  options: { wholeArguments?: boolean } = {},
): string {
  const req = publicRequest(given);
  const valueChars = options.wholeArguments ? Number.POSITIVE_INFINITY : REVIEW_VALUE_CHARS;
  const r: Review = req.review;
  const lines: ReviewLine[] = [];
  const t = (s: string) => safeText(s);
  lines.push(
    `approval request ${req.request}  (${req.state}${req.waiting === false ? ", nobody is waiting for it any more" : ""})`,
  );
  lines.push(`  asked      ${r.createdAt}, expires ${r.expiresAt}`);
  lines.push(...callLine(given));
  lines.push(`  server     ${t(r.serverLabel)}`);
  lines.push(
    `  tool       ${displayName(r.tool.name)}  mode ${r.tool.mode === "per-call" ? "per-call (this call only)" : "session (this run and epoch)"}`,
  );
  lines.push(...lookAlikeWarning(r.tool.name));
  lines.push(`  credentials ${r.credentialScope.length ? r.credentialScope.map(t).join(", ") : "(none)"}`);
  if (r.scopeNote) lines.push(`              ${t(r.scopeNote)}`);
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
    const remote = rec.remote as
      | { url?: string; certificateChainSha256?: string | null; serverInfo?: unknown }
      | undefined;
    if (remote) {
      lines.push(`  remote     ${t(String(remote.url ?? ""))}`);
      lines.push(`  tls chain  ${t(String(remote.certificateChainSha256 ?? "none (plain http)"))}`);
      lines.push(
        `  serverInfo ${displayJson(writtenServerInfo(remote) ?? "null", 300)} (the server's own words)`,
      );
    } else if (typeof rec.processId === "number")
      // a replaced epoch began when the code under the process was replaced, not when the
      // process (a watcher) started; a review stored without the reason reads as before
      lines.push(
        `  ${epochBegan(r.epoch.reason ?? null, { processId: rec.processId, startedAt: String(rec.startedAt ?? "?") })}`,
      );
  }
  lines.push("");
  lines.push(
    `catalog revision ${r.catalog.revision}` +
      (r.catalog.lastApprovedRevision !== null ? ` (last approved: ${r.catalog.lastApprovedRevision})` : "") +
      (r.catalog.classification ? `  ${r.catalog.classification.toUpperCase()}` : ""),
  );
  lines.push(...diffLines(r.catalog.rendered, r.catalog.diff !== undefined, "  "));
  lines.push("");
  lines.push("the tool as listed now:");
  lines.push(...toolLinesOf(r, t));
  lines.push(`  ${r.tool.fingerprint}`);
  const since = r.tool.sinceLastGrant;
  if (since) {
    lines.push(`  since the last grant of this tool (${since.grant}): ${since.classification}`);
    // The catalog diff above already shows the change when this grant was given at its base revision.
    const shownAbove = since.revision === r.catalog.lastApprovedRevision && r.catalog.classification !== null;
    if (since.classification !== "unchanged" && !shownAbove) {
      lines.push(...diffLines(since.rendered, since.diff !== undefined, "    "));
    }
  }
  lines.push("");
  lines.push("arguments (schema defaults applied):");
  if (r.arguments.length === 0) lines.push("  (none)");
  for (const a of r.arguments) {
    lines.push(
      `  ${displayName(a.name)}${hidden(a) ? " (hidden)" : ` = ${displayValue(a.value, valueChars)}`}${a.note ? `   ← ${t(a.note)}` : ""}`,
    );
    lines.push(...mixedScriptWarning(a, "    "));
  }
  lines.push(...partlyHiddenWarning(r, "  "));
  return redactedLines(lines);
}

/**
 * The line under the arguments when the review hid part of one as a secret: a one-call approval
 * of it is refused (hiddenArguments.ts), said here so the human knows before choosing.
 */
function partlyHiddenWarning(r: Review, indent: string): string[] {
  const names = argumentsPartlyHidden(r);
  return names.length === 0
    ? []
    : [
        `${indent}! part of ${names.join(", ")} is hidden as a secret ([redacted]): not approvable for this call, deny it`,
      ];
}

/** The line under an argument whose value mixes Latin letters with look-alikes (mixedScriptText). */
function mixedScriptWarning(a: Review["arguments"][number], indent: string): string[] {
  if (hidden(a)) return [];
  const mixed = mixedScriptText(a.value);
  return mixed === null ? [] : [`${indent}! ${safeText(mixedScriptNote(mixed))}`];
}

/**
 * The line under the tool line of a review when the name is not printable ASCII: escapes and
 * quotes make it distinct, but a human who knows a tool by name reads "deploy" in
 * "deploy\u00ad" or in a Cyrillic "deplоy", so the review says the name needs a second look.
 */
function lookAlikeWarning(name: string): string[] {
  return isPlainAscii(name) ? [] : [`             ! ${NOT_ASCII_NOTE}`];
}

/**
 * A grant of an epoch its server no longer runs: listed until the run's next call ends it (step 2
 * ends stale grants lazily), but covering nothing of the new code, which the human reading the
 * list must not take for approved.
 */
function epochMovedOn(g: ActiveGrant): string[] {
  if (g.serverEpoch === null || g.serverEpoch === g.executionEpoch) return [];
  return [
    `  ! the server now runs epoch ${safeText(g.serverEpoch)}: this grant covers none of its calls, and ends at the run's next call that needs an approval`,
  ];
}

/** One grant, on a few lines. */
export function renderGrant(g: ActiveGrant, notHonouredBecause: string | null = null): string {
  const tools = g.toolScope.map((s) => `${displayName(s.name)} (${s.fingerprint.slice(0, 19)}…)`).join(", ");
  return [
    `grant ${g.grant}  ${g.mode}  until ${g.expiresWhen}${g.runAlive ? "" : "  (its gateway is gone: unusable)"}`,
    ...(notHonouredBecause !== null ? [`  ${notHonoured(notHonouredBecause)}`] : []),
    ...epochMovedOn(g),
    `  run ${g.agentRun}  server ${safeText(g.serverLabel)}  epoch ${g.executionEpoch}  catalog revision ${g.catalogRevision}`,
    `  tools ${tools}`,
    `  credentials ${g.credentialScope.length ? g.credentialScope.map(safeText).join(", ") : "(none)"}`,
    `  issued ${g.issuedAt} by ${safeText(g.approvedBy)}`,
  ].join("\n");
}

/** Launchers that only pass a command on: the agent host is the first process above them. */
const PASS_THROUGH = new Set([
  "sh",
  "bash",
  "dash",
  "zsh",
  "fish",
  "env",
  "npx",
  "npm",
  "pnpm",
  "yarn",
  "bunx",
  "uvx",
  "timeout",
  "nohup",
  "sudo",
  "script",
  "portcullis",
]);

function baseName(path: string | null): string {
  if (!path) return "(unknown)";
  return path.slice(path.lastIndexOf("/") + 1);
}

function oneProcess(e: ChainEntry): string {
  const cmd = e.command
    ? `  ${safeText(e.command.length > 60 ? `${cutText(e.command, 59)}…` : e.command)}`
    : "";
  return `${safeText(baseName(e.executable))} (pid ${e.pid})${cmd}`;
}

/**
 * Who asks, in one or two lines: the agent host and the process that launched the gateway (the
 * same process when the host launched it itself). The full chain is in the verbose review.
 */
export function whoAsks(chain: ChainEntry[]): string[] {
  const launcher = chain[0];
  if (!launcher) return ["(the process chain could not be read)"];
  const host = chain.find((e) => !PASS_THROUGH.has(baseName(e.executable).replace(/\.(exe|cmd)$/i, "")));
  if (!host || host === launcher) return [oneProcess(launcher)];
  return [`${oneProcess(host)}`, `via ${oneProcess(launcher)}`];
}

/** How long until `iso`, for people ("in 9 min", "in 40 s", "past"). */
function until(iso: string, now = Date.now()): string {
  const ms = Date.parse(iso) - now;
  if (!(ms > 0)) return "past";
  return ms >= 60_000 ? `in ${Math.ceil(ms / 60_000)} min` : `in ${Math.ceil(ms / 1000)} s`;
}

/** At most `max` lines of `text`, with a note of how many more there are. */
function capped(text: string, max: number, indent: string): string[] {
  const lines = text.split("\n").filter((l) => l.trim() !== "");
  const shown = lines.slice(0, max).map((l) => `${indent}${l.trim()}`);
  if (lines.length > max) shown.push(`${indent}… ${lines.length - max} more line(s): --verbose`);
  return shown;
}

/**
 * The tool as listed now, for the full review: each piece of the server's words says whose it is,
 * its description's every line marked `│` (a line of it cannot pass for one of the review's own,
 * an arguments block included), the review's inputs line and the inputs, as the schema gives them,
 * under it. A rendering of another shape (toolParts) is marked whole.
 */
function toolLinesOf(r: Review, t: (s: string) => string): string[] {
  const parts = toolParts(r.tool.rendered, r.tool.name);
  if (r.tool.gatewayWords === true && parts) {
    // no tool: an MCP request the gateway guards, described in its own words (guard.ts, readCall)
    const out = [`  ${displayName(r.tool.name)}${parts.title !== null ? ` (${t(parts.title)})` : ""}`];
    for (const l of parts.description) out.push(`    ${t(l)}`);
    return out;
  }
  if (!parts) {
    return [
      "    the server says, as the tool as listed:",
      ...r.tool.rendered.split("\n").map((l) => `    │${l === "" ? "" : ` ${t(l)}`}`),
    ];
  }
  const out = [`  ${displayName(r.tool.name)}`];
  if (parts.title !== null) out.push(`    the server says, as its title: ${t(parts.title)}`);
  if (parts.description.length > 0) {
    out.push("    the server says, as its description:");
    for (const l of parts.description) out.push(`    │${l === "" ? "" : ` ${t(l)}`}`);
  }
  out.push(`    ${parts.inputsLine}${parts.inputsValue !== null ? ` ${t(parts.inputsValue)}` : ""}`);
  for (const l of parts.inputs) out.push(`      ${t(l)}`);
  if (parts.hints !== null) out.push(`    hints from the server (shown, never trusted): ${t(parts.hints)}`);
  return out;
}

/**
 * The review on one screen (about 20 lines for an ordinary request): who asks (host and
 * launcher), what changed (the execution record since the last approved epoch, the catalog diff
 * and its classification), the tool with its inputs, the arguments (redacted) and the credential
 * scopes. `renderReview` is the full version (`--verbose`), with the whole process chain.
 */
export function renderReviewCard(given: ApprovalRequest & ListedCalls): string {
  const req = publicRequest(given);
  const r: Review = req.review;
  const t = (s: string) => safeText(s);
  const lines: ReviewLine[] = [];
  const nobody = req.waiting === false ? ", nobody is waiting for it any more" : "";
  lines.push(`approval request ${req.request}  ${req.state}, expires ${until(r.expiresAt)}${nobody}`);
  lines.push(...callLine(given));
  const who = whoAsks(r.agentRun.chain);
  lines.push(`  who        ${who[0]}`);
  for (const l of who.slice(1)) lines.push(`             ${l}`);
  lines.push(
    `  tool       ${displayName(r.tool.name)} on ${t(r.serverLabel)}  (${r.tool.mode === "per-call" ? "per-call: this call only" : "session: this run and epoch"})`,
  );
  lines.push(...lookAlikeWarning(r.tool.name));
  // The tool as listed now: the first line of its description, said to be the server's, and its
  // inputs, with defaults and enums. Its parts are told apart from the end (toolParts): a
  // description line reading "inputs:" once stood for the inputs heading here, and the lines
  // after it, the server's, for the inputs.
  const parts = toolParts(r.tool.rendered, r.tool.name);
  if (!parts) {
    lines.push("             the server says, as the tool as listed:");
    lines.push(...capped(r.tool.rendered.split("\n").map(t).join("\n"), 3, "               "));
  } else if (r.tool.gatewayWords === true) {
    // no tool: the gateway's own description of the MCP request it guards (guard.ts, readCall)
    lines.push(...capped(parts.description.map(t).join("\n"), 3, "             "));
  } else {
    const said = parts.description.map(t).filter((l) => l.trim() !== "");
    if (said.length > 0) {
      const first = said[0]!.trim();
      lines.push(`             the server says: ${first.length > 93 ? `${cutText(first, 92)}…` : first}`);
      if (said.length > 1) lines.push(`               … ${said.length - 1} more line(s) of it: --verbose`);
    }
    lines.push(
      `             ${parts.inputsLine}${parts.inputsValue !== null ? ` ${t(parts.inputsValue)}` : ""}`,
    );
    lines.push(...capped(parts.inputs.map(t).join("\n"), 5, "               "));
  }
  lines.push(`  epoch      ${r.epoch.current}`);
  lines.push(`             ${t(r.epoch.summary)}`);
  // A remote server is known only by what it shows over the wire: say which one this is.
  const remote = (
    r.epoch.record as {
      remote?: { url?: string; certificateChainSha256?: string | null; serverInfo?: unknown };
    } | null
  )?.remote;
  if (remote) {
    lines.push(`  remote     ${t(String(remote.url ?? ""))}`);
    lines.push(`  tls chain  ${t(String(remote.certificateChainSha256 ?? "none (plain http)"))}`);
    lines.push(
      `  serverInfo ${displayJson(writtenServerInfo(remote) ?? "null", 300)} (the server's own words)`,
    );
  }
  const catalogHead =
    `  catalog    revision ${r.catalog.revision}` +
    (r.catalog.lastApprovedRevision !== null ? ` (last approved ${r.catalog.lastApprovedRevision})` : "") +
    (r.catalog.classification ? `: ${r.catalog.classification.toUpperCase()}` : "");
  lines.push(catalogHead);
  if (r.catalog.classification) {
    const shown = capped(r.catalog.rendered.split("\n").map(t).join("\n"), 4, "             ");
    lines.push(...(r.catalog.diff !== undefined ? shown.map((l) => new Shown(l)) : shown));
  }
  const since = r.tool.sinceLastGrant;
  if (since && since.classification !== "unchanged") {
    lines.push(`             this tool since its last grant: ${t(since.classification)}`);
  }
  lines.push(`  credentials ${r.credentialScope.length ? r.credentialScope.map(t).join(", ") : "(none)"}`);
  if (r.scopeNote) lines.push(`              ${t(r.scopeNote)}`);
  if (r.newDestinations?.length)
    lines.push(
      `  NEW egress  ${r.newDestinations.map(t).join(", ")} (never contacted under the last approved epoch)`,
    );
  if (r.arguments.length === 0) lines.push("  arguments  (none)");
  r.arguments.slice(0, CARD_ARGUMENTS).forEach((a, i) => {
    const value = hidden(a) ? " (hidden)" : ` = ${displayValue(a.value, CARD_VALUE_CHARS)}`;
    lines.push(
      `  ${i === 0 ? "arguments  " : "           "}${displayName(a.name)}${value}${a.note ? `   ← ${t(a.note)}` : ""}`,
    );
    lines.push(...mixedScriptWarning(a, "             "));
  });
  if (r.arguments.length > CARD_ARGUMENTS)
    lines.push(`             … ${r.arguments.length - CARD_ARGUMENTS} more: --verbose`);
  lines.push(...partlyHiddenWarning(r, "             "));
  return redactedLines(lines);
}

/** How many arguments the review card lists, and how many characters of each value it shows. */
const CARD_ARGUMENTS = 6;
const CARD_VALUE_CHARS = 120;
/** How much of each value the full review shows, unless asked for whole arguments. */
const REVIEW_VALUE_CHARS = 400;

/**
 * The arguments of a request that a review printed as `shown` did not show whole: each one
 * whose value was cut (name, characters shown of how many), and those the card did not list at
 * all. Empty when every value a review can show was shown whole. A one-call approval signs the
 * digest of exactly these arguments, so the CLI refuses it over a review that cut any: an agent
 * pads the harmful part of a value (`ls /tmp`, 500 spaces, `; curl … | sh`), or puts it in a
 * seventh argument, past what the human reads. A value left out because its name reads like a
 * secret (hidden) is never stored, so no review shows it: not counted here.
 */
export function argumentsNotShownWhole(given: ApprovalRequest, shown: "card" | "review" | "whole"): string[] {
  if (shown === "whole") return [];
  const args = publicRequest(given).review.arguments;
  const listed = shown === "card" ? args.slice(0, CARD_ARGUMENTS) : args;
  const limit = shown === "card" ? CARD_VALUE_CHARS : REVIEW_VALUE_CHARS;
  const cut: string[] = [];
  for (const a of listed) {
    if (hidden(a)) continue;
    const whole = jsonText(a.value).length;
    if (whole > limit) cut.push(`${displayName(a.name)} (${limit} of ${whole} characters shown)`);
  }
  const unlisted = args.slice(listed.length).map((a) => displayName(a.name));
  if (unlisted.length > 0) cut.push(`${unlisted.join(", ")} (not listed)`);
  return cut;
}
