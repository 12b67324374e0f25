/**
 * The definitions a secret-like property takes by `$ref` in the schemas being diffed or
 * described, so that their values are shown redacted under that property's name. Kept for the
 * length of a diff (withRefOwners) and found only when first asked. Apart from the walk: the
 * summaries (describeField), the review and the shown values all read it.
 */
import { secretRefTargets } from "../util/redact.js";

/**
 * The definitions that a secret-like property takes by `$ref` in the schemas being diffed (both
 * sides: secretRefTargets), whose values a diff shows redacted under that property's name as it
 * shows the property's own (shownValue, shownProperty, describeField). Set while a diff runs or a
 * schema's properties are described (withRefOwners); empty otherwise.
 */
let refOwnersNow: RefOwners | null = null;
const NO_REF_OWNERS: ReadonlyMap<object, string> = new Map();

/**
 * What withRefOwners knows, found when first asked: only a change that shows a value or a whole
 * schema asks (a default, a const, examples, a property added or removed), and a re-list that
 * tightened a bound on each of 300,000 properties asked nothing, yet scanned every tool's schemas
 * for it twice. The roots are not changed while a diff runs, so the answer is the one found at
 * the start would have been.
 */
class RefOwners {
  private found: Map<object, string> | null = null;
  constructor(
    private readonly outer: RefOwners | null,
    private readonly roots: unknown[],
  ) {}
  get(): ReadonlyMap<object, string> {
    if (this.found === null) {
      const next = new Map(this.outer?.get() ?? NO_REF_OWNERS);
      for (const r of this.roots) for (const [o, name] of secretRefTargets(r)) next.set(o, name);
      this.found = next;
    }
    return this.found;
  }
}

/** The definitions referenced from secret-like properties known now (empty outside withRefOwners). */
export function refOwners(): ReadonlyMap<object, string> {
  return refOwnersNow?.get() ?? NO_REF_OWNERS;
}

/** Runs `f` with the definitions referenced from secret-like properties in `roots` known (refOwners). */
export function withRefOwners<T>(roots: unknown[], f: () => T): T {
  const saved = refOwnersNow;
  refOwnersNow = new RefOwners(saved, roots);
  try {
    return f();
  } finally {
    refOwnersNow = saved;
  }
}

/** The definitions referenced from secret-like properties while a diff runs (withRefOwners). */
export function currentRefOwners(): ReadonlyMap<object, string> {
  return refOwners();
}
