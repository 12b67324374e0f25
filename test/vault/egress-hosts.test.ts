// Declared destinations and proxy targets (src/vault/egress/hosts.ts): a host without a port means
// 443 and 80 only; names are compared case-insensitively; a CONNECT target is a DNS name or an IP
// address with a port 1-65535, and nothing else.
import { describe, expect, it } from "vitest";
import { hostDeclared, hostMatches, parseAuthority } from "../../src/vault/egress/hosts.js";

describe("declared hosts", () => {
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
