/** A line diff (LCS) of two small texts, "-"/"+" lines with a line of context each side. */
export function lineDiff(a: string, b: string, name: string): string {
  const x = a.split("\n");
  const y = b.split("\n");
  const n = x.length;
  const m = y.length;
  const lcs: number[][] = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i]![j] = x[i] === y[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const ops: string[] = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) {
      ops.push(`  ${x[i]}`);
      i++;
      j++;
    } else if (j < m && (i === n || lcs[i]![j + 1]! >= lcs[i + 1]![j]!)) ops.push(`+ ${y[j++]}`);
    else ops.push(`- ${x[i++]}`);
  }
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
