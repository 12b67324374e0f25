// A gateway whose regular expressions V8 compiles unoptimized, as it does by itself in a process
// that has compiled more than 1 MB of regular-expression code (any long-lived gateway) and for a
// pattern over 20 KB: `node --no-regexp-optimization` puts the process in that case from its start.
// Compiled so, `X+`, `{n,}` and `*` over a capturing or alternating group keep a backtracking entry
// per repetition and throw RangeError ("Maximum call stack size exceeded") on a run of a few MiB.
// A client's method and arguments and a server's catalog are as long as a message allows (64 MiB),
// so each run below, 5 MiB long, must give what a fresh optimized process gives. Before each fix:
// the method took the gateway down (an uncaught exception, src/gateway/protocol.ts);
// each catalog change left the catalog unserved (catalog_unavailable, src/catalog/text.ts), and
// `portcullis approvals` stopped on an internal error instead of showing the review;
// the call was refused as uncheckable instead of for its error (src/catalog/validator.ts).
// test/unit/regex-loops.test.ts keeps such a loop from coming back anywhere under src/.
import { afterEach, describe, expect, it } from "vitest";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { removeDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

const MiB = 1024 * 1024;
const UNOPTIMIZED = ["--no-regexp-optimization"];
// The RangeError starts at a run of 4 MiB, 64 MiB of entries (measured on node 20 for each
// pattern fixed: `\s+`, `\p{White_Space}+`, `\p{L}+`, `[^\p{L}\p{N}]+`, `^[\x20-\x7e]+$`). 5 MiB is
// past it with room, and each of the gateway's passes over the input (parse, digest, diff, audit)
// costs less than over the 8 MiB these runs were.
const RUN = 5 * MiB;

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

describe("a gateway with its regular expressions compiled unoptimized, over runs of 5 MiB", () => {
  it("a client's method of `tools/call` and 5 MiB of blanks is refused as an unknown method, and the gateway goes on", async () => {
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
    const method = `tools/call${" ".repeat(RUN)}`;
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
  it("a description that becomes 5 MiB of blanks, then of letters, and a property named with 5 MiB of dashes: each revision is served", async () => {
    const cat = makeCatalog([report]);
    const gw = await startGateway({
      args: ["--label", "rx-catalog", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: cat.env,
      nodeFlags: UNOPTIMIZED,
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    await gw.client.listTools();
    const served = async (next: ToolDef) => {
      const from = gw.received().length;
      cat.write([next]);
      await gw.waitForNotification("notifications/tools/list_changed", 60_000, from);
      const { tools } = await gw.client.listTools(undefined, { timeout: 60_000 });
      return tools[0]!;
    };
    // the diff's cosmetic check (whitespace runs), then its effect verbs (words of letters)
    const blanks = `Make a report.${" ".repeat(RUN)}Then send it.`;
    expect((await served({ ...report, description: blanks })).description).toBe(blanks);
    const letters = `Make a report ${"a".repeat(RUN)} and delete it.`;
    expect((await served({ ...report, description: letters })).description).toBe(letters);
    // a new input's name, split into words for the names that look like secrets or destinations
    const dashes = `x${"-".repeat(RUN)}token`;
    const named = await served({
      ...report,
      inputSchema: {
        type: "object",
        properties: { title: { type: "string" }, [dashes]: { type: "string" } },
      },
    });
    expect(Object.keys(named.inputSchema.properties ?? {})).toEqual(["title", dashes]);
    expect(gw.stderr()).not.toContain("cannot fetch the tool catalog");
  }, 240_000);

  it("a call whose argument named by 5 MiB of digits holds a wrong value is refused for that value", async () => {
    const cat = makeCatalog([
      {
        ...report,
        inputSchema: {
          type: "object",
          additionalProperties: { type: "object", properties: { x: { type: "string" } } },
        },
      },
    ]);
    const gw = await startGateway({
      args: ["--label", "rx-field", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: cat.env,
      nodeFlags: UNOPTIMIZED,
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    await gw.client.listTools();
    const result = await gw.client.callTool(
      { name: "report", arguments: { ["1".repeat(RUN)]: { x: 5 } } },
      undefined,
      { timeout: 60_000 },
    );
    const text = JSON.stringify(result.content);
    expect(result.isError).toBe(true);
    expect(text).toContain("Invalid arguments for tool");
    expect(text).not.toContain("could not be checked");
    // the field named as an index, `[111…]` (its error comes after the name, cut short)
    expect(text).toContain('Field \\"[1111');
    expect(cat.records()).toEqual([]);
  }, 120_000);

  it("a call of a tool named by 5 MiB of letters waits for a human: `portcullis approvals` shows its review, with no look-alike warning", async () => {
    const name = `report_${"a".repeat(RUN)}`;
    const cat = makeCatalog([{ ...report, name }]);
    const stateDir = newStateDir();
    const gw = await startGateway({
      stateDir,
      args: [
        "--label",
        "rx-review",
        "--approval",
        "per-call",
        "--approval-timeout",
        "120000",
        "--",
        ...fixtureCommand("catalog"),
      ],
      env: cat.env,
    });
    cleanup.push(
      () => removeDir(stateDir),
      () => gw.close(),
      () => cat.cleanup(),
    );
    await gw.client.listTools(undefined, { timeout: 60_000 });
    const call = gw.client
      .callTool({ name, arguments: { title: "q3" } }, undefined, { timeout: 120_000 })
      .catch(() => null);
    cleanup.push(async () => {
      await gw.close();
      await call;
    });
    // The request is stored before the gateway says so: its line is the event to wait for (no
    // `approvals --json` processes polled; the command that is the subject runs once, below).
    await gw.waitForStderr(/approval needed for .*run in a terminal: portcullis approve /, 60_000);
    // the review is rendered by the command, a process of its own: it runs unoptimized
    const shown = await runCli(["approvals", "--state-dir", stateDir], {
      nodeFlags: UNOPTIMIZED,
      timeoutMs: 60_000,
    });
    expect(shown.stderr).not.toContain("RangeError");
    expect(shown.code).toBe(0);
    expect(shown.stdout).toContain("report_aaaa");
    expect(shown.stdout).not.toContain("not plain ASCII");
  }, 180_000);
});
