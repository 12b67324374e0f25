// `portcullis demo --console`: the story with the console open, its decisions made through it.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";

describe("portcullis demo --console", () => {
  it("prints the console's URL, decides through it, and the story ends as without it", async () => {
    // The cheap key derivation the suite sets (vitest.config.ts), passed on: runCli gives a child
    // only a host's minimal environment, and the demo's keyring (made in-process, with the
    // parameters every later unlock reads from it) then took the real scrypt cost at each of its
    // derivations. The story checked below does not depend on what the derivation costs.
    const r = await runCli(["demo", "--console"], {
      timeoutMs: 120_000,
      env: { PORTCULLIS_INSECURE_TEST_KDF: "1" },
    });
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    const url = /console: (http:\/\/127\.0\.0\.1:\d+) /.exec(r.stdout)?.[1];
    expect(url).toBeDefined();
    // the gateway found the live console and said where the request is decided
    expect(r.stdout).toContain(`review and decide it in the console: ${url}/requests/`);
    const decided = r.stdout.match(/approved for the session in the console: \S+\/requests\/\w+/g) ?? [];
    expect(decided).toHaveLength(2);
    expect(r.stdout).toMatch(/authorization_stale/);
    expect(r.stdout).toMatch(/revision=B/);
    expect(r.stdout).toMatch(/audit verify: ok/);
    // the demo's key shares a word with its server's label: the gateway's lines keep their name
    expect(r.stdout).toContain("portcullis[inventory-api-demo]");
    expect(r.stdout).not.toMatch(/portcullis\[[^\]\n]*\[redacted/);
    expect(r.stdout).toContain(`(the console at ${url} is closed)`);
  });
});
