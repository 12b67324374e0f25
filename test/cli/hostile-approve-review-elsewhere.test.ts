import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { cliOnTerminal, hasScript, heldWipe } from "../helpers/scriptTerminal.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe.runIf(hasScript)("approve with its stdout away from the terminal", () => {
  it("shows the review and what is approved on the terminal the passphrase is typed on", async () => {
    const { gw, call, req, dir } = await heldWipe(cleanup, "portcullis-review-elsewhere-");

    const out = join(dir, "stdout.txt");
    const r = await cliOnTerminal(
      ["approve", req.request, "--for", "session", "--state-dir", gw.stateDir!],
      out,
    );
    expect(r.code, r.screen).toBe(0);
    const prompt = r.screen.search(/passphrase to approve/i);
    const before = r.screen.slice(0, prompt);
    expect(before).toContain(`approval request ${req.request}`);
    expect(before).toMatch(/tool +wipe on ops/);
    expect(before).toContain("To approve wipe on ops for this agent run");
    // stdout still has it all, for whoever reads it
    expect(readFileSync(out, "utf8")).toContain(`approved ${req.request}`);
    expect((await call).isError).toBeFalsy();
  }, 60_000);
});
