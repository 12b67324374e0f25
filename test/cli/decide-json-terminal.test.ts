// `approve --next --json` on a terminal: the question (approve for the session, this call, deny,
// leave it pending) is asked on the terminal as without --json, and the review is shown there
// before it; stdout holds only the JSON result: the decision made, or "left-pending" when the
// human leaves it. The CLI under `script` (a pseudo-terminal standing for the human's), its stdout
// sent to a file as a script would read it; a real gateway in front of the catalog fixture.
import { spawn, spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { startGateway } from "../helpers/gateway.js";
import { CLI, fixtureCommand } from "../helpers/paths.js";
import { TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const hasScript = spawnSync("script", ["--version"]).status === 0 && process.platform === "linux";

/** `portcullis ARGS > OUT` on a pseudo-terminal: `choice` typed at the question, then the passphrase. */
function onTerminal(
  args: string[],
  out: string,
  choice: string,
): Promise<{ code: number | null; screen: string }> {
  const command = `${[process.execPath, CLI, ...args].map((a) => `'${a}'`).join(" ")} > '${out}'`;
  const env: Record<string, string | undefined> = { ...process.env, PORTCULLIS_INSECURE_TEST_KDF: "1" };
  delete env.PORTCULLIS_PASSPHRASE_FILE;
  const child = spawn("script", ["-qec", command, "/dev/null"], { env });
  let screen = "";
  let chose = false;
  let typed = false;
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    screen += d;
    if (!chose && /\[q\] leave it pending: /.test(screen)) {
      chose = true;
      child.stdin.write(`${choice}\r`);
    }
    if (!typed && /passphrase to approve[^\n]*: /i.test(screen)) {
      typed = true;
      setTimeout(() => child.stdin.write(`${TEST_PASSPHRASE}\r`), 50); // after raw mode is on
    }
  });
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, screen })));
}

describe.runIf(hasScript)("approve --next --json on a terminal", () => {
  it("asks on the terminal; stdout holds the JSON result only: left pending, then approved", async () => {
    const cat = makeCatalog([
      { name: "wipe", description: "Wipes the disk.", inputSchema: { type: "object" } },
    ]);
    const gw = await startGateway({
      args: ["--label", "ops", "--approval-timeout", "60000", "--", ...fixtureCommand("catalog")],
      env: cat.env,
    });
    const dir = tempDir("portcullis-next-json-");
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
      () => removeDir(dir),
    );
    await gw.client.listTools();
    const call = gw.client.callTool({ name: "wipe", arguments: {} }, undefined, { timeout: 90_000 });
    call.catch(() => {}); // awaited below
    const req = await nextStoredRequest(gw.stateDir!);
    const args = ["approve", "--next", "--json", "--state-dir", gw.stateDir!];

    const leftOut = join(dir, "left.json");
    const left = await onTerminal(args, leftOut, "q");
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
    const r = await onTerminal(args, out, "c");
    expect(r.code, r.screen).toBe(0);
    expect(r.screen).toContain("To approve this one call of wipe on ops only");
    const a = JSON.parse(readFileSync(out, "utf8"));
    expect(a).toMatchObject({ request: req.request, decision: "approved", for: "call" });
    expect(a.grant.mode).toBe("per-call");
    expect(readFileSync(out, "utf8")).not.toContain(TEST_PASSPHRASE);
    expect((await call).isError).toBeFalsy();
  }, 60_000);
});
