// The Origin check of `run --listen` (src/transport/httpAccess.ts) against strings made around
// the server's own origins: fast-check assembles a scheme, a separator, user info, a host, a port
// and a tail, each most often the one a browser writes and otherwise a neighbour of it (capitals,
// `127.1`, `%6c`ocalhost, an IPv6 address written out, a port with a leading zero or `:80`
// written, a path, a trailing slash, a second origin, `null`). An Origin is accepted iff it is,
// byte for byte, how a browser serializes one of the server's origins (RFC 6454): the list below
// is written by hand, not computed by the code under test. The front here is bound to 127.0.0.1,
// so a page at `[::1]`, an address it does not hold, is not one of its origins.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { hostOriginProblem, hostsOfSockets } from "../../src/transport/httpAccess.js";

/** Each part: the browser's own spelling most of the time, else one of its neighbours. */
const part = (own: string, neighbours: string[]) =>
  fc.oneof(
    { arbitrary: fc.constant(own), weight: 3 },
    { arbitrary: fc.constantFrom(...neighbours), weight: 1 },
  );

const HOSTS = ["127.0.0.1", "localhost"];
const HOST_NEIGHBOURS = [
  "[::1]",
  "LOCALHOST",
  "Localhost",
  "localhost.",
  "%6cocalhost",
  "127.1",
  "127.0.0.01",
  "0x7f.0.0.1",
  "2130706433",
  "127.0.0.2",
  "[0:0:0:0:0:0:0:1]",
  "[::0001]",
  "[::ffff:127.0.0.1]",
  "::1",
  "[::1",
  "evil.example",
  "127.0.0.1.evil.example",
  "local\thost",
  "",
];

function origins(port: number): fc.Arbitrary<string> {
  const portText = port === 80 ? "" : `:${port}`;
  const portNeighbours = [
    `:0${port}`,
    `:+${port}`,
    `:${port + 1}`,
    port === 80 ? ":8080" : ":80",
    port === 80 ? ":80" : "",
    ":",
    `:${port} `,
    `:${port}0`,
  ].filter((p) => p !== portText);
  return fc
    .record({
      scheme: part("http", ["https", "HTTP", "Http", "ws", "file", ""]),
      separator: part("://", [":/", ":\\\\", ":", ":///", "//", "://\\"]),
      user: part("", ["evil@", "user:pass@", "@", `127.0.0.1${portText}@`]),
      host: fc.constantFrom(...HOSTS).chain((own) => part(own, HOST_NEIGHBOURS)),
      port: part(portText, portNeighbours),
      tail: part("", [
        "/",
        "/mcp",
        "?",
        "?x=1",
        "#",
        "#x",
        ".",
        " ",
        "\t",
        ", http://evil.example",
        "\u0000",
      ]),
      wholeCase: part("as is", ["upper"]),
    })
    .map((o) => {
      const s = `${o.scheme}${o.separator}${o.user}${o.host}${o.port}${o.tail}`;
      return o.wholeCase === "upper" ? s.toUpperCase() : s;
    });
}

/** The hosts of a front bound to `address` (`HOST:PORT`). */
const hostsOf = (address: string) => {
  const at = address.lastIndexOf(":");
  return hostsOfSockets([address.slice(0, at)], Number(address.slice(at + 1)));
};

describe("Origin on run --listen", () => {
  for (const port of [8765, 80]) {
    const own = new Set(HOSTS.map((h) => `http://${h}${port === 80 ? "" : `:${port}`}`));
    it(`port ${port}: accepted iff it is exactly one of the server's origins as a browser writes it`, () => {
      const hosts = hostsOf(`127.0.0.1:${port}`);
      const host = `127.0.0.1:${port}`;
      fc.assert(
        fc.property(fc.oneof(origins(port), fc.constant("null"), fc.string({ maxLength: 30 })), (origin) => {
          const accepted = hostOriginProblem(host, origin, hosts) === null;
          expect(accepted, JSON.stringify(origin)).toBe(own.has(origin));
        }),
        { numRuns: 3000 },
      );
      // and each of them does pass (the generator reaches them, but not necessarily every one)
      for (const origin of own) expect(hostOriginProblem(host, origin, hosts), origin).toBeNull();
    });
  }

  it("a refused Origin is told in one sentence naming it", () => {
    const hosts = hostsOf("127.0.0.1:8765");
    expect(hostOriginProblem("127.0.0.1:8765", "http://evil@127.0.0.1:8765", hosts)).toBe(
      'Origin "http://evil@127.0.0.1:8765" is not this server',
    );
  });
});
