/**
 * The name a mistyped word most likely meant: the one within two edits (a letter added, dropped,
 * changed, or two swapped; a letter's case counts as a change), when exactly one is that near;
 * null otherwise, and for a word under 3 or over 40 characters (too short to guess from, or no
 * typo of a name).
 */
export function nearestName(typed: string, names: Iterable<string>): string | null {
  if (typed.length < 3 || typed.length > 40) return null;
  let best: string | null = null;
  let bestDistance = 3;
  let ties = 0;
  for (const name of names) {
    const d = editDistance(typed, name);
    if (d < bestDistance) {
      best = name;
      bestDistance = d;
      ties = 0;
    } else if (d === bestDistance) ties++;
  }
  return ties === 0 ? best : null;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and adjacent swaps. */
function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push([i]);
    for (let j = 1; j <= b.length; j++) {
      if (i === 0) {
        rows[0]!.push(j);
        continue;
      }
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(rows[i - 1]![j]! + 1, rows[i]![j - 1]! + 1, rows[i - 1]![j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        d = Math.min(d, rows[i - 2]![j - 2]! + 1);
      rows[i]!.push(d);
    }
  }
  return rows[a.length]![b.length]!;
}
