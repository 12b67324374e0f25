// The Host checks that refuse DNS rebinding, searched with fast-check (the Origin check has its own
// property: test/http/origin.property.test.ts):
//   - `run --listen` (src/transport/httpAccess.ts, hostOriginProblem with allowedHosts): docs/security.md,
//     "`Host` must name the listen address (or `localhost`/`127.0.0.1`/`[::1]` with the same port
//     on a loopback address) ... on `0.0.0.0`/`::` the machine's own interface addresses and
//     `localhost` are the accepted hosts ... A `Host` is compared as host plus effective port: one
//     that leaves the port out means 80";
//   - the console (src/console/http.ts hostAllowed with consoleHosts, the 421 of
//     src/console/server.ts): the same comparison, for localhost and the addresses its sockets are
//     bound to (127.0.0.1, and ::1 where it holds it), in any spelling, with its own port; 421
//     otherwise (a DNS-rebinding page, another port, `[::1]` where it does not listen there);
//   - isThisMachine (a socket's remote address): a loopback address, or one of this machine's
//     interface addresses, in any spelling node reports; nothing else.
// The accepted set is written here by hand from those sentences; fast-check assembles Host values
// around it: other names, trailing dots, user info, ports (other, leading zero, empty, sign,
// out of range), IPv6 forms, IPv4 in decimal/octal/hex/short forms, percent-encoding, case,
// whitespace, and arbitrary strings. An address is compared by value (the WHATWG URL parser, as
// fetch() does, sends `[::ffff:127.0.0.1]` as `[::ffff:7f00:1]`), so every spelling of the
// listen address is accepted, and still nothing else.
//
// Note: on `--listen 0.0.0.0:PORT`, `Host: 0.0.0.0:PORT` is accepted (allowedHosts adds the listen
// address as given); the doc lists "the machine's own interface addresses and localhost". Taken
// here as "the listen address" (the doc's first clause); no rebinding name reaches it.
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { consoleHosts, hostAllowed } from "../../src/console/http.js";
import {
  allowedHosts,
  hostOriginProblem,
  isThisMachine,
  parseListenAddress,
} from "../../src/transport/httpAccess.js";

/** This machine's interface addresses, as node lists them (zone ids off, lower case). */
const INTERFACES = Object.values(networkInterfaces())
  .flatMap((l) => l ?? [])
  .map((a) => a.address.split("%")[0]!.toLowerCase());
const IPV4_INTERFACES = INTERFACES.filter((a) => isIP(a) === 4);

const HOST_NEIGHBOURS = [
  "localhost.",
  "LOCALHOST",
  "LocalHost",
  "%6cocalhost",
  "localhost%2e",
  "local\thost",
  " localhost",
  "localhost ",
  "localhost.evil.example",
  "evil.example",
  "127.0.0.1.nip.io",
  "127.0.0.1.",
  "127.1",
  "127.0.1",
  "127.0.0.01",
  "0127.0.0.1",
  "0x7f.0.0.1",
  "0x7f000001",
  "2130706433",
  "017700000001",
  "127.0.0.2",
  "0.0.0.0",
  "0",
  "[::1]",
  "[0::1]",
  "[0:0:0:0:0:0:0:1]",
  "[::0001]",
  "[::ffff:127.0.0.1]",
  "[::ffff:7f00:1]",
  "[::1%25lo]",
  "[::]",
  "::1",
  "[::1",
  "evil@localhost",
  "localhost@evil.example",
  "user:pass@127.0.0.1",
  "",
  "\u0131ocalhost",
  "ｌｏｃａｌｈｏｓｔ",
  "127。0。0。1",
  "192.0.2.10",
  "[2001:db8::1]",
  "[2001:DB8::1]",
  "[2001:db8:0:0:0:0:0:1]",
  "[2001:0db8::0001]",
  "[::FFFF:127.0.0.1]",
  "[0:0:0:0:0:ffff:7f00:1]",
  "[::ffff:7f00:5]",
  "[::ffff:127.0.0.2]",
  "[::ffff:c000:20a]",
  "[::ffff:192.0.2.11]",
  "[::127.0.0.1]",
  "[64:ff9b::127.0.0.1]",
  "[::2]",
  "[fe80::1]",
  "[::ffff:0.0.0.0]",
  "[::ffff:7f00:1%25lo]",
];

function ports(port: number): string[] {
  return [
    `:${port}`,
    `:0${port}`,
    `:00${port}`,
    `:+${port}`,
    `:${port + 1}`,
    `:${port}0`,
    `:${port} `,
    ` :${port}`,
    ":",
    "",
    ":80",
    ":8080",
    `:${port + 65536}`,
    `:${port}:${port}`,
    `:${port}/`,
    `:${port}@evil.example`,
    `:${port}#`,
  ];
}

/** A Host header: one of the listen's own names or a neighbour, with a port or a neighbour. */
function hostHeaders(own: string[], port: number): fc.Arbitrary<string> {
  const part = <T>(mine: fc.Arbitrary<T>, others: fc.Arbitrary<T>) =>
    fc.oneof({ arbitrary: mine, weight: 2 }, { arbitrary: others, weight: 1 });
  return fc.oneof(
    { arbitrary: fc.string({ maxLength: 30 }), weight: 1 },
    {
      arbitrary: fc
        .tuple(
          part(fc.constantFrom(...own), fc.constantFrom(...HOST_NEIGHBOURS)),
          part(fc.constant(`:${port}`), fc.constantFrom(...ports(port))),
          fc.constantFrom("as is", "as is", "upper"),
        )
        .map(([h, p, c]) => (c === "upper" ? `${h}${p}`.toUpperCase() : `${h}${p}`)),
      weight: 6,
    },
  );
}

/**
 * The documented rule: the header is HOST or HOST:DIGITS, DIGITS the port's value (leading zeros
 * are its spelling), or no port where the port is 80; and HOST one of `names`: a name in any case
 * (a host name is case-insensitive), an address by value, in brackets for IPv6 (`[0::1]` is
 * `[::1]`), an IPv4 name also as its IPv4-mapped IPv6 address (`[::ffff:127.0.0.1]`, which the URL
 * parser sends as `[::ffff:7f00:1]`). Addresses are compared as the URL parser serialises an
 * IPv6 literal; an IPv4 address only in dotted decimal (`127.1`, `0x7f.0.0.1` are not).
 */
function acceptedByRule(header: string, names: string[], port: number): boolean {
  const m = /^(.*?)(?::([0-9]+))?$/s.exec(header)!;
  const host = m[1]!.toLowerCase();
  const given = m[2] === undefined ? 80 : Number(m[2]);
  if (m[2] !== undefined && m[2].length > 5) return false;
  if (given !== port) return false;
  if (names.includes(host)) return true;
  const v6 = /^\[([^\]]*)\]$/.exec(host)?.[1];
  if (v6 === undefined || isIP(v6) !== 6) return false;
  const value = (a: string) => new URL(`http://[${a}]/`).hostname;
  const mine = names.flatMap((n) =>
    isIP(n) === 4 ? [value(`::ffff:${n}`)] : /^\[.*\]$/.test(n) ? [value(n.slice(1, -1))] : [],
  );
  try {
    return mine.includes(value(v6));
  } catch {
    return false; // a zone id (`%25lo`): no URL names it, so no client sends it
  }
}

function hostsOf(address: string) {
  const a = parseListenAddress(address);
  if (typeof a === "string") throw new Error(a);
  return allowedHosts(a, a.port);
}

const LOOPBACK_NAMES = ["127.0.0.1", "localhost", "[::1]"];

describe("run --listen: Host names the listen address, nothing else", () => {
  const cases: { listen: string; names: string[]; port: number }[] = [
    { listen: "127.0.0.1:8765", names: LOOPBACK_NAMES, port: 8765 },
    { listen: "127.0.0.1:80", names: LOOPBACK_NAMES, port: 80 },
    { listen: "localhost:8765", names: LOOPBACK_NAMES, port: 8765 },
    { listen: "[::1]:8765", names: LOOPBACK_NAMES, port: 8765 },
    // the address in another spelling than the URL parser's: the same names, by value
    { listen: "[0:0:0:0:0:0:0:1]:8765", names: LOOPBACK_NAMES, port: 8765 },
    { listen: "[::ffff:127.0.0.1]:8765", names: LOOPBACK_NAMES, port: 8765 },
    // a socket bound to an IPv4-mapped address takes connections to that IPv4 address
    {
      listen: "[::FFFF:7F00:5]:8765",
      names: ["[::ffff:7f00:5]", "127.0.0.5", ...LOOPBACK_NAMES],
      port: 8765,
    },
    { listen: "[::ffff:192.0.2.10]:8765", names: ["192.0.2.10"], port: 8765 },
    { listen: "127.0.0.5:8765", names: ["127.0.0.5", ...LOOPBACK_NAMES], port: 8765 },
    { listen: "192.0.2.10:8765", names: ["192.0.2.10"], port: 8765 },
    { listen: "[2001:db8::1]:8765", names: ["[2001:db8::1]"], port: 8765 },
    {
      listen: "0.0.0.0:8765",
      // "Host must name the listen address": 0.0.0.0 itself is taken too (a client that dials
      // 0.0.0.0 reaches this machine and writes it so)
      names: ["0.0.0.0", ...LOOPBACK_NAMES, ...INTERFACES.map((a) => (isIP(a) === 6 ? `[${a}]` : a))],
      port: 8765,
    },
  ];
  for (const { listen, names, port } of cases) {
    it(`--listen ${listen}: a Host is accepted iff it names ${names.length > 4 ? "localhost or an interface" : names.join(", ")} on port ${port}`, () => {
      const hosts = hostsOf(listen);
      fc.assert(
        fc.property(hostHeaders(names, port), (header) => {
          const accepted = hostOriginProblem(header, undefined, hosts) === null;
          expect(accepted, JSON.stringify(header)).toBe(acceptedByRule(header, names, port));
        }),
        { numRuns: 1500 },
      );
      // each name the doc gives is accepted (the generator reaches them, not necessarily each)
      for (const n of names) expect(hostOriginProblem(`${n}:${port}`, undefined, hosts), n).toBeNull();
      expect(hostOriginProblem(undefined, undefined, hosts)).not.toBeNull();
    });
  }
});

describe("run --listen: a name other than localhost is refused on every address, in any spelling of its port", () => {
  it("whatever the listen address, a DNS name (not localhost) in Host gets a refusal", () => {
    const listens = [
      "127.0.0.1:8765",
      "[::1]:8765",
      "[0::1]:8765",
      "[::ffff:127.0.0.1]:8765",
      "localhost:8765",
      "0.0.0.0:8765",
      "[::]:8765",
      "192.0.2.10:8765",
    ].map(hostsOf);
    const name = fc
      .oneof(fc.domain(), fc.constantFrom("localhost.", "localhost.evil.example", "127.0.0.1.nip.io"))
      .filter((n) => n.toLowerCase() !== "localhost");
    fc.assert(
      fc.property(
        name,
        fc.constantFrom("", ":8765", ":80", ":08765"),
        fc.constantFrom(...listens),
        (n, port, hosts) => {
          expect(hostOriginProblem(`${n}${port}`, undefined, hosts), `${n}${port}`).toMatch(
            /is not this server/,
          );
        },
      ),
      { numRuns: 2000 },
    );
  });
});

describe("the console: 421 unless Host names localhost or an address its sockets are bound to", () => {
  // the console binds 127.0.0.1 and ::1, or 127.0.0.1 alone on a machine without an IPv6 loopback
  const cases: { bound: string[]; names: string[] }[] = [
    { bound: ["127.0.0.1", "::1"], names: ["127.0.0.1", "localhost", "[::1]"] },
    { bound: ["127.0.0.1"], names: ["127.0.0.1", "localhost"] },
  ];
  for (const port of [8788, 80])
    for (const { bound, names } of cases) {
      it(`port ${port}, bound to ${bound.join(" and ")}: accepted iff it names ${names.join(", ")}`, () => {
        const hosts = consoleHosts(bound, port);
        fc.assert(
          fc.property(hostHeaders(names, port), (header) => {
            expect(hostAllowed(header, hosts), JSON.stringify(header)).toBe(
              acceptedByRule(header, names, port),
            );
          }),
          { numRuns: 1500 },
        );
        for (const n of [...names, "[::ffff:7f00:1]"])
          expect(hostAllowed(`${n}:${port}`, hosts), n).toBe(true);
        if (!bound.includes("::1")) expect(hostAllowed(`[::1]:${port}`, hosts)).toBe(false);
        expect(hostAllowed(undefined, hosts)).toBe(false);
      });
    }

  it("a DNS name other than localhost is refused, with any port spelling (DNS rebinding)", () => {
    const hosts = consoleHosts(["127.0.0.1", "::1"], 8788);
    const name = fc
      .oneof(fc.domain(), fc.constantFrom("localhost.", "localhost.evil.example", "127.0.0.1.nip.io"))
      .filter((n) => n.toLowerCase() !== "localhost");
    fc.assert(
      fc.property(name, fc.constantFrom("", ":8788", ":80", ":08788"), (n, port) => {
        expect(hostAllowed(`${n}${port}`, hosts), `${n}${port}`).toBe(false);
      }),
      { numRuns: 2000 },
    );
  });
});

describe("isThisMachine: loopback or one of this machine's addresses, in any spelling node gives", () => {
  /** The rule: the address as node reports it names 127/8, ::1, or an interface of this machine. */
  function thisMachineByRule(address: string): boolean {
    const h = address.split("%")[0]!.toLowerCase();
    const family = isIP(h);
    if (family === 0) return h === "localhost";
    if (family === 4) return h.startsWith("127.") || IPV4_INTERFACES.includes(h);
    // IPv6, compared by value (the URL parser writes one address one way); an IPv4-mapped one
    // (::ffff:a.b.c.d, however written) is that IPv4 address
    const value = (a: string) => new URL(`http://[${a}]/`).hostname;
    let v: string;
    try {
      v = value(h);
    } catch {
      return false;
    }
    const mapped = /^\[::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})\]$/.exec(v);
    if (mapped) {
      const [hi, lo] = [Number.parseInt(mapped[1]!, 16), Number.parseInt(mapped[2]!, 16)];
      const v4 = [hi >> 8, hi & 255, lo >> 8, lo & 255].join(".");
      return v4.startsWith("127.") || IPV4_INTERFACES.includes(v4);
    }
    const mine = [...INTERFACES.filter((a) => isIP(a) === 6), "::1"].map(value);
    return mine.includes(v);
  }

  it("accepts exactly those", () => {
    const v4 = fc
      .tuple(
        fc.constantFrom(127, 10, 192, 0, 172, 8, ...IPV4_INTERFACES.map((a) => Number(a.split(".")[0]))),
        fc.nat(255),
        fc.nat(255),
        fc.nat(255),
      )
      .map((p) => p.join("."));
    const address = fc.oneof(
      v4,
      fc.constantFrom(...INTERFACES),
      v4.map((a) => `::ffff:${a}`),
      fc.constantFrom(...IPV4_INTERFACES).map((a) => `::ffff:${a}`),
      fc.constantFrom(
        "::1",
        "0:0:0:0:0:0:0:1",
        "::",
        "::2",
        "fe80::1",
        "2001:db8::1",
        "::ffff:7f00:1",
        "::ffff:127.0.0.1",
        "::127.0.0.1",
        "64:ff9b::127.0.0.1",
        "2130706433",
        "127.1",
        "0x7f.0.0.1",
        "localhost",
        "evil.example",
        "",
      ),
      fc.string({ maxLength: 20 }),
    );
    fc.assert(
      fc.property(address, (a) => {
        expect(isThisMachine(a), JSON.stringify(a)).toBe(thisMachineByRule(a));
      }),
      { numRuns: 2000 },
    );
  });
});
