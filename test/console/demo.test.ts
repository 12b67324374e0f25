// `portcullis demo --console`: the story with the console open, its decisions made through it.
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";

describe("portcullis demo --console", () => {
  it("prints the console's URL, decides through it, and the story ends as without it", async () => {
    const r = await runCli(["demo", "--console"], { timeoutMs: 120_000 });
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
