// `approve --next --json` on a terminal: the question (approve for the session, this call, deny,
// leave it pending) is asked on the terminal as without --json, and the review is shown there
// before it; stdout holds only the JSON result: the decision made, or "left-pending" when the
// human leaves it. The CLI under `script` (a pseudo-terminal standing for the human's), its stdout
// sent to a file as a script would read it; a real gateway in front of the catalog fixture.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cliOnTerminal, hasScript, heldWipe } from "../helpers/scriptTerminal.js";
import { TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe.runIf(hasScript)("approve --next --json on a terminal", () => {
  it("asks on the terminal; stdout holds the JSON result only: left pending, then approved", async () => {
    const { gw, call, req, dir } = await heldWipe(cleanup, "portcullis-next-json-");
    const args = ["approve", "--next", "--json", "--state-dir", gw.stateDir!];

    const leftOut = join(dir, "left.json");
    const left = await cliOnTerminal(args, leftOut, "q");
    expect(left.code, left.screen).toBe(0);
    // the review, before the question, on the terminal
    expect(left.screen.slice(0, left.screen.search(/\[q\] leave it pending/))).toMatch(/tool +wipe on ops/);
    const l = JSON.parse(readFileSync(leftOut, "utf8"));
    expect(l).toMatchObject({
      request: req.request,
      decision: "left-pending",
      tool: "wipe",
      serverLabel: "ops",
    });
    expect(typeof l.picked).toBe("string");

    const out = join(dir, "approved.json");
    const r = await cliOnTerminal(args, out, "c");
    expect(r.code, r.screen).toBe(0);
    expect(r.screen).toContain("To approve this one call of wipe on ops only");
    const a = JSON.parse(readFileSync(out, "utf8"));
    expect(a).toMatchObject({ request: req.request, decision: "approved", for: "call" });
    expect(a.grant.mode).toBe("per-call");
    expect(readFileSync(out, "utf8")).not.toContain(TEST_PASSPHRASE);
    expect((await call).isError).toBeFalsy();
  }, 60_000);
});
