// A check that work grows linearly with its input, whatever the speed of the machine: the same
// work is timed at two sizes built alike, and the times are compared with each other, never with
// a bound in milliseconds (a loaded machine once took 529 ms where 500 were allowed).
import { expect } from "vitest";

export interface LinearOptions {
  /** The larger size is `factor` times the smaller (8 unless told). */
  factor?: number;
  /**
   * How many times longer the larger size may take (24 unless told): linear work takes `factor`
   * times longer (8), quadratic work `factor²` (64).
   */
  maxRatio?: number;
}

/** Added to the allowed time of the larger size, in ms: timer resolution, a collection. */
const SLACK_MS = 2;
const ROUNDS = 5;

/**
 * `build(n)` builds the input of size `n` (not timed) and returns the work to time on it, with its
 * expectations (which must hold at both sizes). The work at `factor × n` must take at most
 * `maxRatio` times as long as at `n` (plus a little slack): the best of up to five rounds each,
 * the two sizes in turn so that a change in the machine's load falls on both; the rounds stop once
 * the check holds. Failing that, the median over the five rounds of each round's own ratio (the
 * larger size against the smaller one timed just before it) is judged instead: V8 sometimes moves
 * a regular expression back to its bytecode interpreter for a while (seen after other inputs had
 * run: 50 to 100 times slower for the same text), and a round that timed the smaller size before
 * such a move and the larger after it would compare two different engines. Work that grows
 * faster than linearly does so in every round. Choose `n` so that the smaller work takes a
 * millisecond or more (the slack covers the timer and a collection below that) and the larger
 * input is a few hundred kB at most: past that, in a test worker, collections and caches made
 * linear work take 15–28 times as long for 8 times the input.
 */
export function expectLinear(build: (n: number) => () => void, n: number, options: LinearOptions = {}): void {
  const factor = options.factor ?? 8;
  const maxRatio = options.maxRatio ?? 24;
  const small = build(n);
  const large = build(factor * n);
  // (CPU time of this process, not time on the clock: on a busy machine a run longer than the
  // scheduler's slice is put off, one shorter often is not, which made linear work look 25 to 50
  // times as long for 8 times the input)
  const time = (work: () => void) => {
    const start = process.cpuUsage();
    work();
    const used = process.cpuUsage(start);
    return (used.user + used.system) / 1000;
  };
  small(); // (warm-up: the first run compiles, and would make the smaller size look slow)
  let bestSmall = Number.POSITIVE_INFINITY;
  let bestLarge = Number.POSITIVE_INFINITY;
  const ratios: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const s = time(small);
    const l = time(large);
    bestSmall = Math.min(bestSmall, s);
    bestLarge = Math.min(bestLarge, l);
    ratios.push(Math.max(0, l - SLACK_MS) / s);
    if (bestLarge <= maxRatio * bestSmall + SLACK_MS) return;
  }
  ratios.sort((a, b) => a - b);
  const median = ratios[Math.floor(ratios.length / 2)]!;
  expect(
    median,
    `size ${n}: ${bestSmall.toFixed(2)} ms, size ${factor * n}: ${bestLarge.toFixed(2)} ms (best of each ${(bestLarge / bestSmall).toFixed(1)}×; each round's ratio ${ratios.map((r) => r.toFixed(1)).join(", ")}; at most ${maxRatio}× allowed)`,
  ).toBeLessThanOrEqual(maxRatio);
}
