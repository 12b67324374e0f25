// How an address can be written: every notation the WHATWG URL parser reads for IPv4 (1 to 4
// parts, each decimal, hex or octal) and every IPv6 text of eight 16-bit groups (leading zeros,
// case, one run of zeros as "::", a dotted IPv4 tail). Shared by the property tests that search
// for a spelling of a loopback address a classifier misses.
import fc from "fast-check";

export const octet = fc.integer({ min: 0, max: 255 });

/** `n` written as the URL parser reads numbers: decimal, 0x hex (any case, leading zeros), 0 octal. */
export const numberSpelling = (n: number) =>
  fc.constantFrom(
    String(n),
    `0x${n.toString(16)}`,
    `0X${n.toString(16).toUpperCase()}`,
    `0x00${n.toString(16)}`,
    n === 0 ? "0" : `0${n.toString(8)}`,
  );

/**
 * An IPv4 value in any notation the WHATWG URL parser accepts: 1 to 4 parts (the last one takes
 * the remaining bytes), each part decimal, hex or octal, an optional trailing dot.
 */
export const ipv4Spelling = (value: fc.Arbitrary<number>) =>
  fc.tuple(value, fc.integer({ min: 1, max: 4 }), fc.boolean()).chain(([n, parts, trailingDot]) => {
    const bytes = [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255];
    const head = bytes.slice(0, parts - 1);
    const last = bytes.slice(parts - 1).reduce((acc, b) => acc * 256 + b, 0);
    return fc
      .tuple(...[...head, last].map(numberSpelling))
      .map((spelled) => spelled.join(".") + (trailingDot ? "." : ""));
  });

/** A 16-bit group in hex, with 0 to 3 leading zeros, in either case. */
export const group = (value: number) =>
  fc.tuple(fc.integer({ min: value.toString(16).length, max: 4 }), fc.boolean()).map(([width, upper]) => {
    const g = value.toString(16).padStart(width, "0");
    return upper ? g.toUpperCase() : g;
  });

/**
 * The eight groups `values` written as IPv6 text: every group with leading zeros or not, and
 * optionally one run of zero groups (any run, of any length) written as "::". `tail`, when given,
 * replaces the last two groups (a dotted IPv4).
 */
export const ipv6Spelling = (values: number[], tail?: fc.Arbitrary<string>) => {
  const count = tail ? 6 : 8;
  const head = values.slice(0, count);
  const zeroRuns: [number, number][] = [];
  for (let i = 0; i < count; i++) for (let j = i; j < count && head[j] === 0; j++) zeroRuns.push([i, j + 1]);
  return fc
    .tuple(
      fc.tuple(...head.map(group)),
      // (an address with no zero group has no run to write as "::")
      zeroRuns.length > 0
        ? fc.option(fc.constantFrom(...zeroRuns), { nil: undefined })
        : fc.constant(undefined),
      tail ?? fc.constant(null),
    )
    .map(([groups, run, t]) => {
      const all = t === null ? groups : [...groups, t];
      const n = all.length;
      if (!run) return all.join(":");
      const [from, to] = run;
      return `${all.slice(0, from).join(":")}::${all.slice(to, n).join(":")}`;
    });
};
