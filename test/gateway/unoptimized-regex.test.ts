// A gateway whose regular expressions V8 compiles unoptimized, as it does by itself in a process
// that has compiled more than 1 MB of regular-expression code (any long-lived gateway) and for a
// pattern over 20 KB: `node --no-regexp-optimization` puts the process in that case from its start.
// Compiled so, `X+`, `{n,}` and `*` over a capturing or alternating group keep a backtracking entry
// per repetition and throw RangeError ("Maximum call stack size exceeded") on a run of a few MiB.
// A client's method and arguments and a server's catalog are as long as a message allows (64 MiB),
// so the run below, 8 MiB long, must give what a fresh optimized process gives. Before each fix:
// the method took the gateway down (an uncaught exception, src/gateway/protocol.ts);
import { afterEach, describe, expect, it } from "vitest";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

const MiB = 1024 * 1024;
const UNOPTIMIZED = ["--no-regexp-optimization"];

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const report: ToolDef = {
  name: "report",
  description: "Make a report.",
  inputSchema: { type: "object", properties: { title: { type: "string" } } },
};

describe("a gateway with its regular expressions compiled unoptimized, over runs of 8 MiB", () => {
  it("a client's method of `tools/call` and 8 MiB of blanks is refused as an unknown method, and the gateway goes on", async () => {
    const cat = makeCatalog([report]);
    const gw = rawGateway({
      args: ["--label", "rx-method", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: cat.env,
      nodeFlags: UNOPTIMIZED,
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    await gw.initialize(undefined, 30_000);
    const method = `tools/call${" ".repeat(8 * MiB)}`;
    const answer = await gw.request(method, { name: "report", arguments: {} }, 60_000);
    expect(answer.error?.code).toBe(-32601);
    expect(answer.error?.message).toMatch(/^Method not found: "tools\/call {2}/);
    expect((await gw.request("ping", undefined, 30_000)).result).toEqual({});
    expect(gw.stderr()).not.toContain("RangeError");
  }, 120_000);

  it("a client's method of 4 MiB of slashes and a letter is answered: trailing slashes are cut by a loop, not tried from every slash", async () => {
    const cat = makeCatalog([report]);
    const gw = rawGateway({
      args: ["--label", "rx-slashes", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: cat.env,
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    await gw.initialize(undefined, 30_000);
    // `\/+$` tried a match from each slash to the end: quadratic, hours for this one, in any process
    const answer = await gw.request(`${"/".repeat(4 * MiB)}x`, {}, 60_000);
    expect(answer.error?.code).toBe(-32601);
  }, 120_000);
});
