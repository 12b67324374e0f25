// Declared destinations and proxy targets (src/vault/egress/hosts.ts): a host without a port means
// 443 and 80 only; names are compared case-insensitively, addresses by the address they denote; a
// CONNECT target is a DNS name or an IP address with a port 1-65535, and nothing else.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  declaredHost,
  hostDeclared,
  hostMatches,
  misdirection,
  parseAuthority,
  targetWithoutTrailingDot,
  withoutTrailingDot,
} from "../../src/vault/egress/hosts.js";

describe("declared hosts", () => {
  it("as written: a name's trailing dot and case do not matter; a port outside 1-65535 or a non-name is refused", () => {
    expect(declaredHost("API.Example.com.")).toEqual({ host: "api.example.com" });
    expect(declaredHost("api.example.com.:8443")).toEqual({ host: "api.example.com:8443" });
    expect(declaredHost("[::1]:9000")).toEqual({ host: "[::1]:9000" });
    // a leading zero is refused, as every number portcullis reads (test/cli/port-leading-zero.test.ts)
    expect(declaredHost("api.example.com:08443")).toEqual({
      problem: "has a port written with a leading zero; write the port without it",
    });
    for (const bad of ["example.com:99999", "example.com:0", "bad_host", "http://x", "[zz::1]", "a..b", ""])
      expect(declaredHost(bad), bad).toHaveProperty("problem");
  });

  it("whatever a declaration accepts is matched by a request to that host and port (property)", () => {
    const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/);
    const name = fc.array(label, { minLength: 1, maxLength: 4 }).map((l) => l.join("."));
    fc.assert(
      fc.property(
        name,
        fc.integer({ min: 1, max: 65535 }),
        fc.boolean(),
        fc.boolean(),
        (n, port, dot, upper) => {
          const written = `${upper ? n.toUpperCase() : n}${dot ? "." : ""}:${port}`;
          const d = declaredHost(written);
          // refused only when its last label is a number that makes no IPv4 address (`a.0`, or
          // `a.0x`: a label of 0x and hex digits is a number to the URL parser too)
          if (!("host" in d))
            return (
              /(^|\.)([0-9]+|0x[0-9a-f]*)$/.test(n) && d.problem === "is not a DNS name or an IP address"
            );
          const dest = parseAuthority(`${n}${dot ? "." : ""}:${port}`);
          return dest !== null && hostMatches([d.host], dest);
        },
      ),
    );
  });

  it("a host without a port means 443 and 80; with a port, that port only", () => {
    const declared = ["api.example.com", "127.0.0.1:8443", "[::1]:9000"];
    expect(hostMatches(declared, { host: "api.example.com", port: 443 })).toBe(true);
    expect(hostMatches(declared, { host: "API.Example.com", port: 80 })).toBe(true);
    expect(hostMatches(declared, { host: "api.example.com", port: 8443 })).toBe(false);
    expect(hostMatches(declared, { host: "evil.api.example.com", port: 443 })).toBe(false);
    expect(hostMatches(declared, { host: "127.0.0.1", port: 8443 })).toBe(true);
    expect(hostMatches(declared, { host: "127.0.0.1", port: 443 })).toBe(false);
    expect(hostMatches(declared, { host: "::1", port: 9000 })).toBe(true);
    expect(hostDeclared(declared, "api.example.com")).toBe(true);
    expect(hostDeclared(declared, "example.com")).toBe(false);
  });

  it("a name's one trailing dot is the same host on either side; nothing else is loosened", () => {
    // a URL keeps the dot of a fully qualified name (its WHATWG hostname), a policy may have it too
    expect(hostMatches(["api.example.com"], { host: "api.example.com.", port: 443 })).toBe(true);
    expect(hostMatches(["api.example.com."], { host: "API.example.com", port: 443 })).toBe(true);
    expect(hostMatches(["api.example.com:8443"], { host: "api.example.com.", port: 8443 })).toBe(true);
    expect(hostMatches(["api.example.com"], { host: "api.example.com..", port: 443 })).toBe(false);
    expect(hostMatches(["api.example.com"], { host: "api.example.org.", port: 443 })).toBe(false);
    expect(hostMatches(["api.example.com"], { host: "api.example.com.", port: 8443 })).toBe(false);
    expect(hostMatches(["api.example.com"], { host: "evil.api.example.com.", port: 443 })).toBe(false);
    expect(hostMatches(["[::1]:9000"], { host: "[::1]", port: 9000 })).toBe(true);
  });

  it("a Host or an absolute target is forwarded naming the host as matched: one trailing dot dropped, nothing else changed", () => {
    expect(withoutTrailingDot("api.example.com.")).toBe("api.example.com");
    expect(withoutTrailingDot("API.example.com.:8443")).toBe("API.example.com:8443");
    expect(withoutTrailingDot("127.0.0.1.:80")).toBe("127.0.0.1:80");
    // not a name with one dot: left as written (refused elsewhere when it matters)
    for (const same of [
      "api.example.com",
      "api.example.com..",
      "a..:1",
      ".",
      "[::1]:80",
      "u@a.example.",
      "a.example:80.",
    ])
      expect(withoutTrailingDot(same)).toBe(same);
    expect(targetWithoutTrailingDot("http://api.example.com.:8080/p?q=x.")).toBe(
      "http://api.example.com:8080/p?q=x.",
    );
    expect(targetWithoutTrailingDot("HTTPS://api.example.com./")).toBe("HTTPS://api.example.com/");
    expect(targetWithoutTrailingDot("/path.")).toBe("/path.");
    expect(targetWithoutTrailingDot("http://u@api.example.com./")).toBe("http://u@api.example.com./");
  });

  it("another spelling of a declared address is the same host; a lookalike name or another address is not", () => {
    // compared by the address denoted, as the URL parser reads it (never by resolving a name)
    const declared = ["127.0.0.1:8443", "localhost:9000", "[::1]:9001"];
    for (const target of [
      "127.0.0.1:8443",
      "127.1:8443",
      "2130706433:8443",
      "0x7f000001:8443",
      "0177.0.0.1:8443",
      "127.0.0.1.:8443",
      "[::ffff:127.0.0.1]:8443",
      "[::FFFF:7F00:1]:8443",
      "[0:0:0:0:0:ffff:7f00:1]:8443",
      "LOCALHOST.:9000",
      "[0:0:0:0:0:0:0:1]:9001",
      "[0000::0001]:9001",
    ])
      expect(hostMatches(declared, parseAuthority(target)!), target).toBe(true);
    for (const target of [
      "127.0.0.2:8443",
      "0.0.0.0:8443",
      "localhost:8443", // a name, whatever it resolves to
      "127.0.0.1:9000",
      "127.0.0.1..:8443",
      "127.0.0.1.nip.io:8443",
      "127.0.0.1.evil.example:8443",
      "[::127.0.0.1]:8443", // IPv4-compatible: another address
      "[::1]:8443",
      "localhost.localdomain:9000",
      "x.localhost:9000",
      "localhost..:9000",
      "[::ffff:127.0.0.1]:9001",
      "localhost:9001",
      "127.1@evil.example:8443",
      "evil.example@127.0.0.1:8443",
    ]) {
      const dest = parseAuthority(target);
      if (dest !== null) expect(hostMatches(declared, dest), target).toBe(false);
    }
    // a declaration written another way matches the same requests (a stored policy is not rewritten)
    expect(hostMatches(["127.1:8443"], parseAuthority("127.0.0.1:8443")!)).toBe(true);
    expect(hostMatches(["[::ffff:7f00:1]"], { host: "127.0.0.1", port: 443 })).toBe(true);
    expect(hostMatches(["0x7f.1"], { host: "localhost", port: 443 })).toBe(false);
    // what brackets hold is an IPv6 address or nothing (found by egress-host-value.property.test.ts)
    expect(hostMatches(["[127.0.0.1]"], { host: "127.0.0.1", port: 443 })).toBe(false);
    expect(hostDeclared(["[127.0.0.1]:8443"], "127.0.0.1")).toBe(false);
    // the leaf the holder mints: for the address, however it is asked
    expect(hostDeclared(["127.1:8443"], "127.0.0.1")).toBe(true);
    expect(hostDeclared(["127.0.0.1:8443"], "[::ffff:7f00:1]")).toBe(true);
    expect(hostDeclared(["127.0.0.1:8443"], "localhost")).toBe(false);
  });

  it("a declaration is written as requests are matched; one that ends in a number but is no address is refused", () => {
    expect(declaredHost("127.1")).toEqual({ host: "127.0.0.1" });
    expect(declaredHost("0x7F.0.0.1:8443")).toEqual({ host: "127.0.0.1:8443" });
    expect(declaredHost("[::FFFF:127.0.0.1]:8443")).toEqual({ host: "127.0.0.1:8443" });
    expect(declaredHost("[0:0:0:0:0:0:0:1]")).toEqual({ host: "[::1]" });
    for (const bad of ["1.2.3.999", "256.0.0.1", "example.123", "a.0x"])
      expect(declaredHost(bad), bad).toEqual({ problem: "is not a DNS name or an IP address" });
    for (const bad of [
      " a.example",
      "a example",
      "https://a.example",
      "a.example/path",
      "x@a.example",
      "[127.0.0.1]",
    ])
      expect(declaredHost(bad), bad).toHaveProperty("problem");
  });

  it("a Host header naming the destination by another spelling is the destination; a lookalike is misdirection", () => {
    const dest = parseAuthority("127.0.0.1:8443")!;
    for (const host of ["127.1:8443", "[::ffff:7f00:1]:8443", "2130706433:8443"])
      expect(misdirection(dest, "http", "/", ["Host"], [host]), host).toBeNull();
    for (const host of ["localhost:8443", "127.0.0.1.evil.example:8443", "127.0.0.2:8443", "127.1:8444"])
      expect(misdirection(dest, "http", "/", ["Host"], [host]), host).not.toBeNull();
    expect(misdirection(dest, "http", "http://127.1:8443/x", [], [])).toBeNull();
    expect(misdirection(dest, "http", "http://127.1:8443@evil.example/x", [], [])).not.toBeNull();
  });

  it("proxy targets: names and addresses with a port 1-65535, nothing else", () => {
    expect(parseAuthority("api.example.com:443")).toEqual({ host: "api.example.com", port: 443 });
    expect(parseAuthority("API.example.com.:443")).toEqual({ host: "api.example.com", port: 443 });
    expect(parseAuthority("[::1]:8080")).toEqual({ host: "::1", port: 8080 });
    for (const bad of [
      "api.example.com",
      "api.example.com:0",
      "api.example.com:65536",
      "api.example.com:99999",
      "bad_host:443",
      "a b:443",
      "[zz::1]:443",
      ":443",
      "host:443:1",
      `${"a".repeat(64)}.example:443`,
    ])
      expect(parseAuthority(bad), bad).toBeNull();
  });
});
