// NO_PROXY entries that would send a declared host around the egress proxy are dropped from the
// server's environment (src/vault/egress/env.ts, coversDeclared): read as the most lenient client
// that honours NO_PROXY reads them (curl, Go, Python's urllib and requests, undici). A declared
// host that went around the proxy would get the placeholder, not the credential, and would not be
// recorded. fast-check writes entries that cover a declared host every way those clients accept,
// and entries that cover nothing, which must be kept.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { coversDeclared, egressEnv } from "../../src/vault/egress/env.js";
import { parseDeclared } from "../../src/vault/egress/hosts.js";

const label = fc.stringMatching(/^[a-z][a-z0-9]{0,7}$/);
const name = fc.array(label, { minLength: 2, maxLength: 4 }).map((l) => l.join("."));
const octet = fc.integer({ min: 0, max: 255 });
const v4 = fc.tuple(octet, octet, octet, octet).map((o) => o.join("."));
const hextet = fc.integer({ min: 0, max: 0xffff });
const v6Parts = fc.array(hextet, { minLength: 8, maxLength: 8 });

/** The eight hextets written out in full, or with the longest run of zeros as `::`. */
function v6Text(parts: number[], compress: boolean): string {
  const full = parts.map((p) => p.toString(16));
  if (!compress) return full.join(":");
  let best = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && parts[j] === 0) j++;
    if (j - i > bestLen) {
      best = i;
      bestLen = j - i;
    }
  }
  if (bestLen < 2) return full.join(":");
  return `${full.slice(0, best).join(":")}::${full.slice(best + bestLen).join(":")}`;
}

const port = fc.integer({ min: 1, max: 65535 });
const dressed = (entry: string) =>
  fc
    .tuple(fc.boolean(), fc.boolean(), fc.constantFrom("", " ", "\t"))
    .map(([upper, dot, pad]) => `${pad}${upper ? entry.toUpperCase() : entry}${dot ? "." : ""}${pad}`);

describe("NO_PROXY entries around a declared host", () => {
  it("an address spelled another way covers the declared address it denotes (the declared hosts are compared by value)", () => {
    for (const e of [
      "127.1",
      "0x7f.0.0.1",
      "0177.0.0.1",
      "2130706433",
      "127.0.0.1.",
      "::ffff:127.0.0.1",
      "[::ffff:7f00:1]:443",
    ])
      expect(coversDeclared(e, [parseDeclared("127.0.0.1").host]), e).toBe(true);
    expect(coversDeclared("0:0:0:0:0:0:0:1", [parseDeclared("[::1]").host])).toBe(true);
    // kept: another address, or a name (never an address, whatever it resolves to)
    for (const e of ["127.2", "0x7f.0.0.2", "::ffff:127.0.0.2", "localhost", "127.0.0.1.nip.io"])
      expect(coversDeclared(e, [parseDeclared("127.0.0.1").host]), e).toBe(false);
  });

  it("the helper's counterexamples: a CIDR block, ::1 in its forms, a trailing dot", () => {
    expect(coversDeclared("10.0.0.0/8", ["10.1.2.3"])).toBe(true);
    for (const e of ["::1", "[::1]", "[::1]:8443", "0:0:0:0:0:0:0:1", "::1/128", "[::]/0"])
      expect(coversDeclared(e, [parseDeclared("[::1]:8443").host]), e).toBe(true);
    expect(coversDeclared("api.example.com.", ["api.example.com"])).toBe(true);
    expect(coversDeclared("api.example.com", ["api.example.com."])).toBe(true);
    // requests matches a plain suffix, without a dot before it, and drops every space; urllib
    // strips every leading dot
    expect(coversDeclared("ample.com", ["api.example.com"])).toBe(true);
    expect(coversDeclared("example .com", ["api.example.com"])).toBe(true);
    expect(coversDeclared("..example.com", ["example.com"])).toBe(true);
    expect(coversDeclared(" * ", ["example.com"])).toBe(true);
    // kept: they cover no declared host
    for (const e of ["other.example", "11.0.0.0/8", "10.1.2.4", "::2", "[::2]:8443", "example.com.evil"])
      expect(coversDeclared(e, ["10.1.2.3", "::1", "api.example.com"]), e).toBe(false);
  });

  it("a name covering a declared name (itself, a parent, a suffix; any case, port, dot) is dropped (property)", () => {
    fc.assert(
      fc.property(
        name,
        fc.integer({ min: 0, max: 3 }),
        fc.constantFrom("", ".", "*."),
        fc.option(port),
        (host, cut, lead, p) => {
          const labels = host.split(".");
          const parent = labels.slice(Math.min(cut, labels.length - 1)).join(".");
          return fc.assert(
            fc.property(dressed(`${lead}${parent}${p === null ? "" : `:${p}`}`), (entry) => {
              expect(coversDeclared(entry, [host])).toBe(true);
            }),
            { numRuns: 3 },
          );
        },
      ),
      { numRuns: 200 },
    );
  });

  it("an IPv4 address, or a CIDR block holding it, is dropped; one that does not hold it is kept (property)", () => {
    fc.assert(
      fc.property(v4, v4, fc.integer({ min: 0, max: 32 }), fc.option(port), (host, other, prefix, p) => {
        expect(coversDeclared(`${host}${p === null ? "" : `:${p}`}`, [host])).toBe(true);
        const toInt = (a: string) => a.split(".").reduce((n, o) => n * 256 + Number(o), 0);
        const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
        const inside = (toInt(host) & mask) >>> 0 === (toInt(other) & mask) >>> 0;
        expect(coversDeclared(`${other}/${prefix}`, [host])).toBe(inside);
      }),
      { numRuns: 300 },
    );
  });

  it("an IPv6 address in any of its forms, bracketed or not, with a port or a block, is dropped (property)", () => {
    fc.assert(
      fc.property(
        v6Parts,
        fc.boolean(),
        fc.boolean(),
        fc.boolean(),
        fc.option(port),
        (parts, short, declaredShort, upper, p) => {
          const declared = `[${v6Text(parts, declaredShort)}]${p === null ? "" : `:${p}`}`;
          const host = parseDeclared(declared).host;
          const text = v6Text(parts, short);
          const forms = [text, `[${text}]`, `[${text}]:${p ?? 443}`, `${text}/128`, `[${text}]/64`];
          for (const f of forms) expect(coversDeclared(upper ? f.toUpperCase() : f, [host]), f).toBe(true);
        },
      ),
      { numRuns: 300 },
    );
  });

  it("a name that is no suffix of any declared host is kept, and egressEnv keeps it in order (property)", () => {
    fc.assert(
      fc.property(
        fc.array(name, { minLength: 1, maxLength: 3 }),
        fc.array(name, { maxLength: 4 }),
        (declared, user) => {
          const kept = user.filter((u) => !declared.some((d) => d.endsWith(u)));
          for (const u of kept) expect(coversDeclared(u, declared)).toBe(false);
          const { env } = egressEnv({
            base: { NO_PROXY: user.join(",") },
            proxyUrl: "http://127.0.0.1:1",
            caPem: null,
            dir: "/nonexistent",
            declaredHosts: declared.map((d) => `${d}:443`),
          });
          expect(env.NO_PROXY).toBe(kept.join(","));
        },
      ),
      { numRuns: 200 },
    );
  });
});
