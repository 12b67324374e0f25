// The Host checks that refuse DNS rebinding, searched with fast-check (the Origin check has its own
// property: test/http/origin.property.test.ts):
//   - one rule for both HTTP servers, `run --listen` (src/transport/http.ts, hostOriginProblem)
//     and the console (src/console/http.ts hostAllowed, the 421 of src/console/server.ts):
//     hostsOfSockets of the addresses their sockets are bound to. docs/security.md: "`Host` must
//     name an address the front's socket is bound to ... `localhost` only when that address is
//     one `localhost` stands for (127.0.0.1 or ::1) ... on `0.0.0.0` every IPv4 address of the
//     machine's interfaces, on `::` every one ... A `Host` is compared as host plus effective
//     port: one that leaves the port out means 80"; the console binds 127.0.0.1 and ::1, or
//     127.0.0.1 alone on a machine without an IPv6 loopback;
//   - isThisMachine (a socket's remote address): a loopback address, or one of this machine's
//     interface addresses, in any spelling node reports; nothing else.
// The accepted set is written here by hand from those sentences; fast-check assembles Host values
// around it: other names, trailing dots, user info, ports (other, leading zero, empty, sign,
// out of range), IPv6 forms, IPv4 in decimal/octal/hex/short forms, percent-encoding, case,
// whitespace, and arbitrary strings. An address is compared by value (the WHATWG URL parser, as
// fetch() does, sends `[::ffff:127.0.0.1]` as `[::ffff:7f00:1]`), so every spelling of a bound
// address is accepted, and still nothing else. The run front's bound address for each --listen
// (node reports `[0:0:0:0:0:0:0:1]` bound as `::1`, `localhost` as what it resolved to) is
// exercised through real gateways in test/http/listen-host-bound.test.ts.
//
// Note: on 0.0.0.0, `Host: 0.0.0.0:PORT` is accepted (a client that dials 0.0.0.0 reaches this
// machine and writes it so); no rebinding name reaches it.
import { isIP } from "node:net";
import { networkInterfaces } from "node:os";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { consoleHosts, hostAllowed } from "../../src/console/http.js";
import { hostOriginProblem, hostsOfSockets, isThisMachine } from "../../src/transport/httpAccess.js";

/** This machine's interface addresses, as node lists them (zone ids off, lower case). */
const INTERFACES = Object.values(networkInterfaces())
  .flatMap((l) => l ?? [])
  .map((a) => a.address.split("%")[0]!.toLowerCase());
const IPV4_INTERFACES = INTERFACES.filter((a) => isIP(a) === 4);
/** The interfaces' addresses as Host names them (an IPv6 one in brackets). */
const bracketed = (a: string) => (isIP(a) === 6 ? `[${a}]` : a);

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

describe("run --listen: Host names an address the front's socket is bound to, nothing else", () => {
  // `bound`: the address as node reports the bound socket's (the front reads it from there)
  const cases: { bound: string; names: string[]; port: number }[] = [
    { bound: "127.0.0.1", names: ["127.0.0.1", "localhost"], port: 8765 },
    { bound: "127.0.0.1", names: ["127.0.0.1", "localhost"], port: 80 },
    // [::1] only where a socket is bound to it, 127.0.0.1 only where one is bound there
    { bound: "::1", names: ["[::1]", "localhost"], port: 8765 },
    // a socket bound to an IPv4-mapped address takes connections to that IPv4 address
    { bound: "::ffff:127.0.0.1", names: ["127.0.0.1", "localhost"], port: 8765 },
    // localhost stands for 127.0.0.1 and ::1, not for the rest of 127/8
    { bound: "::ffff:127.0.0.5", names: ["127.0.0.5"], port: 8765 },
    { bound: "::ffff:192.0.2.10", names: ["192.0.2.10"], port: 8765 },
    { bound: "127.0.0.5", names: ["127.0.0.5"], port: 8765 },
    { bound: "192.0.2.10", names: ["192.0.2.10"], port: 8765 },
    { bound: "2001:db8::1", names: ["[2001:db8::1]"], port: 8765 },
    {
      bound: "0.0.0.0",
      // an IPv4 socket: the machine's IPv4 addresses (127.0.0.1 among them), not its IPv6 ones
      names: ["0.0.0.0", "localhost", ...IPV4_INTERFACES],
      port: 8765,
    },
    {
      bound: "::",
      // dual-stack (node binds :: so): every address of the machine
      names: [
        "[::]",
        ...(INTERFACES.some((a) => a === "127.0.0.1" || a === "::1") ? ["localhost"] : []),
        ...INTERFACES.map(bracketed),
      ],
      port: 8765,
    },
  ];
  for (const { bound, names, port } of cases) {
    it(`bound to ${bound}: a Host is accepted iff it names ${names.length > 4 ? "localhost or an interface" : names.join(", ")} on port ${port}`, () => {
      const hosts = hostsOfSockets([bound], port);
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
  it("whatever the bound address, a DNS name (not localhost) in Host gets a refusal", () => {
    const bound = ["127.0.0.1", "::1", "::ffff:127.0.0.1", "0.0.0.0", "::", "192.0.2.10"].map((a) =>
      hostsOfSockets([a], 8765),
    );
    const name = fc
      .oneof(fc.domain(), fc.constantFrom("localhost.", "localhost.evil.example", "127.0.0.1.nip.io"))
      .filter((n) => n.toLowerCase() !== "localhost");
    fc.assert(
      fc.property(
        name,
        fc.constantFrom("", ":8765", ":80", ":08765"),
        fc.constantFrom(...bound),
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
