/**
 * Catalog diffs: which tools were added, removed, possibly renamed or modified, field by field,
 * and whether each change expands the authority an approval was given for.
 */
import { canonicalString, sameJson } from "../util/canonical.js";
import { redactSchemaDefaults } from "../util/redact.js";
import { ambiguityEntries, copiesChange, type ListedSide, timesListed } from "./ambiguousDiff.js";
import { describeField } from "./fieldSummary.js";
import { defaultsDiffer, filledDefaults } from "./filledDefaults.js";
import { propertyAdded } from "./propertyChanges.js";
import { currentRefOwners, withRefOwners } from "./refOwners.js";
import { diffSchema } from "./schemaDiff.js";
import { childPath, isObj, own } from "./schemaPath.js";
import { indexTools } from "./snapshot.js";
import { provablySubset } from "./subset.js";
import { jsonText, nameTokens, newEffectVerbs } from "./text.js";
import { diffText } from "./textDiff.js";
import {
  type CatalogDiff,
  type CatalogSnapshot,
  type Classification,
  classOf,
  type DiffEntry,
  type FieldChange,
  type RenameCandidate,
  type Tool,
} from "./types.js";
import { ArgumentValidator } from "./validator.js";
import { withoutProse } from "./withoutProse.js";

// ---------------------------------------------------------------------------------------------
// Annotations: hints from an untrusted server. Shown and classified by what they claim; they
// never decide whether a call gets credentials or skips approval.

interface Hint {
  /** value the MCP specification assumes when the hint is absent */
  absent: boolean;
  /** does going from `before` to `after` claim more power? */
  expands: (before: boolean, after: boolean) => boolean;
}

const HINTS: Record<string, Hint> = {
  readOnlyHint: { absent: false, expands: (a, b) => a && !b },
  destructiveHint: { absent: true, expands: (a, b) => !a && b },
  idempotentHint: { absent: false, expands: (a, b) => a && !b },
  openWorldHint: { absent: true, expands: (a, b) => !a && b },
};

function hintText(v: unknown, hint: Hint): string {
  return v === undefined ? `(absent: ${hint.absent})` : jsonText(v);
}

function diffAnnotations(a: unknown, b: unknown, out: FieldChange[]): void {
  if (sameJson(a, b)) return;
  if ((a !== undefined && !isObj(a)) || (b !== undefined && !isObj(b))) {
    out.push({
      path: "annotations",
      change: "annotations changed (unrecognized)",
      before: a,
      after: b,
      classification: "expands",
    });
    return;
  }
  const ma = isObj(a) ? a : {};
  const mb = isObj(b) ? b : {};
  const keys = [...new Set([...Object.keys(ma), ...Object.keys(mb)])].sort();
  for (const k of keys) {
    const av = own(ma, k);
    const bv = own(mb, k);
    if (sameJson(av, bv)) continue;
    const path = childPath("annotations", k);
    const hint = Object.hasOwn(HINTS, k) ? HINTS[k] : undefined;
    if (k === "title") {
      diffText(out, path, "annotation title", av, bv);
    } else if (hint) {
      const okA = av === undefined || typeof av === "boolean";
      const okB = bv === undefined || typeof bv === "boolean";
      const change = `annotation ${k} ${hintText(av, hint)}→${hintText(bv, hint)}`;
      if (!okA || !okB) {
        out.push({
          path,
          change: `${change} (not a boolean)`,
          before: av,
          after: bv,
          classification: "expands",
        });
        continue;
      }
      const ea = (av as boolean | undefined) ?? hint.absent;
      const eb = (bv as boolean | undefined) ?? hint.absent;
      let classification: Classification;
      if (ea === eb) classification = "cosmetic";
      else classification = hint.expands(ea, eb) ? "expands" : "narrows";
      const c: FieldChange = { path, change, classification };
      if (av !== undefined) c.before = av;
      if (bv !== undefined) c.after = bv;
      c.detail = "hint only: shown to the human, never used to decide approval or credentials";
      out.push(c);
    } else {
      const what = av === undefined ? "added" : bv === undefined ? "removed" : "changed";
      const c: FieldChange = { path, change: `annotation ${k} ${what}`, classification: "expands" };
      if (av !== undefined) c.before = av;
      if (bv !== undefined) c.after = bv;
      out.push(c);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// One tool against another

const FIELD_ORDER = ["name", "title", "description", "inputSchema", "outputSchema", "annotations"];

function fieldRank(k: string): number {
  const i = FIELD_ORDER.indexOf(k);
  return i === -1 ? FIELD_ORDER.length : i;
}

/**
 * Field-level changes from tool `a` to tool `b` (the names are not compared: callers pair tools
 * by name, or pair a removed tool with an added one as a rename candidate).
 */
export function diffTool(
  a: Tool | Record<string, unknown>,
  b: Tool | Record<string, unknown>,
): FieldChange[] {
  const out: FieldChange[] = [];
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort(
    (x, y) => fieldRank(x) - fieldRank(y) || (x < y ? -1 : x > y ? 1 : 0),
  );
  for (const k of keys) {
    if (k === "name") continue;
    const av = own(a, k);
    const bv = own(b, k);
    if (sameJson(av, bv)) continue;
    switch (k) {
      case "title":
      case "description":
        diffText(out, k, k, av, bv);
        break;
      case "inputSchema":
      case "outputSchema":
        if (av === undefined || bv === undefined) {
          const what = av === undefined ? "added" : "removed";
          out.push({ path: k, change: `${k} ${what}`, before: av, after: bv, classification: "expands" });
        } else diffSchemaClassified(av, bv, k, out);
        break;
      case "annotations":
        diffAnnotations(av, bv, out);
        break;
      default: {
        // execution, icons, _meta and anything new: not understood, so not provably harmless.
        const what = av === undefined ? "added" : bv === undefined ? "removed" : "changed";
        const c: FieldChange = {
          path: childPath("", k),
          change: `field ${k} ${what}`,
          classification: "expands",
        };
        if (av !== undefined) c.before = av;
        if (bv !== undefined) c.after = bv;
        out.push(c);
      }
    }
  }
  return withRefOwners([a, b], () => out.map(shownChange));
}

/**
 * A change as a diff shows and keeps it (`catalog diff`, the console, the review, catalog_revised):
 * a schema in its `before` or `after` with the default, const and examples of every property
 * named like a secret redacted (redactSchemaDefaults). Whole schemas land there: an inputSchema
 * added, an anyOf branch or a $defs entry added, items added, properties the diff does not
 * recognise; a property's own default, const and examples are redacted where they are compared
 * (src/catalog/valueDiff.ts, propertyChanges.ts), and this pass leaves those as they are.
 */
function shownChange(c: FieldChange): FieldChange {
  const out = { ...c };
  // a definition whose schema a secret-like property takes by `$ref` redacted as the property's
  // (withRefOwners: the whole tools are known while this runs; found only when a value is shown)
  if (typeof c.before === "object" && c.before !== null)
    out.before = redactSchemaDefaults(c.before, { refOwners: currentRefOwners() });
  if (typeof c.after === "object" && c.after !== null)
    out.after = redactSchemaDefaults(c.after, { refOwners: currentRefOwners() });
  return out;
}

/**
 * The field-level details a human reads, with the class decided by one question: can the new
 * schema accept a value the old one rejected? Unless provably not, the change expands, whatever
 * the details say; "cosmetic" additionally needs the accepted sets provably equal.
 */
function diffSchemaClassified(av: unknown, bv: unknown, k: string, out: FieldChange[]): void {
  const details: FieldChange[] = [];
  diffSchema(av, bv, k, details);
  const verdict = classOf(details);
  if (!provablySubset(av, bv)) {
    if (verdict !== "expands") {
      details.push({
        path: k,
        change: `${k} may accept values the previous schema rejected (not provably narrower)`,
        classification: "expands",
      });
    }
  } else if (k === "inputSchema" && refusalChecksLeft !== null && refusalChecksLeft <= 0) {
    details.push({
      path: k,
      change: `${k} was not checked by portcullis's validator (over ${MAX_REFUSAL_CHECKS} input schemas narrowed in one change): not provably narrower`,
      classification: "expands",
    });
  } else if (k === "inputSchema" && refusedThenCompiled(av, bv)) {
    // The proof reads JSON Schema; portcullis refused every call under the old schema (a keyword
    // ajv rejects, a pattern it cannot check in linear time, a fan-out over the bound…), so a
    // schema it compiles lets through calls that were all refused, whatever the keywords say.
    details.push({
      path: k,
      change: `${k} was refused by portcullis before (every call refused) and is checked now`,
      classification: "expands",
    });
  } else if (verdict === "cosmetic" && !provablySubset(bv, av)) {
    details.push({ path: k, change: `${k} accepts fewer values`, classification: "narrows" });
  }
  if (k === "inputSchema" && classOf(details) !== "expands") {
    // the same calls accepted, but what the gateway fills into them changed: an approved call
    // would reach the server as another (filledDefaults)
    const moved = defaultsDiffer(filledDefaults(av), filledDefaults(bv));
    if (moved.length > 0)
      details.push({
        path: k,
        change: `${k} fills other defaults into a call (at ${moved.map((p) => p || "/").join(", ")}): what an approved call sends changes`,
        classification: "expands",
      });
  }
  if (details.length === 0) {
    details.push({ path: k, change: `${k} changed`, classification: "expands" });
  }
  out.push(...details);
}

/**
 * How many narrowed input schemas one diffCatalogs asks the gateway's validator about
 * (refusedThenCompiled compiles the old schema, 2–3 ms, and sometimes the new): a change that
 * narrowed each of 10,000 tools' schemas held the event loop 30–50 s per diff, and a gateway
 * re-listing answered no ping for 88 s (test/catalog/hostile-narrowed-schemas.test.ts). Past it, a
 * narrowed input schema is not checked, so it is not provably narrower: it expands. Null: no
 * bound (diffTool alone, one tool).
 */
const MAX_REFUSAL_CHECKS = 200;
let refusalChecksLeft: number | null = null;

/**
 * The validator's answers within one diffCatalogs, by the schema's JSON text: whether it refused
 * the schema depends on nothing else, and tools of one server often share an input schema (the
 * same arguments, or none), each answer a compile of 2–5 ms. A check is counted against the
 * bound whether or not it was answered before. Null: not within a diffCatalogs (nothing kept).
 */
let refusals: Map<string, boolean> | null = null;

/** The old input schema had every call refused by the gateway's validator; the new one compiles. */
function refusedThenCompiled(before: unknown, after: unknown): boolean {
  if (refusalChecksLeft !== null) refusalChecksLeft--;
  return refused(before) && !refused(after);
}

/** JSON text writes -0 as 0: a schema holding one is not kept (its answer is never another's). */
let minusZero = false;
function noticeMinusZero(_key: string, v: unknown): unknown {
  if (Object.is(v, -0)) minusZero = true;
  return v;
}

function refused(schema: unknown): boolean {
  let key: string | undefined;
  try {
    minusZero = false;
    key = refusals === null ? undefined : JSON.stringify(schema, noticeMinusZero);
    if (minusZero) key = undefined;
  } catch {
    key = undefined; // not kept: asked again
  }
  const known = key === undefined ? undefined : refusals?.get(key);
  if (known !== undefined) return known;
  const answer = ArgumentValidator.refusalOf(schema) !== null;
  if (key !== undefined) refusals?.set(key, answer);
  return answer;
}

function hintsSummary(t: Tool): string | undefined {
  const ann = own(t, "annotations");
  if (!isObj(ann)) return undefined;
  const bits: string[] = [];
  for (const k of Object.keys(HINTS)) {
    const v = own(ann, k);
    if (v !== undefined) bits.push(`${k}=${typeof v === "boolean" ? v : JSON.stringify(v)}`);
  }
  return bits.length > 0 ? `hints (not trusted): ${bits.join(", ")}` : undefined;
}

/** What a human needs to see about a tool that did not exist before. */
function describeAddedTool(t: Tool): FieldChange[] {
  const head: FieldChange = { path: "", change: "tool added", classification: "expands" };
  const desc = own(t, "description");
  if (desc !== undefined) head.after = desc;
  if (typeof desc === "string") {
    const effects = newEffectVerbs("", desc);
    if (effects.length > 0) head.newEffects = effects;
  }
  const hints = hintsSummary(t);
  if (hints) head.detail = hints;
  const out = [head];
  const schema = own(t, "inputSchema");
  const props = own(schema, "properties");
  if (isObj(props)) {
    const req = own(schema, "required");
    const reqSet = new Set(Array.isArray(req) ? req : []);
    for (const n of Object.keys(props)) {
      out.push(propertyAdded(childPath("inputSchema.properties", n), n, props[n], reqSet.has(n)));
    }
  } else if (schema !== undefined && !(isObj(schema) && props === undefined)) {
    out.push({
      path: "inputSchema",
      change: "input schema (unrecognized)",
      after: redactSchemaDefaults(schema),
      classification: "expands",
      detail: describeField("arguments", schema),
    });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Rename candidates: a removed and an added tool whose input schemas match or nearly match.

interface Shape {
  name: string;
  tool: Tool;
  /** canonical input schema without prose */
  canon: string;
  /** property name → canonical property schema without prose; null when not an object schema */
  props: Map<string, string> | null;
}

function shapeOf(name: string, tool: Tool): Shape {
  const schema = own(tool, "inputSchema");
  const bare = withoutProse(schema);
  let canon: string;
  try {
    canon = canonicalString(bare ?? null);
  } catch {
    canon = `\u0000unserializable:${name}`;
  }
  let props: Map<string, string> | null = null;
  const p = own(bare, "properties");
  if (isObj(p)) {
    props = new Map();
    for (const k of Object.keys(p)) {
      try {
        props.set(k, canonicalString(p[k] ?? null));
      } catch {
        props.set(k, `\u0000unserializable:${k}`);
      }
    }
  }
  return { name, tool, canon, props };
}

function nameSimilarity(a: string, b: string): number {
  const ta = new Set(nameTokens(a));
  const tb = new Set(nameTokens(b));
  if (ta.size === 0 && tb.size === 0) return 0;
  let common = 0;
  for (const t of ta) if (tb.has(t)) common++;
  return common / (ta.size + tb.size - common);
}

function list(names: string[]): string {
  return names.slice(0, 6).join(", ") + (names.length > 6 ? `, … (${names.length - 6} more)` : "");
}

/** Similarity of two input schemas, or null when they do not nearly match. */
function similarity(r: Shape, a: Shape): { score: number; text: string } | null {
  if (r.canon === a.canon) {
    const exact = sameJson(own(r.tool, "inputSchema"), own(a.tool, "inputSchema"));
    return {
      score: 1,
      text: exact ? "input schema identical" : "input schema identical apart from descriptions",
    };
  }
  if (!r.props || !a.props || r.props.size === 0) return null;
  const kept: string[] = [];
  const changed: string[] = [];
  const removed: string[] = [];
  for (const [k, v] of r.props) {
    const w = a.props.get(k);
    if (w === undefined) removed.push(k);
    else if (w === v) kept.push(k);
    else changed.push(k);
  }
  const added = [...a.props.keys()].filter((k) => !r.props?.has(k));
  // Nearly: at least half of the old inputs survive unchanged, and what differs is small.
  if (kept.length === 0 || kept.length * 2 < r.props.size) return null;
  if (added.length + changed.length + removed.length > Math.max(2, kept.length)) return null;
  const union = kept.length + changed.length + removed.length + added.length;
  const parts = [`input schema nearly identical: kept ${list(kept.sort())}`];
  if (added.length > 0) parts.push(`added ${list(added.sort())}`);
  if (changed.length > 0) parts.push(`changed ${list(changed.sort())}`);
  if (removed.length > 0) parts.push(`removed ${list(removed.sort())}`);
  return { score: kept.length / union, text: parts.join("; ") };
}

/** Above this many (removed × added) pairs only identical schemas are paired. */
const MAX_NEAR_PAIRS = 100_000;

function findRenames(removed: Shape[], added: Shape[]): RenameCandidate[] {
  const pairs: { r: Shape; a: Shape; score: number; names: number; text: string }[] = [];
  if (removed.length * added.length <= MAX_NEAR_PAIRS) {
    for (const r of removed) {
      for (const a of added) {
        const s = similarity(r, a);
        if (s) pairs.push({ r, a, score: s.score, names: nameSimilarity(r.name, a.name), text: s.text });
      }
    }
  } else {
    const byCanon = new Map<string, Shape[]>();
    for (const a of added) {
      const same = byCanon.get(a.canon);
      if (same) same.push(a);
      else byCanon.set(a.canon, [a]);
    }
    // Every removed tool against every added one of its schema is quadratic too when many share
    // one (4,000 tools of `{"type": "object"}` renamed: 16 million pairs, 90 s and 1.5 GB on the
    // event loop). Each removed tool weighs at most `each` added ones of its schema, starting
    // where its own rank among the removed of that schema points (both sides in name order, so
    // a catalog renamed whole still pairs each tool with its counterpart): at most
    // MAX_NEAR_PAIRS pairs in all, or one per removed tool. Candidates are hints, never merged.
    const each = Math.max(1, Math.floor(MAX_NEAR_PAIRS / removed.length));
    const rank = new Map<string, number>();
    for (const r of removed) {
      const same = byCanon.get(r.canon);
      if (!same) continue;
      const at = rank.get(r.canon) ?? 0;
      rank.set(r.canon, at + 1);
      for (let k = 0; k < Math.min(each, same.length); k++) {
        const a = same[(at + k) % same.length] as Shape;
        const s = similarity(r, a);
        if (s) pairs.push({ r, a, score: s.score, names: nameSimilarity(r.name, a.name), text: s.text });
      }
    }
  }
  pairs.sort(
    (x, y) =>
      y.score - x.score ||
      y.names - x.names ||
      (x.r.name < y.r.name ? -1 : x.r.name > y.r.name ? 1 : 0) ||
      (x.a.name < y.a.name ? -1 : x.a.name > y.a.name ? 1 : 0),
  );
  const usedR = new Set<string>();
  const usedA = new Set<string>();
  const out: RenameCandidate[] = [];
  for (const p of pairs) {
    if (usedR.has(p.r.name) || usedA.has(p.a.name)) continue;
    usedR.add(p.r.name);
    usedA.add(p.a.name);
    out.push({ from: p.r.name, to: p.a.name, similarity: p.text });
  }
  return out.sort((x, y) => (x.from < y.from ? -1 : x.from > y.from ? 1 : 0));
}

// ---------------------------------------------------------------------------------------------

function isSnapshot(x: unknown): x is CatalogSnapshot {
  return (
    isObj(x) &&
    (x as { byName?: unknown }).byName instanceof Map &&
    Array.isArray((x as { tools?: unknown }).tools)
  );
}

function toIndex(x: Tool[] | CatalogSnapshot): ListedSide {
  if (!isSnapshot(x)) return indexTools(x);
  return {
    byName: x.byName,
    ambiguous: x.ambiguous ?? new Map(),
    repeated: x.repeated ?? new Map(),
    unfingerprintable: x.unfingerprintable ?? new Map(),
  };
}

const KIND_ORDER: Record<DiffEntry["kind"], number> = { added: 0, modified: 1, removed: 2 };

function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/**
 * Compares two catalogs (tool lists as received, or snapshots, whose fingerprints are then
 * reused). Entries come added, then modified, then removed, each sorted by name. A rename is
 * never assumed: a candidate pair is shown, and stays one removed plus one added entry.
 * Never throws, whatever the lists hold.
 */
export function diffCatalogs(before: Tool[] | CatalogSnapshot, after: Tool[] | CatalogSnapshot): CatalogDiff {
  const pair = isSnapshot(before) && isSnapshot(after);
  if (pair) {
    const known = lastDiffs.get(before);
    if (known?.after === after) return known.diff;
  }
  const outer = refusalChecksLeft;
  const outerRefusals = refusals;
  refusalChecksLeft = MAX_REFUSAL_CHECKS;
  refusals = new Map();
  try {
    const diff = diffCatalogsBounded(before, after);
    if (pair) lastDiffs.set(before, { after, diff });
    return diff;
  } finally {
    refusalChecksLeft = outer;
    refusals = outerRefusals;
  }
}

/**
 * The last diff from each snapshot, to the snapshot it was diffed with: a gateway diffs the same
 * two snapshots for the `catalog_revised` record and again for the run's grants (onExpand), and
 * a re-list of 10,000 narrowed input schemas spent seconds of its event loop on each. A snapshot
 * is never changed once made, and neither caller changes the diff (the record copies it).
 */
const lastDiffs = new WeakMap<CatalogSnapshot, { after: CatalogSnapshot; diff: CatalogDiff }>();

function diffCatalogsBounded(before: Tool[] | CatalogSnapshot, after: Tool[] | CatalogSnapshot): CatalogDiff {
  const sideA = toIndex(before);
  const sideB = toIndex(after);
  const A = sideA.byName;
  const B = sideB.byName;
  // A name ambiguous on either side (listed with different definitions) has entries of its own
  // (ambiguousDiff.ts), and is never a rename candidate.
  const removedNames = [...A.keys()].filter((n) => !B.has(n) && !sideB.ambiguous.has(n)).sort(byCodeUnits);
  const addedNames = [...B.keys()].filter((n) => !A.has(n) && !sideA.ambiguous.has(n)).sort(byCodeUnits);
  const modifiedNames = [...B.keys()]
    .filter((n) => {
      const a = A.get(n);
      const b = B.get(n);
      return (
        a !== undefined &&
        b !== undefined &&
        (a.fingerprint !== b.fingerprint || timesListed(sideA, n) !== timesListed(sideB, n))
      );
    })
    .sort(byCodeUnits);

  const renameCandidates =
    removedNames.length > 0 && addedNames.length > 0
      ? findRenames(
          removedNames.map((n) => shapeOf(n, (A.get(n) as { tool: Tool }).tool)),
          addedNames.map((n) => shapeOf(n, (B.get(n) as { tool: Tool }).tool)),
        )
      : [];
  const renamedTo = new Map(renameCandidates.map((c) => [c.to, c]));
  const renamedFrom = new Map(renameCandidates.map((c) => [c.from, c]));

  // The modified tools first: their classification is what the validator's bounded checks are
  // for (refusalChecksLeft, by tool name); a renamed tool's diff below is shown only, its added
  // side expands whatever it says, and it must not spend them first.
  const modifiedChanges = new Map(
    modifiedNames.map((n) => {
      const a = A.get(n) as { tool: Tool; fingerprint: string };
      const b = B.get(n) as { tool: Tool; fingerprint: string };
      return [n, a.fingerprint === b.fingerprint ? [] : diffTool(a.tool, b.tool)];
    }),
  );

  const entries: DiffEntry[] = [];
  for (const n of addedNames) {
    const b = B.get(n) as { tool: Tool; fingerprint: string };
    const cand = renamedTo.get(n);
    let changes: FieldChange[];
    if (cand) {
      const from = (A.get(cand.from) as { tool: Tool }).tool;
      changes = [
        {
          path: "",
          change: "tool added",
          classification: "expands",
          detail: `renamed? from ${cand.from} (${cand.similarity}); treated as a new tool`,
        },
        ...diffTool(from, b.tool),
      ];
    } else changes = describeAddedTool(b.tool);
    const e: DiffEntry = {
      kind: "added",
      tool: n,
      classification: "expands",
      changes,
      fingerprintAfter: b.fingerprint,
    };
    if (cand) e.renameCandidate = cand.from;
    entries.push(e);
  }
  for (const n of modifiedNames) {
    const a = A.get(n) as { tool: Tool; fingerprint: string };
    const b = B.get(n) as { tool: Tool; fingerprint: string };
    const changes = modifiedChanges.get(n) as FieldChange[];
    if (changes.length === 0 && a.fingerprint !== b.fingerprint) {
      changes.push({
        path: "",
        change: "changed in a way the diff cannot explain",
        classification: "expands",
      });
    }
    // copies of one definition are one tool; how many there are is said, cosmetic
    const times = [timesListed(sideA, n), timesListed(sideB, n)] as const;
    if (times[0] !== times[1]) changes.push(copiesChange(times[0], times[1]));
    entries.push({
      kind: "modified",
      tool: n,
      classification: classOf(changes),
      changes,
      fingerprintBefore: a.fingerprint,
      fingerprintAfter: b.fingerprint,
    });
  }
  for (const n of removedNames) {
    const a = A.get(n) as { tool: Tool; fingerprint: string };
    const cand = renamedFrom.get(n);
    const head: FieldChange = { path: "", change: "tool removed", classification: "narrows" };
    const desc = own(a.tool, "description");
    if (desc !== undefined) head.before = desc;
    if (cand) head.detail = `renamed? to ${cand.to} (${cand.similarity}); treated as removed`;
    const e: DiffEntry = {
      kind: "removed",
      tool: n,
      classification: "narrows",
      changes: [head],
      fingerprintBefore: a.fingerprint,
    };
    if (cand) e.renameCandidate = cand.to;
    entries.push(e);
  }
  const ambiguous = ambiguityEntries(sideA, sideB, describeAddedTool);
  if (ambiguous.length > 0) {
    // added, then modified, then removed, each by name, ambiguous names among the others
    entries.push(...ambiguous);
    entries.sort((x, y) => KIND_ORDER[x.kind] - KIND_ORDER[y.kind] || byCodeUnits(x.tool, y.tool));
  }
  const diff: CatalogDiff = {
    entries,
    renameCandidates,
    expands: entries.some((e) => e.classification === "expands"),
  };
  if (sideB.ambiguous.size > 0) diff.ambiguous = [...sideB.ambiguous.keys()].sort(byCodeUnits);
  return diff;
}
