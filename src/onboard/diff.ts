/**
 * A line diff of two texts, "-"/"+" lines with a line of context each side.
 *
 * Host files can be large: Claude Code's ~/.claude.json keeps every project's history and runs to
 * tens of thousands of lines, while wrap changes a few of them. A table of every line against
 * every line (the longest common subsequence, n × m cells) took 4 GB and 40 s on a 48,000-line
 * file and then ran out of memory (`wrap claude-code --dry-run` crashed). The common start and end
 * are set aside first, and the rest is diffed by Myers' algorithm, whose cost grows with the
 * number of changed lines, not with the file: O((n + m) · D) time and O(D²) memory for D changes.
 * Past MAX_EDITS changes the part between the common start and end is shown as removed, then
 * added, whole: a longer diff, never a crash.
 */
export function lineDiff(a: string, b: string, name: string): string {
  // A newline ends a line; it does not start an empty one. Split as they were, two texts ending in
  // one both got a last line "", printed as a context line of two spaces (a blank line) after a
  // change near the end. When only one of them ends in a newline, that "" stays: the change it is.
  const bothEnd = a.endsWith("\n") && b.endsWith("\n");
  const x = (bothEnd ? a.slice(0, -1) : a).split("\n");
  const y = (bothEnd ? b.slice(0, -1) : b).split("\n");
  const ops = editScript(x, y);
  const keep = ops.map((o, k) => o[0] !== " " || ops[k - 1]?.[0] !== " " || ops[k + 1]?.[0] !== " ");
  const lines = [`--- ${name}`, `+++ ${name} (wrapped)`];
  let gap = false;
  ops.forEach((o, k) => {
    if (keep[k]) {
      lines.push(o);
      gap = false;
    } else if (!gap) {
      lines.push("  …");
      gap = true;
    }
  });
  return `${lines.join("\n")}\n`;
}

/** More changed lines than wrap makes to any real host file; past it, the changed part is shown whole. */
const MAX_EDITS = 2000;

/** The lines of `x` and `y` as "  " (both), "- " (only x) and "+ " (only y) lines, in order. */
function editScript(x: string[], y: string[]): string[] {
  let start = 0;
  while (start < x.length && start < y.length && x[start] === y[start]) start++;
  let endX = x.length;
  let endY = y.length;
  while (endX > start && endY > start && x[endX - 1] === y[endY - 1]) {
    endX--;
    endY--;
  }
  const a = x.slice(start, endX);
  const b = y.slice(start, endY);
  const middle = myers(a, b, MAX_EDITS) ?? [...a.map((l) => `- ${l}`), ...b.map((l) => `+ ${l}`)];
  return [...x.slice(0, start).map((l) => `  ${l}`), ...middle, ...x.slice(endX).map((l) => `  ${l}`)];
}

/**
 * Myers' shortest edit script (1986) of `a` into `b` ("- old" before "+ new" where lines are
 * replaced), or null when it needs more than `maxD` deletions and insertions.
 */
function myers(a: string[], b: string[], maxD: number): string[] | null {
  const n = a.length;
  const m = b.length;
  // v[k + off]: the furthest x reached on diagonal k (x − y = k); `trace[d]` keeps the part of it
  // that step d reached (k from −d to d) for the way back.
  const off = maxD + 1;
  const v = new Int32Array(2 * off + 1);
  const trace: Int32Array[] = [];
  for (let d = 0; d <= maxD; d++) {
    for (let k = -d; k <= d; k += 2) {
      let xi =
        k === -d || (k !== d && v[off + k - 1]! < v[off + k + 1]!) ? v[off + k + 1]! : v[off + k - 1]! + 1;
      let yi = xi - k;
      while (xi < n && yi < m && a[xi] === b[yi]) {
        xi++;
        yi++;
      }
      v[off + k] = xi;
      if (xi >= n && yi >= m) {
        trace.push(v.slice(off - d, off + d + 1));
        return backtrack(a, b, trace);
      }
    }
    trace.push(v.slice(off - d, off + d + 1));
  }
  return null;
}

function backtrack(a: string[], b: string[], trace: Int32Array[]): string[] {
  const out: string[] = [];
  let xi = a.length;
  let yi = b.length;
  for (let d = trace.length - 1; d > 0; d--) {
    const prev = trace[d - 1]!;
    const at = (k: number) => prev[k + d - 1]!;
    const k = xi - yi;
    const down = k === -d || (k !== d && at(k - 1) < at(k + 1));
    const prevK = down ? k + 1 : k - 1;
    const prevX = at(prevK);
    const prevY = prevX - prevK;
    while (xi > prevX && yi > prevY) {
      out.push(`  ${a[--xi]}`);
      yi--;
    }
    if (down) out.push(`+ ${b[--yi]}`);
    else out.push(`- ${a[--xi]}`);
  }
  while (xi > 0) {
    out.push(`  ${a[--xi]}`);
    yi--;
  }
  return out.reverse();
}
