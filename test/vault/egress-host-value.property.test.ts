// Declared hosts are matched by value (src/vault/egress/hosts.ts, hostValue), searched both ways
// against an oracle of its own: each generated host is made from what it denotes (an IPv4 number,
// eight IPv6 groups, a DNS name's labels, or nothing a host can be) and then spelled, so whether
// two spellings are the same host is known without the code under test.
// - every spelling of a declared host matches it, on its port (or 443 and 80 when it has none),
//   whether the declaration is given as written (a stored policy) or as the loader writes it;
// - a host that is not the declared one by value never matches: another address, a name (even
//   one that reads as the address: `127.0.0.1.evil.example`, `localhost`), a second trailing dot,
//   userinfo, an IPv4-compatible IPv6 address, another port;
// - the proxy's destination is that value: what it connects to is what was compared.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { declaredHost, hostMatches, hostValue, parseAuthority } from "../../src/vault/egress/hosts.js";
import { ipv4Spelling, ipv6Spelling } from "../helpers/addressSpellings.js";

/** A host as generated: how it is written, and what it is (null: no host at all). */
interface Spelled {
  text: string;
  truth: string | null;
}

/** IPv4 values near each other and near the usual ones, so that near misses are tried often. */
const v4Value = fc.oneof(
  fc.constantFrom(0x7f000001, 0x7f000002, 0x7f000100, 0x01000001, 0, 0xffffffff, 0x0a000001),
  fc.integer({ min: 0, max: 0xffffffff }),
);
const v4Truth = (n: number) => `v4:${n >>> 0}`;

const dotted = (n: number) => [n >>> 24, (n >>> 16) & 255, (n >>> 8) & 255, n & 255].join(".");

/** Eight groups, from a few values, so that two of them are often nearly the same. */
const groups = fc.array(fc.constantFrom(0, 0, 0, 1, 0xffff, 0x7f00, 0xfe80, 0x2001, 0xdb8), {
  minLength: 8,
  maxLength: 8,
});
const isMapped = (g: number[]) => g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff;
const v6Truth = (g: number[]) =>
  // IPv4-mapped: the IPv4 address, which a connection to it reaches
  isMapped(g) ? v4Truth(g[6]! * 65536 + g[7]!) : `v6:${g.join(":")}`;
const bracketed = (a: fc.Arbitrary<string>) => a.map((t) => `[${t}]`);

/** Every spelling of the IPv4 address n: the URL parser's notations, and IPv4-mapped IPv6 ones. */
const v4Spellings = (n: number): fc.Arbitrary<Spelled> => {
  const mapped = [0, 0, 0, 0, 0, 0xffff, n >>> 16, n & 0xffff];
  return fc
    .oneof(
      { arbitrary: ipv4Spelling(fc.constant(n)), weight: 3 },
      bracketed(ipv6Spelling(mapped)),
      bracketed(ipv6Spelling(mapped, fc.constant(dotted(n)))),
    )
    .map((text) => ({ text, truth: v4Truth(n) }));
};

/** Every spelling of an IPv6 address (with a dotted tail when its last two groups allow). */
const v6Spellings = (g: number[]): fc.Arbitrary<Spelled> =>
  isMapped(g)
    ? v4Spellings(g[6]! * 65536 + g[7]!)
    : fc
        .oneof(
          bracketed(ipv6Spelling(g)),
          bracketed(ipv6Spelling(g, fc.constant(dotted(g[6]! * 65536 + g[7]!)))),
        )
        .map((text) => ({ text, truth: v6Truth(g) }));

/** A label: letters, digits, hyphens inside. */
const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,6}[a-z0-9])?$/);
/** A name's last label is no number (a host whose last label is one is an IPv4 address or nothing). */
const lastLabel = label.filter((l) => !/^[0-9]+$/.test(l) && !/^0x[0-9a-f]*$/.test(l));
const recase = (s: string) =>
  fc
    .array(fc.boolean(), { minLength: s.length, maxLength: s.length })
    .map((up) => [...s].map((c, i) => (up[i] ? c.toUpperCase() : c)).join(""));

const nameOf = (labels: string[]): fc.Arbitrary<Spelled> =>
  fc.tuple(recase(labels.join(".")), fc.boolean()).map(([text, dot]) => ({
    text: `${text}${dot ? "." : ""}`,
    truth: `name:${labels.join(".")}`,
  }));

/** A name's labels: random ones, and names that read as an address or resolve to one. */
const nameLabels: fc.Arbitrary<string[]> = fc.oneof(
  fc.tuple(fc.array(label, { maxLength: 3 }), lastLabel).map(([init, last]) => [...init, last]),
  fc
    .constantFrom(
      "localhost",
      "127.0.0.1.evil.example",
      "7f000001.nip.io",
      "127-0-0-1.sslip.io",
      "0x7f.example",
    )
    .map((n) => n.split(".")),
  // an address spelling with a name after it
  v4Value
    .chain((n) => ipv4Spelling(fc.constant(n)))
    .map((a) => [...a.replace(/\.$/, "").toLowerCase().split("."), "evil", "example"]),
);

/** A host with a value, and an arbitrary of its spellings (each of them that host). */
const valued: fc.Arbitrary<fc.Arbitrary<Spelled>> = fc.oneof(
  v4Value.map(v4Spellings),
  groups.map(v6Spellings),
  // IPv4-compatible (not mapped): another address than the IPv4 one
  v4Value.map((n) => v6Spellings([0, 0, 0, 0, 0, 0, n >>> 16, n & 0xffff])),
  nameLabels.map(nameOf),
);
const name = nameLabels.chain(nameOf);

/** Things that are no host: each must match nothing and be refused as a declaration. */
const notAHost: fc.Arbitrary<Spelled> = fc
  .oneof(
    fc.constantFrom(
      "",
      " ",
      "a b",
      "evil.example..",
      "..",
      ".",
      "a..b",
      "http://a.example",
      "a.example/path",
    ),
    fc.constantFrom("1.2.3.999", "256.0.0.1", "example.123", "[::1%25lo]", "[1::2::3]", "[127.0.0.1]"),
    fc.tuple(name, name).map(([a, b]) => `${a.text}@${b.text}`),
    // a second trailing dot
    v4Value.chain((n) => ipv4Spelling(fc.constant(n))).map((a) => `${a.replace(/\.$/, "")}..`),
    name.map((a) => `${a.text.replace(/\.$/, "")}..`),
  )
  .map((text) => ({ text, truth: null }));

const host: fc.Arbitrary<Spelled> = fc.oneof(
  valued.chain((spellings) => spellings),
  notAHost,
);

/**
 * Hosts made from `d` that are not it (or are no host): a label before it, a name after it, a
 * second trailing dot, userinfo on either side. What is left of `d` in them is known, so their
 * truth is too: a name before or after a name or an IPv4 spelling makes another name (a label
 * with a letter before an IPv4 spelling makes no host: its last label is a number).
 */
const lookalikes = (d: Spelled): fc.Arbitrary<Spelled> => {
  const bare = d.text.replace(/\.$/, "");
  const named = d.truth?.startsWith("name:") ? d.truth.slice(5) : null;
  const dottedName = !d.text.startsWith("[") && d.truth !== null;
  return fc.oneof(
    lastLabel.map((l) => ({ text: `${l}.${d.text}`, truth: named !== null ? `name:${l}.${named}` : null })),
    lastLabel.map((l) => ({
      text: `${bare}.${l}`,
      truth: dottedName ? `name:${bare.toLowerCase()}.${l}` : null,
    })),
    fc.constant({ text: `${bare}..`, truth: null }),
    fc
      .constantFrom(`evil.example@${d.text}`, `${d.text}@evil.example`)
      .map((text) => ({ text, truth: null })),
  );
};

/** Declared ports: (443 and 80) or one; request ports near them. */
const declaredPort = fc.option(fc.constantFrom(443, 80, 8443, 9000), { nil: null });
const requestPort = fc.constantFrom(443, 80, 8443, 9000, 9001);
const portAllows = (declared: number | null, port: number) =>
  declared === null ? port === 443 || port === 80 : declared === port;

describe("declared hosts are matched by value (property)", () => {
  it("a host's every spelling matches its declaration, however the declaration is spelled", () => {
    fc.assert(
      fc.property(
        valued.chain((spellings) => fc.tuple(spellings, spellings)),
        declaredPort,
        requestPort,
        ([declared, requested], dport, port) => {
          const written = dport === null ? declared.text : `${declared.text}:${dport}`;
          const loaded = declaredHost(written);
          expect(loaded, written).toHaveProperty("host");
          const dest = parseAuthority(`${requested.text}:${port}`);
          expect(dest, requested.text).not.toBeNull();
          const want = portAllows(dport, port);
          expect(hostMatches([written], dest!), `${written} ← ${requested.text}:${port}`).toBe(want);
          expect(hostMatches([(loaded as { host: string }).host], dest!)).toBe(want);
          // the proxy connects to the very value compared
          expect(dest!.host).toBe(hostValue(requested.text));
        },
      ),
      { numRuns: 400 },
    );
  });

  it("a host that is not the declared one by value never matches (counterexamples searched)", () => {
    fc.assert(
      fc.property(
        host.chain((d) => fc.tuple(fc.constant(d), d.truth === null ? host : fc.oneof(host, lookalikes(d)))),
        declaredPort,
        requestPort,
        ([declared, requested], dport, port) => {
          const written = dport === null ? declared.text : `${declared.text}:${dport}`;
          const loaded = declaredHost(written);
          if (declared.truth === null) expect(loaded, written).toHaveProperty("problem");
          const dest = parseAuthority(`${requested.text}:${port}`);
          const same =
            declared.truth !== null && declared.truth === requested.truth && portAllows(dport, port);
          if (dest === null) {
            // no destination at all: nothing is released to it
            expect(requested.truth, requested.text).toBeNull();
            return;
          }
          expect(hostMatches([written], dest), `${written} ← ${requested.text}:${port}`).toBe(same);
          if ("host" in loaded) expect(hostMatches([loaded.host], dest)).toBe(same);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it("every spelling of a host is one value, and two hosts are never one value", () => {
    fc.assert(
      fc.property(host, host, (a, b) => {
        const va = hostValue(a.text);
        const vb = hostValue(b.text);
        if (a.truth === null) expect(va, a.text).toBeNull();
        if (a.truth !== null && b.truth !== null)
          expect(va === vb, `${a.text} / ${b.text}`).toBe(a.truth === b.truth);
      }),
      { numRuns: 2000 },
    );
  });
});
