// The classifier that decides whether a server's URL elicitation could send the human to a page
// on this machine (src/gateway/pageOnThisMachine.ts; docs/security.md, "A server's URL
// elicitation that sends the human to a page on this machine"): such an elicitation reaches the
// client with "(from the server, not from portcullis) " in front of its message, since the
// gateway's own send the human to the console there. fast-check searches for a URL to this
// machine that is not recognised: a loopback or unspecified address in every notation the URL
// parser reads, inside brackets or not, mapped into IPv6, with user info, percent-encoded, in any
// case, with trailing dots; localhost and every *.localhost; names that carry the address as the
// wildcard-DNS services read it (nip.io, sslip.io: dotted, dashed, hex, IPv6 with dashes); the
// public names that resolve to 127.0.0.1; punycode look-alikes of localhost; the machine's own
// interface addresses and the names /etc/hosts gives a loopback address. A control keeps the
// prefix off URLs to public hosts, so the classifier is not simply "always".
//
// No name is resolved here or by the classifier: no Internet access is needed.
import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { hostname, networkInterfaces } from "node:os";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hostOnThisMachine, pageOnThisMachine } from "../../src/gateway/pageOnThisMachine.js";
import { attributedElicitation } from "../../src/gateway/serverWords.js";
import { ipv4Spelling, ipv6Spelling, octet } from "../helpers/addressSpellings.js";

/** A 32-bit IPv4 value in 127.0.0.0/8 or 0.0.0.0/8: every one reaches this machine. */
const localIpv4Value = fc.oneof(
  fc.integer({ min: 0x7f000000, max: 0x7fffffff }),
  fc.integer({ min: 0, max: 0x00ffffff }),
);

/** ::1, ::, and 127/8 mapped (::ffff:127.a.b.c, ::ffff:7f00:1) or compatible (::127.a.b.c). */
const localIpv6 = fc.oneof(
  ipv6Spelling([0, 0, 0, 0, 0, 0, 0, 1]),
  ipv6Spelling([0, 0, 0, 0, 0, 0, 0, 0]),
  fc
    .tuple(octet, octet, octet, fc.boolean(), fc.constantFrom(0xffff, 0))
    .chain(([a, b, c, dotted, six]) =>
      dotted
        ? ipv6Spelling([0, 0, 0, 0, 0, six, 0, 0], fc.constant(`127.${a}.${b}.${c}`))
        : ipv6Spelling([0, 0, 0, 0, 0, six, (127 << 8) | a, (b << 8) | c]),
    ),
);

/** `word` with each letter's case chosen at random. */
const anyCase = (word: string) =>
  fc
    .tuple(...[...word].map((ch) => fc.constantFrom(ch.toLowerCase(), ch.toUpperCase())))
    .map((p) => p.join(""));

/** Some ASCII characters of a host written as %XX (the URL parser decodes a host's escapes). */
const percentSome = (host: string) =>
  fc
    .array(fc.boolean(), { minLength: host.length, maxLength: host.length })
    .map((flags) =>
      [...host]
        .map((ch, i) =>
          flags[i] && /[0-9a-z.]/i.test(ch) ? `%${ch.charCodeAt(0).toString(16).padStart(2, "0")}` : ch,
        )
        .join(""),
    );

const label = fc.stringMatching(/^[a-z][a-z0-9]{0,8}$/);
const dots = fc.constantFrom("", ".", "..");

/** localhost, any *.localhost, any case, trailing dots. */
const localhostName = fc
  .tuple(fc.array(label, { maxLength: 3 }), anyCase("localhost"), dots)
  .map(([sub, name, d]) => [...sub, name].join(".") + d);

/** A 127/8 (or 0/8) address as its four bytes. */
const localBytes = fc.oneof(
  fc.tuple(fc.constant(127), octet, octet, octet),
  fc.tuple(fc.constant(0), octet, octet, octet),
);

/** A name a wildcard-DNS service resolves to the address it carries (any suffix: anyone can run one). */
const carryingName = fc
  .tuple(
    localBytes,
    fc.constantFrom("dotted", "dashed", "hex", "v6"),
    fc.option(label, { nil: undefined }),
    fc.constantFrom("-", "."),
    fc.constantFrom("nip.io", "sslip.io", "traefik.me", "xip.io", "example.net"),
    fc.boolean(),
  )
  .map(([bytes, how, word, sep, domain, upper]) => {
    const carried =
      how === "dotted"
        ? bytes.join(".")
        : how === "dashed"
          ? bytes.join("-")
          : how === "hex"
            ? bytes.map((b) => b.toString(16).padStart(2, "0")).join("")
            : bytes[0] === 127
              ? "--1"
              : "--";
    const name = `${word === undefined ? "" : `${word}${how === "v6" ? "." : sep}`}${carried}.${domain}`;
    return upper ? name.toUpperCase() : name;
  });

/** Public names that resolve to 127.0.0.1, with no address in them. */
const loopbackDomain = fc
  .tuple(
    fc.option(label, { nil: undefined }),
    fc.constantFrom(
      "localtest.me",
      "lvh.me",
      "vcap.me",
      "local.gd",
      "localho.st",
      "lcl.host",
      "traefik.me",
      "localhost.direct",
      "lacolhost.com",
      "fuf.me",
    ),
  )
  .map(([sub, d]) => (sub ? `${sub}.${d}` : d));

/** localhost with look-alike letters: the URL parser writes it as punycode, a client may show it. */
const LOOKALIKES: Record<string, string[]> = {
  l: ["l", "ӏ", "ℓ"],
  o: ["o", "о", "ο"],
  c: ["c", "с", "ϲ"],
  a: ["a", "а", "α"],
  h: ["h", "һ"],
  s: ["s", "ѕ"],
  t: ["t", "т", "τ"],
};
const lookalikeLocalhost = fc
  .tuple(...[..."localhost"].map((ch) => fc.constantFrom(...LOOKALIKES[ch]!)))
  .map((p) => p.join(""))
  .filter((n) => n !== "localhost");

/** This machine's interface addresses and the names /etc/hosts gives a loopback address. */
const interfaceAddresses = Object.values(networkInterfaces())
  .flatMap((l) => l ?? [])
  .map((a) => a.address.split("%")[0]!);
const hostsFileNames = (() => {
  try {
    return readFileSync("/etc/hosts", "utf8")
      .split("\n")
      .map((l) => l.replace(/#.*/, "").trim().split(/\s+/))
      .filter(([a]) => a !== undefined && /^(127\.|::1$)/.test(a))
      .flatMap(([, ...names]) => names)
      .filter((n) => n !== "");
  } catch {
    return [];
  }
})();

/** Any host of this machine, as written into a URL (an IPv6 literal in brackets). */
const localHost = fc.oneof(
  ipv4Spelling(localIpv4Value),
  localIpv6.map((a) => `[${a}]`),
  localhostName,
  carryingName,
  loopbackDomain,
  lookalikeLocalhost,
  fc.constantFrom(...interfaceAddresses).map((a) => (isIP(a) === 6 ? `[${a}]` : a)),
  ...(hostsFileNames.length > 0 ? [fc.constantFrom(...hostsFileNames)] : []),
  // the machine's own name, and as mDNS names it
  fc.constantFrom(hostname(), `${hostname()}.local`),
);

/** A URL to `host`: any scheme case, maybe user info, a port, a path, a query. */
const urlTo = (host: fc.Arbitrary<string>) =>
  fc
    .tuple(
      host,
      fc.constantFrom("http", "https", "HTTP", "hTtPs"),
      fc.constantFrom("", "evil@", "user:pw@", "approve.example.net@"),
      fc.constantFrom("", ":5555", ":80", ":0443"),
      fc.constantFrom("/", "/requests/01JQ7R5S4S0QJ7GZP1S2AAAAAA", "/approve?x=1#top", ""),
    )
    .chain(([h, scheme, user, port, path]) =>
      (h.startsWith("[") ? fc.constant(h) : fc.oneof(fc.constant(h), percentSome(h))).map(
        (spelled) => `${scheme}://${user}${spelled}${port}${path}`,
      ),
    );

describe("a URL elicitation to a page on this machine", () => {
  it("is recognised however the address or name is written", () => {
    fc.assert(
      fc.property(urlTo(localHost), (url) => {
        expect(pageOnThisMachine(url), url).toBe(true);
        const message = "A human must approve the call. Open the console to review and decide it.";
        expect(attributedElicitation({ mode: "url", url, message })?.message, url).toBe(
          `(from the server, not from portcullis) ${message}`,
        );
      }),
      {
        numRuns: 3000,
        examples: [
          ["http://127.0.0.1.nip.io/"],
          ["http://127-0-0-1.sslip.io/"],
          ["http://localtest.me/"],
          ["http://localhost./"],
          ["http://2130706433/"],
          ["http://0x7f000001/"],
          ["http://0177.0.0.1/"],
          ["http://127.1/"],
          ["http://0.0.0.0/"],
          ["http://[::1]/"],
          ["http://[::ffff:127.0.0.1]/"],
          ["http://[::ffff:7f00:1]/"],
          ["http://[0:0:0:0:0:0:0:1]/"],
        ],
      },
    );
  });

  it("the URL parser's view is the one read: a host it puts elsewhere behind user info is still flagged", () => {
    // `http://127.0.0.1@evil.test/`: the parser's host is evil.test, a human reads 127.0.0.1
    fc.assert(
      fc.property(fc.oneof(ipv4Spelling(localIpv4Value), localhostName), label, (local, word) => {
        expect(pageOnThisMachine(`http://${local}@${word}.example.net/`)).toBe(true);
      }),
      { numRuns: 300 },
    );
  });

  it("one that parsers read differently, or the URL parser cannot read, is taken as local", () => {
    for (const url of [
      "http://evil.test\\@127.0.0.1/", // RFC 3986 readers: host 127.0.0.1; WHATWG: evil.test
      "http://approve.example.net\t@127.0.0.1/",
      "http://[fe80::1%25lo]:5555/", // a zone id: no URL to the parser
      "http://[::1%25lo]/",
      "127.0.0.1:5555/approve", // no scheme: a lenient client opens it as http
      "localhost:5555/approve",
      "file:///tmp/console.html",
    ])
      expect(pageOnThisMachine(url), url).toBe(true);
    // a url that is no string: a client that coerces it (String(["http://127.0.0.1/"])) opens its text
    for (const url of [["http://127.0.0.1:5555/"], { href: "http://127.0.0.1/" }, 2130706433, null])
      expect(
        attributedElicitation({ mode: "url", url, message: "Approve" })?.message,
        JSON.stringify(url),
      ).toBe("(from the server, not from portcullis) Approve");
    // and a form-mode elicitation has no url at all: nothing said for it
    expect(
      attributedElicitation({ mode: "form", message: "Approve", requestedSchema: { type: "object" } }),
    ).toBeNull();
  });

  it("the host classifier alone: a bracketed IPv6 hostname and its zone-less address agree", () => {
    fc.assert(
      fc.property(localIpv6, (a) => {
        const hostname = new URL(`http://[${a}]/`).hostname;
        expect(hostOnThisMachine(hostname), `${a} → ${hostname}`).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  it("a URL to a public host is passed on as written (the control: not every URL is flagged)", () => {
    const publicIpv4 = fc.ipV4().filter((a) => !/^(0|127)\./.test(a) && !interfaceAddresses.includes(a));
    const publicIpv6 = fc
      .ipV6()
      .map((a) => new URL(`http://[${a}]/`).hostname.slice(1, -1))
      .filter(
        (a) =>
          !/^::(ffff:)?([0-9a-f]{1,4}:)?[0-9a-f]{0,4}$/.test(a) && // no ::x, ::ffff:x (mapped, compatible)
          !interfaceAddresses.includes(a),
      );
    // names of letters only, none of them a localhost label, a loopback domain, or this machine's
    const publicName = fc
      .tuple(
        fc.array(fc.stringMatching(/^[a-z]{1,10}$/), { minLength: 1, maxLength: 3 }),
        fc.constantFrom("com", "net", "org", "io"),
      )
      .map(([parts, tld]) => `${parts.join(".")}.${tld}`)
      .filter(
        (n) =>
          !n.split(".").includes("localhost") &&
          !hostsFileNames.includes(n) &&
          !/(^|\.)(localtest\.me|lvh\.me|vcap\.me|local\.gd|fuf\.me|lcl\.host|traefik\.me|localho\.st)$/.test(
            n,
          ),
      );
    fc.assert(
      fc.property(
        fc.oneof(
          publicIpv4,
          publicIpv6.map((a) => `[${a}]`),
          publicName,
        ),
        fc.constantFrom("http", "https"),
        fc.constantFrom("", ":8443"),
        (host, scheme, port) => {
          const url = `${scheme}://${host}${port}/approve`;
          expect(pageOnThisMachine(url), url).toBe(false);
          expect(attributedElicitation({ mode: "url", url, message: "Approve the deploy" }), url).toBeNull();
        },
      ),
      { numRuns: 1000 },
    );
    for (const url of [
      "https://auth.example.net/authorize?x=1",
      "https://github.com/login/oauth/authorize?client_id=x",
      "https://münchen.de/",
    ])
      expect(pageOnThisMachine(url), url).toBe(false);
  });

  it("a host of a megabyte is judged at once (no quadratic walk over a label)", () => {
    // refused as no DNS name at all: longer than 253 characters
    expect(pageOnThisMachine(`http://${"a-".repeat(500_000)}b.example/`)).toBe(true);
  });
});
