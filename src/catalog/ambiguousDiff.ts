/**
 * Diff entries for names a server lists more than once. A name listed with definitions that
 * differ (by fingerprint) is ambiguous: it is not served, and its calls are refused, since which
 * definition a server runs is its own business and the human would approve (and the agent see)
 * one while the server may act on another. So is a name also listed with an entry that cannot be
 * fingerprinted (a number such as 1e400 in it). Every entry of such a name counts in the catalog
 * fingerprint (one that cannot be fingerprinted by how many there are of its name), so a change to
 * any of them is a revision, and each revision says so here.
 *
 * Deny first: a name becoming ambiguous, changing while ambiguous, or served again afterwards
 * expands (under onExpand "run" the run's grants end, and an approval of it is asked again);
 * only its leaving the catalog narrows. Copies of one definition are one tool: a change in how
 * many there are is cosmetic.
 */
import { counted } from "../util/counted.js";
import { own } from "./schemaPath.js";
import type { Listed } from "./snapshot.js";
import type { DiffEntry, FieldChange, Tool } from "./types.js";

/**
 * What a diff reads of each side: the served tools, the ambiguous names, every entry of a repeated
 * name, and how many entries that cannot be fingerprinted a name kept otherwise has.
 */
export interface ListedSide {
  byName: Map<string, Listed>;
  ambiguous: Map<string, Listed[]>;
  repeated: Map<string, Listed[]>;
  unfingerprintable: Map<string, number>;
}

/** How many definitions of one ambiguous name are described in a diff entry. */
const DEFINITIONS_SHOWN = 5;

/**
 * How many times a side lists `name` (1 for a name listed once, 0 for one it does not list), its
 * entries that cannot be fingerprinted included when it has others.
 */
export function timesListed(side: ListedSide, name: string): number {
  const dropped = side.unfingerprintable.get(name) ?? 0;
  const all = side.repeated.get(name);
  if (all) return all.length + dropped;
  return (side.byName.has(name) || side.ambiguous.has(name) ? 1 : 0) + dropped;
}

/** The cosmetic line of a served tool whose copies changed in number (the same definition each time). */
export function copiesChange(before: number, after: number): FieldChange {
  return {
    path: "",
    change: `listed ${counted(before, "time")} → ${counted(after, "time")} (the same definition each time)`,
    classification: "cosmetic",
  };
}

function entriesKey(side: ListedSide, name: string): string {
  const all = side.repeated.get(name) ?? side.ambiguous.get(name) ?? [];
  const fingerprints = all.map((e) => e.fingerprint).sort();
  return `${fingerprints.join(",")}+${side.unfingerprintable.get(name) ?? 0}`;
}

/** "listed 2 times with 2 different definitions", or, with entries that cannot be fingerprinted, "listed 2 times, 1 of them …". */
export function listedWith(listed: number, definitions: number, unfingerprintable: number): string {
  return unfingerprintable > 0
    ? `listed ${counted(listed, "time")}, ${unfingerprintable} of them with a definition portcullis cannot fingerprint`
    : `listed ${counted(listed, "time")} with ${definitions} different definitions`;
}

function ambiguityLine(side: ListedSide, name: string): string {
  const defs = side.ambiguous.get(name)?.length ?? 0;
  const dropped = side.unfingerprintable.get(name) ?? 0;
  return `${listedWith(timesListed(side, name), defs, dropped)}: not served, its calls refused`;
}

/**
 * One line per definition (the first few): its description, and its fingerprint to find it in
 * `catalog show`; then how many entries could not be fingerprinted (`dropped`).
 */
function definitionLines(defs: Listed[], dropped: number): FieldChange[] {
  const out: FieldChange[] = defs.slice(0, DEFINITIONS_SHOWN).map((d, i) => {
    const c: FieldChange = {
      path: "",
      change: `definition ${i + 1} of ${defs.length}`,
      classification: "expands",
      detail: d.fingerprint,
    };
    const desc = own(d.tool, "description");
    if (desc !== undefined) c.after = desc;
    return c;
  });
  if (defs.length > DEFINITIONS_SHOWN) {
    out.push({
      path: "",
      change: `and ${counted(defs.length - DEFINITIONS_SHOWN, "more definition")}`,
      classification: "expands",
    });
  }
  if (dropped > 0) {
    out.push({
      path: "",
      change: `and ${counted(dropped, "entry", "entries")} portcullis cannot fingerprint (dropped, not stored)`,
      classification: "expands",
    });
  }
  return out;
}

/**
 * The entries of every name ambiguous on either side, sorted by name (the caller merges them with
 * the others). `describeServed` gives the lines of a tool served again (as an added tool's).
 */
export function ambiguityEntries(
  A: ListedSide,
  B: ListedSide,
  describeServed: (t: Tool) => FieldChange[],
): DiffEntry[] {
  const names = [...new Set([...A.ambiguous.keys(), ...B.ambiguous.keys()])].sort((x, y) =>
    x < y ? -1 : x > y ? 1 : 0,
  );
  const out: DiffEntry[] = [];
  for (const n of names) {
    const before = A.ambiguous.get(n);
    const after = B.ambiguous.get(n);
    const fingerprints = {
      ...(before ? { ambiguousBefore: before.map((d) => d.fingerprint) } : {}),
      ...(after ? { ambiguousAfter: after.map((d) => d.fingerprint) } : {}),
    };
    if (before && after) {
      // the same entries, in another order: no change
      if (entriesKey(A, n) === entriesKey(B, n)) continue;
      out.push({
        kind: "modified",
        tool: n,
        classification: "expands",
        changes: [
          {
            path: "",
            change: `definitions changed: still ${ambiguityLine(B, n)}`,
            classification: "expands",
          },
          ...definitionLines(after, B.unfingerprintable.get(n) ?? 0),
        ],
        ...fingerprints,
      });
    } else if (after) {
      const served = A.byName.get(n);
      out.push({
        kind: served ? "modified" : "added",
        tool: n,
        classification: "expands",
        changes: [
          {
            path: "",
            change: served ? `now ${ambiguityLine(B, n)}` : `tool added, ${ambiguityLine(B, n)}`,
            classification: "expands",
          },
          ...definitionLines(after, B.unfingerprintable.get(n) ?? 0),
        ],
        ...(served ? { fingerprintBefore: served.fingerprint } : {}),
        ...fingerprints,
      });
    } else if (before) {
      const served = B.byName.get(n);
      if (served) {
        const [head, ...rest] = describeServed(served.tool);
        const again: FieldChange = {
          ...(head as FieldChange),
          change: `listed with one definition again (${counted(timesListed(B, n), "time")}): served`,
          classification: "expands",
        };
        out.push({
          kind: "modified",
          tool: n,
          classification: "expands",
          changes: [again, ...rest],
          fingerprintAfter: served.fingerprint,
          ...fingerprints,
        });
      } else {
        out.push({
          kind: "removed",
          tool: n,
          classification: "narrows",
          changes: [
            {
              path: "",
              change: `tool removed (it was ${ambiguityLine(A, n)})`,
              classification: "narrows",
            },
          ],
          ...fingerprints,
        });
      }
    }
  }
  return out;
}
