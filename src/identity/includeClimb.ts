// An include pattern whose group makes a `..` path segment (`@(rel|../a)/**`, `+(x|..)/**`,
// `!(rel|../a)/**`, `@(.|x)./**`, and `@()../**`: a `..` in a segment a group is part of). The glob library (tinyglobby) walks from the working directory,
// or from above it only for a pattern that opens with `..` (`../shared/**`); a group's `..` is
// matched against the paths of that walk, which never climb. Alone, such a pattern never matches
// what the group lists; beside a pattern opening with `..` that moved the walk up, it matched
// paths outside the working directory that no check of include.ts had judged. So include.ts
// refuses it, naming the group. A `..` outside groups (`../shared/**`) is the user's own climb.
import type { Item } from "./includeScan.js";

/**
 * Where the reading of a path segment stands: at its start (0), after one dot (1), after two (2),
 * elsewhere (3); and the outermost group that gave one of its dots, if any.
 */
interface State {
  phase: 0 | 1 | 2 | 3;
  by: string | null;
}

const key = (s: State): string => `${s.phase}\0${s.by ?? ""}`;

function unique(states: State[]): State[] {
  return [...new Map(states.map((s) => [key(s), s])).values()];
}

/** Reads one literal character; `found` is told of a `..` segment a group made. */
function char(s: State, ch: string, group: string | null, found: (g: string) => void): State {
  if (ch === "/") {
    // a `/` of a group ends the segment: `..@(/)a` is not the `../a` the library would climb
    const by = s.by ?? group;
    if (s.phase === 2 && by !== null) found(by);
    return { phase: 0, by: null };
  }
  if (ch !== "." || s.phase >= 2) return { phase: 3, by: null };
  return { phase: s.phase === 0 ? 1 : 2, by: s.by ?? group };
}

class Reader {
  found: string | null = null;
  /** each group's outcome from each state, computed once: nested `*(…)` would be exponential */
  private memo = new Map<Item, Map<string, State[]>>();
  private tell = (g: string) => {
    this.found ??= g;
  };

  run(items: Item[], start: State, group: string | null): State[] {
    let states = [start];
    for (const item of items) states = unique(states.flatMap((s) => this.item(item, s, group)));
    return states;
  }

  private item(item: Item, s: State, group: string | null): State[] {
    if ("ch" in item) return [char(s, item.ch, group, this.tell)];
    let byState = this.memo.get(item);
    if (byState === undefined) {
      byState = new Map();
      this.memo.set(item, byState);
    }
    const known = byState.get(key(s));
    if (known !== undefined) return known;
    const inner = group ?? item.src;
    const out = new Map<string, State>();
    let frontier = [s];
    const tried = new Set([key(s)]);
    if (item.optional) out.set(key(s), { phase: s.phase, by: s.by ?? inner });
    while (frontier.length > 0) {
      const next = unique(frontier.flatMap((f) => item.alts.flatMap((alt) => this.run(alt, f, inner))));
      // a segment a group is part of is the group's, even when it adds nothing (`@()../**`)
      for (const m of next) {
        const n = { phase: m.phase, by: m.by ?? inner };
        out.set(key(n), n);
      }
      if (!item.repeat) break;
      frontier = next.filter((n) => !tried.has(key(n)));
      for (const n of frontier) tried.add(key(n));
    }
    const result = [...out.values()];
    byState.set(key(s), result);
    return result;
  }
}

/** The group (as written) of the pattern's items that makes a `..` path segment, or null. */
export function climbingGroup(items: Item[]): string | null {
  const reader = new Reader();
  const end = reader.run(items, { phase: 0, by: null }, null);
  for (const s of end) if (s.phase === 2 && s.by !== null) reader.found ??= s.by;
  return reader.found;
}
