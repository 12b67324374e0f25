// `approve` asks for the passphrase on the controlling terminal and prints the review on stdout.
// An agent whose commands share the human's terminal (a host that runs them under the session's
// tty) runs `portcullis approve ID --for session > /dev/null`: the review goes to the agent, and
// the human sees a passphrase prompt appear on their terminal with nothing above it. The
// review must be on the terminal the passphrase is typed on. A real gateway in front of the
// catalog fixture; the CLI under `script` (a pseudo-terminal standing for the human's), its stdout
// sent elsewhere as the agent would.
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

/** `portcullis ARGS > OUT` on a pseudo-terminal; the passphrase typed after its prompt. */
function onTerminal(args: string[], out: string): Promise<{ code: number | null; screen: string }> {
  const command = `${[process.execPath, CLI, ...args].map((a) => `'${a}'`).join(" ")} > '${out}'`;
  const env: Record<string, string | undefined> = { ...process.env, PORTCULLIS_INSECURE_TEST_KDF: "1" };
  delete env.PORTCULLIS_PASSPHRASE_FILE;
  const child = spawn("script", ["-qec", command, "/dev/null"], { env });
  let screen = "";
  let typed = false;
  child.stdout.setEncoding("utf8").on("data", (d: string) => {
    screen += d;
    if (!typed && /passphrase to approve[^\n]*: /i.test(screen)) {
      typed = true;
      setTimeout(() => child.stdin.write(`${TEST_PASSPHRASE}\r`), 50); // after raw mode is on
    }
  });
  return new Promise((resolve) => child.on("exit", (code) => resolve({ code, screen })));
}

describe.runIf(hasScript)("approve with its stdout away from the terminal", () => {
  it("shows the review and what is approved on the terminal the passphrase is typed on", async () => {
    const cat = makeCatalog([
      { name: "wipe", description: "Wipes the disk.", inputSchema: { type: "object" } },
    ]);
    const gw = await startGateway({
      args: ["--label", "ops", "--approval-timeout", "60000", "--", ...fixtureCommand("catalog")],
      env: cat.env,
    });
    const dir = tempDir("portcullis-review-elsewhere-");
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
      () => removeDir(dir),
    );
    await gw.client.listTools();
    const call = gw.client.callTool({ name: "wipe", arguments: {} }, undefined, { timeout: 90_000 });
    call.catch(() => {}); // awaited below
    const req = await nextStoredRequest(gw.stateDir!);

    const out = join(dir, "stdout.txt");
    const r = await onTerminal(
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
