/**
 * Human renderings of a catalog and of a catalog diff. Everything that came from the server is
 * passed through `safeText`/`displayName`/`displayValue`, so a tool description cannot drive the
 * terminal it is shown on.
 */
import { counted } from "../util/counted.js";
import { listedWith } from "./ambiguousDiff.js";
import { describeField } from "./fieldSummary.js";
import { withRefOwners } from "./refOwners.js";
import { isObj, own } from "./schemaPath.js";
import { clip, displayName, displayValue, firstOf, safeText } from "./text.js";
import type { CatalogDiff, CatalogSnapshot, DiffEntry, FieldChange, Tool } from "./types.js";

const KIND: Record<DiffEntry["kind"], string> = {
  added: "+ added   ",
  removed: "- removed ",
  modified: "~ modified",
};

/**
 * Longest path, change and detail text of a field line. Keys and keywords are the server's and
 * may be of any length; the schema summaries already shorten what they quote, this bounds the rest.
 */
const PATH_SHOWN = 200;

/** How many ambiguous names `catalog show` draws the definitions of, and how many definitions of each. */
const AMBIGUOUS_SHOWN = 20;
const DEFINITIONS_SHOWN = 5;
const DETAIL_SHOWN = 600;

function fieldLine(c: FieldChange): string[] {
  const redundant = c.path === "" || (c.change.startsWith(c.path) && !c.path.includes("."));
  const where = redundant ? "" : `${safeText(clip(c.path, PATH_SHOWN))}: `;
  let line = `      [${c.classification}] ${where}${safeText(clip(c.change, PATH_SHOWN))}`;
  if (c.sensitive && c.sensitive.length > 0) line += ` [sensitive: ${c.sensitive.join(", ")}]`;
  if (c.newEffects && c.newEffects.length > 0) line += ` [new effects: ${c.newEffects.join(", ")}]`;
  const lines = [line];
  if (c.detail) lines.push(`          ${safeText(clip(c.detail, DETAIL_SHOWN))}`);
  const textual = typeof c.before === "string" || typeof c.after === "string";
  const isHead = c.change === "tool added" || c.change === "tool removed";
  if (isHead) {
    const text = c.change === "tool added" ? c.after : c.before;
    if (text !== undefined) lines.push(`          description: ${displayValue(text, 400)}`);
  } else if (textual || c.detail === undefined) {
    if (c.before !== undefined) lines.push(`          before: ${displayValue(c.before, 400)}`);
    if (c.after !== undefined) lines.push(`          after:  ${displayValue(c.after, 400)}`);
  }
  return lines;
}

/**
 * One line per entry with its classification, indented field lines under it; defaults and
 * enums are made visible (`target: string, default "preview" (enum preview|production)`).
 */
export function renderDiff(
  d: CatalogDiff,
  opts: { fromRevision?: number; toRevision?: number } = {},
): string {
  const lines: string[] = [];
  const range =
    opts.fromRevision !== undefined || opts.toRevision !== undefined
      ? ` ${opts.fromRevision ?? "?"} → ${opts.toRevision ?? "?"}`
      : "";
  const count = (k: DiffEntry["kind"]) => d.entries.filter((e) => e.kind === k).length;
  if (d.entries.length === 0) {
    lines.push(`catalog revision${range}: no tool changed`);
    if (d.ambiguous && d.ambiguous.length > 0) {
      lines.push(
        `  still listed with different definitions (not served): ${firstOf(d.ambiguous, 20, displayName)}`,
      );
    }
    return `${lines.join("\n")}\n`;
  }
  lines.push(
    `catalog revision${range}: ${count("added")} added, ${count("removed")} removed, ${count("modified")} modified — ` +
      (d.expands
        ? "EXPANDS authority: grants for the expanded tools no longer apply"
        : "does not expand authority"),
  );
  for (const e of d.entries) {
    let head = `  ${KIND[e.kind]} ${displayName(e.tool)}  ${e.classification}`;
    if (e.renameCandidate !== undefined) {
      head +=
        e.kind === "added"
          ? `  (renamed? from ${displayName(e.renameCandidate)})`
          : `  (renamed? to ${displayName(e.renameCandidate)})`;
    }
    lines.push(head);
    for (const c of e.changes) lines.push(...fieldLine(c));
  }
  if (d.ambiguous && d.ambiguous.length > 0) {
    lines.push(
      `  listed with different definitions (not served, calls refused until the server lists each once): ${firstOf(d.ambiguous, 20, displayName)}`,
    );
  }
  if (d.renameCandidates.length > 0) {
    lines.push("  rename candidates (shown only; each stays a removed and an added tool):");
    for (const r of d.renameCandidates) {
      lines.push(`    renamed? ${displayName(r.from)} → ${displayName(r.to)}: ${safeText(r.similarity)}`);
    }
  }
  lines.push(
    "  annotations (readOnlyHint, destructiveHint, …) are the server's hints: shown, never trusted to decide.",
  );
  return `${lines.join("\n")}\n`;
}

function firstLine(s: unknown, max = 200): string {
  if (typeof s !== "string") return s === undefined ? "" : displayValue(s, max);
  const line = s.split(/\r?\n/)[0] ?? "";
  const cut = line.length > max ? `${line.slice(0, max)}…` : line;
  return safeText(cut) + (s.includes("\n") ? " …" : "");
}

function toolLines(t: Tool, fingerprint: string | undefined): string[] {
  const out: string[] = [];
  const hints: string[] = [];
  const ann = own(t, "annotations");
  if (isObj(ann)) {
    for (const k of ["readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"]) {
      const v = own(ann, k);
      if (v !== undefined) hints.push(`${k}=${displayValue(v, 20)}`);
    }
  }
  const desc = firstLine(own(t, "description"));
  out.push(`  ${displayName(t.name)}${desc ? ` — ${desc}` : ""}`);
  if (hints.length > 0) out.push(`      hints (not trusted): ${hints.join(", ")}`);
  const schema = own(t, "inputSchema");
  const props = own(schema, "properties");
  if (isObj(props)) {
    const req = own(schema, "required");
    const reqSet = new Set(Array.isArray(req) ? req : []);
    // (withRefOwners: a property that a secret-like one takes by `$ref` shows no default)
    withRefOwners([schema], () => {
      for (const n of Object.keys(props)) {
        out.push(`      ${safeText(describeField(displayName(n), props[n], reqSet.has(n), n))}`);
      }
    });
  } else if (schema === undefined) out.push("      (no input schema)");
  else if (!isObj(schema)) out.push(`      input schema (unrecognized): ${displayValue(schema, 80)}`);
  if (fingerprint) out.push(`      ${fingerprint}`);
  return out;
}

/** The catalog as a human reads it: coverage first, then each tool with its inputs and hints. */
export function renderCatalog(s: CatalogSnapshot, revision: number): string {
  const cov = s.coverage;
  const lines = [
    `catalog revision ${revision}  ${s.fingerprint}`,
    `  ${counted(s.tools.length, "tool")} from ${counted(cov.tools, "entry", "entries")} on ${counted(cov.pages, "page")}` +
      (cov.complete ? " (complete)" : " (INCOMPLETE: not every page was fetched)"),
  ];
  const copied = cov.duplicateNames.filter((n) => !s.ambiguous.has(n));
  if (copied.length > 0) {
    lines.push(
      `  listed more than once, the same definition each time (served once): ${firstOf(copied, 20, displayName)}`,
    );
  }
  const dropped = (name: string) => s.unfingerprintable?.get(name) ?? 0;
  const differing = [...s.ambiguous.keys()].filter((n) => dropped(n) === 0);
  if (differing.length > 0) {
    lines.push(
      `  listed more than once with different definitions (NOT served, calls refused until the server lists each once): ${firstOf(differing, 20, displayName)}`,
    );
  }
  const unreadable = [...s.ambiguous.keys()].filter((n) => dropped(n) > 0);
  if (unreadable.length > 0) {
    lines.push(
      `  listed also with a definition portcullis cannot fingerprint (NOT served, calls refused until the server lists each once with one it can): ${firstOf(unreadable, 20, displayName)}`,
    );
  }
  if (cov.invalid.length > 0) {
    lines.push(
      `  dropped entries: ${firstOf(cov.invalid, 20, (i) => `#${i.index} ${safeText(clip(i.reason, 200))}`, "; ")}`,
    );
  }
  for (const t of s.tools) lines.push(...toolLines(t, s.byName.get(t.name)?.fingerprint));
  // the definitions of the first ambiguous names, as a tool is shown, each marked not served
  let shown = 0;
  for (const [name, defs] of s.ambiguous) {
    if (shown++ === AMBIGUOUS_SHOWN) {
      lines.push(`  (and ${counted(s.ambiguous.size - AMBIGUOUS_SHOWN, "more ambiguous name")} not shown)`);
      break;
    }
    const unread = dropped(name);
    lines.push(
      unread === 0
        ? `  ${displayName(name)}: NOT SERVED, listed with ${defs.length} different definitions:`
        : `  ${displayName(name)}: NOT SERVED, ${listedWith((s.repeated.get(name)?.length ?? defs.length) + unread, defs.length, unread)}:`,
    );
    defs.slice(0, DEFINITIONS_SHOWN).forEach((d, i) => {
      lines.push(`    definition ${i + 1} of ${defs.length}${unread > 0 ? " portcullis fingerprints" : ""}:`);
      lines.push(...toolLines(d.tool, d.fingerprint).map((l) => `  ${l}`));
    });
    if (defs.length > DEFINITIONS_SHOWN) lines.push(`    (and ${defs.length - DEFINITIONS_SHOWN} more)`);
    if (unread > 0)
      lines.push(
        `    (and ${counted(unread, "entry", "entries")} portcullis cannot fingerprint: dropped, not stored, not shown)`,
      );
  }
  return `${lines.join("\n")}\n`;
}
