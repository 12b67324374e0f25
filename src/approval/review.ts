import { describeField } from "../catalog/fieldSummary.js";
import {
  type CatalogSnapshot,
  diffCatalogs,
  getRevision,
  renderDiff,
  shownDiff,
  storedSnapshot,
  type Tool,
} from "../catalog/index.js";
import { withRefOwners } from "../catalog/refOwners.js";
import { clip, displayName, displayValue, safeText } from "../catalog/text.js";
import { classOf } from "../catalog/types.js";
import type { ApprovedCall } from "../guard/guard.js";
import { changedParts, type ExecutionRecord } from "../identity/index.js";
import type { Store } from "../store/db.js";
import { sameJson } from "../util/canonical.js";
import { isSecretName, redactRecord, redactValueUnder } from "../util/redact.js";
import { destinationsOfEpoch } from "../vault/egress/record.js";
import type { GrantDbRow } from "./grants.js";
import { toGrantRecord } from "./grants.js";
import type { Review } from "./requests.js";
import type { Run } from "./runs.js";

export interface ReviewInput {
  request: string;
  createdAt: string;
  expiresAt: string;
  run: Run;
  serverLabel: string;
  call: ApprovedCall;
  mode: "session" | "per-call";
  credentialScope: string[];
  /** one line when the call may use every scope because nothing narrower was declared */
  scopeNote?: string | null;
  record: ExecutionRecord | null;
  /** why `record`'s epoch began (EpochReason); null or absent: read from the epochs row */
  reason?: string | null;
  revision: number;
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function own(o: unknown, k: string): unknown {
  return isObj(o) && Object.hasOwn(o, k) ? o[k] : undefined;
}

/** The most recent grant for a server label, any run (the last thing a human approved there). */
function lastGrantOfLabel(db: Store, serverLabel: string): GrantDbRow | undefined {
  return db
    .prepare("SELECT * FROM grants WHERE server_label = ? ORDER BY issued_at DESC, grant_id DESC LIMIT 1")
    .get(serverLabel) as GrantDbRow | undefined;
}

function recordOfEpoch(db: Store, epoch: string): ExecutionRecord | null {
  const r = db.prepare("SELECT record_json FROM epochs WHERE epoch = ?").get(epoch) as
    | { record_json: string }
    | undefined;
  if (!r) return null;
  try {
    return JSON.parse(r.record_json) as ExecutionRecord;
  } catch {
    return null;
  }
}

/** The record as the human sees it: the command line and every process's argv redacted. */
function recordSummary(given: ExecutionRecord | null): Record<string, unknown> | null {
  if (!given) return null;
  const r = redactRecord(given);
  return {
    epoch: r.epoch,
    launchCommand: r.launchCommand,
    executable: r.executable,
    runtime: r.runtime,
    entry: r.entry,
    wrappers: r.wrappers,
    lockfile: r.lockfile,
    dependencyTree: r.dependencyTree,
    workingDirectory: r.workingDirectory,
    identityDigest: r.identityDigest,
    processId: r.processId,
    startedAt: r.startedAt,
    // a server reached over HTTP: what it showed over the wire (URL, certificate chain, serverInfo)
    ...(r.remote ? { remote: r.remote } : {}),
  };
}

/** Why an epoch began, as its epochs row says (null: no row yet, its write being best effort). */
function reasonOfEpoch(db: Store, epoch: string): string | null {
  const r = db.prepare("SELECT reason FROM epochs WHERE epoch = ?").get(epoch) as
    | { reason: string }
    | undefined;
  return r?.reason ?? null;
}

function epochPart(db: Store, input: ReviewInput, last: GrantDbRow | undefined): Review["epoch"] {
  const current = input.call.epoch;
  const given = input.record?.epoch === current;
  const record = given ? input.record : recordOfEpoch(db, current);
  const reason = (given ? input.reason : null) ?? reasonOfEpoch(db, current);
  // the key only when known: a review without it reads as one stored before it existed
  const base = { current, record: recordSummary(record), ...(reason ? { reason } : {}) };
  if (!last) {
    return {
      ...base,
      lastApproved: null,
      changedParts: null,
      summary: "first approval for this server label",
    };
  }
  const lastApproved = last.execution_epoch;
  if (lastApproved === current) {
    return { ...base, lastApproved, changedParts: [], summary: "same execution epoch as the last approval" };
  }
  const before = recordOfEpoch(db, lastApproved);
  if (!before || !record) {
    return {
      ...base,
      lastApproved,
      changedParts: null,
      summary: `new execution epoch since the last approval (${lastApproved}); the execution records cannot be compared (one is not in the store)`,
    };
  }
  let parts: string[];
  try {
    parts = changedParts(before, record);
  } catch {
    parts = ["(the execution records could not be compared)"];
  }
  return {
    ...base,
    lastApproved,
    changedParts: parts,
    summary:
      parts.length === 0
        ? `new execution epoch since the last approval (${lastApproved}): ${sameAsShown(record)}`
        : `new execution epoch since the last approval (${lastApproved}): changed ${parts.join(", ")}`,
  };
}

/**
 * A new epoch whose record shows nothing changed. A launched server's record digests its code, so
 * that means the same code was started again; a remote server's shows only what it said over the
 * wire (URL, certificate chain, serverInfo), and a server redeployed behind the same URL says the
 * same: the person deciding is not told the code is the same when portcullis cannot know it.
 */
function sameAsShown(record: ExecutionRecord): string {
  return record.remote
    ? "a new session with the remote server; portcullis cannot tell whether its code changed"
    : "the same code was started again";
}

function catalogPart(db: Store, input: ReviewInput, last: GrantDbRow | undefined): Review["catalog"] {
  const revision = input.revision;
  if (!last) {
    return {
      revision,
      lastApprovedRevision: null,
      classification: null,
      rendered: `catalog revision ${revision}: first approval for this server label, no earlier approved catalog to compare`,
    };
  }
  const from = last.catalog_revision;
  if (from === revision) {
    return {
      revision,
      lastApprovedRevision: from,
      classification: null,
      rendered: `catalog revision ${revision}: unchanged since the last approval`,
    };
  }
  // The approved revision's full catalog when the store has it (with the names it withheld for
  // entries that could not be fingerprinted: storedSnapshot); else the definitions that were granted.
  const stored = (n: number) => {
    const r = getRevision(db, input.serverLabel, n);
    return r ? storedSnapshot(r) : null;
  };
  const before: Tool[] | CatalogSnapshot =
    stored(from) ??
    Object.values(toGrantRecord(last).toolDefinitions).filter(
      (d): d is Tool => isObj(d) && typeof d.name === "string",
    );
  const after: Tool[] | CatalogSnapshot =
    stored(revision) ?? (input.call.definition ? [input.call.definition as Tool] : []);
  const diff = diffCatalogs(before, after);
  // Kept redacted piece by piece (shownDiff), as `catalog diff` shows it, and shown from `diff`
  // (render.ts): redacting the rendered text whole read the diff's own words as secrets.
  const shown = shownDiff(diff);
  return {
    revision,
    lastApprovedRevision: from,
    classification: diff.expands ? "expands" : classOf(diff.entries),
    rendered: renderDiff(shown, { fromRevision: from, toRevision: revision }).trimEnd(),
    diff: shown,
  };
}

function sinceLastGrant(db: Store, input: ReviewInput): Review["tool"]["sinceLastGrant"] {
  const rows = db
    .prepare("SELECT * FROM grants WHERE server_label = ? ORDER BY issued_at DESC, grant_id DESC LIMIT 200")
    .all(input.serverLabel) as GrantDbRow[];
  for (const row of rows) {
    const g = toGrantRecord(row);
    const scope = g.toolScope.find((t) => t.name === input.call.tool);
    if (!scope) continue;
    if (scope.fingerprint === input.call.fingerprint) {
      return {
        grant: g.grant,
        revision: g.catalogRevision,
        fingerprint: scope.fingerprint,
        classification: "unchanged",
        rendered: `unchanged since grant ${g.grant} (epoch ${g.executionEpoch})`,
      };
    }
    const granted = Object.hasOwn(g.toolDefinitions, input.call.tool)
      ? g.toolDefinitions[input.call.tool]
      : null;
    if (!granted || !input.call.definition) {
      return {
        grant: g.grant,
        revision: g.catalogRevision,
        fingerprint: scope.fingerprint,
        classification: "expands",
        rendered: "changed since the last grant; the granted definition is not available to compare",
      };
    }
    const diff = diffCatalogs([granted as Tool], [input.call.definition as Tool]);
    const shown = shownDiff(diff); // as in catalogPart
    return {
      grant: g.grant,
      revision: g.catalogRevision,
      fingerprint: scope.fingerprint,
      classification: diff.expands || diff.entries.length === 0 ? "expands" : classOf(diff.entries),
      rendered: renderDiff(shown).trimEnd(),
      diff: shown,
    };
  }
  return null;
}

/** The tool as a human reads it; everything from the server goes through safeText. */
export function renderTool(def: Record<string, unknown> | null, name: string): string {
  if (!def) return `${displayName(name)} (not in the current catalog)`;
  const lines: string[] = [];
  const title = own(def, "title");
  lines.push(`${displayName(name)}${typeof title === "string" ? ` — ${safeText(clip(title, 200))}` : ""}`);
  const desc = own(def, "description");
  if (typeof desc === "string" && desc.trim() !== "") {
    const text = clip(desc, 1200);
    for (const l of text.split(/\r?\n/)) lines.push(`  ${safeText(l)}`);
  }
  const schema = own(def, "inputSchema");
  const props = own(schema, "properties");
  if (isObj(props)) {
    const req = own(schema, "required");
    const required = new Set(Array.isArray(req) ? req : []);
    const ap = own(schema, "additionalProperties");
    const others = ap === false ? "" : " (other properties accepted)";
    // a tool that takes no arguments (`"properties": {}`) was shown a heading with nothing under it
    if (Object.keys(props).length === 0) lines.push(`  inputs: none declared${others}`);
    else lines.push(`  inputs${others}:`);
    // (withRefOwners: a property that a secret-like one takes by `$ref` shows no default)
    withRefOwners([schema], () => {
      for (const n of Object.keys(props))
        lines.push(`    ${safeText(describeField(displayName(n), props[n], required.has(n), n))}`);
    });
  } else {
    lines.push(`  inputs: ${schema === undefined ? "(no input schema)" : displayValue(schema, 200)}`);
  }
  const ann = own(def, "annotations");
  if (isObj(ann) && Object.keys(ann).length > 0) {
    lines.push(`  hints from the server (shown, never trusted): ${displayValue(ann, 300)}`);
  }
  return lines.join("\n");
}

/**
 * Effective arguments with defaults made visible. Secrets are never kept (src/util/redact.ts):
 * a top-level argument named like a secret is shown by name only, and inside every other value
 * secret-named keys (at any depth) and credential-shaped strings are replaced. No digest of a
 * secret is kept either: a short hash of a weak password is a guessing oracle.
 */
export function reviewArguments(call: ApprovedCall): Review["arguments"] {
  const props = own(own(call.definition, "inputSchema"), "properties");
  const out: Review["arguments"] = [];
  for (const [name, value] of Object.entries(call.effective ?? {})) {
    const prop = own(props, name);
    if (isSecretName(name)) {
      out.push({ name, value: null, note: "named like a secret; value not stored" });
      continue;
    }
    // under its name: a random-looking default or value of `key` or `refresh` is one too
    const shown = redactValueUnder(name, value);
    const entry: Review["arguments"][number] = { name, value: shown };
    if (isObj(prop) && Object.hasOwn(prop, "default") && sameJson(prop.default, value)) {
      entry.note = "schema default (given or filled in)";
    } else if (!sameJson(shown, value)) {
      entry.note = "secrets inside redacted";
    }
    out.push(entry);
  }
  return out;
}

/** Everything the human must see, computed when the request is made (the CLI only renders it). */
export function buildReview(db: Store, input: ReviewInput): Review {
  const last = lastGrantOfLabel(db, input.serverLabel);
  return {
    request: input.request,
    createdAt: input.createdAt,
    expiresAt: input.expiresAt,
    agentRun: {
      run: input.run.run,
      startedAt: input.run.startedAt,
      chainDigest: input.run.chainDigest,
      chain: input.run.chain,
    },
    serverLabel: input.serverLabel,
    epoch: epochPart(db, input, last),
    catalog: catalogPart(db, input, last),
    tool: {
      name: input.call.tool,
      fingerprint: input.call.fingerprint,
      mode: input.mode,
      rendered: renderTool(input.call.definition, input.call.tool),
      // a guarded read's pseudo-tool: its description is the gateway's (guard.ts, readCall)
      ...(input.call.read ? { gatewayWords: true as const } : {}),
      sinceLastGrant: sinceLastGrant(db, input),
    },
    credentialScope: input.credentialScope,
    ...(input.scopeNote ? { scopeNote: input.scopeNote } : {}),
    ...newDestinations(db, input.call.epoch, last),
    arguments: reviewArguments(input.call),
  };
}

/** What the new code talks to that the approved code never did (from the egress record). */
function newDestinations(
  db: Store,
  current: string,
  last: GrantDbRow | undefined,
): Pick<Review, "newDestinations"> {
  if (last?.execution_epoch === current) return {};
  try {
    const before = last ? destinationsOfEpoch(db, last.execution_epoch) : new Set<string>();
    const now = [...destinationsOfEpoch(db, current)].filter((d) => !before.has(d)).sort();
    return now.length > 0 ? { newDestinations: now } : {};
  } catch {
    return {}; // a store without the egress table (older schema): nothing to show
  }
}
