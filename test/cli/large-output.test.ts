// A command's output larger than a pipe holds reaches its reader whole. Node writes to a pipe
// asynchronously, and the CLI ends with process.exit: what the pipe (64 KiB) had not taken yet
// was dropped, so `portcullis catalog show LABEL --json | jq` got the first 65,536 bytes of a
// server with a large catalog, cut mid-string, and exit 0. And a reader that goes away first
// (`| head`) is one sentence and exit 2, not an internal error with a stack (audit export's
// EPIPE) or exit 0 over a cut result. Real gateway, real CLI processes over real pipes.
import { spawn } from "node:child_process";
import { afterEach, describe, expect, it } from "vitest";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { CLI, fixtureCommand, NODE } from "../helpers/paths.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** 300 tools of about 1 KB each: a catalog as large as a big real server's (GitHub's has ~100 with long schemas). */
const TOOLS: ToolDef[] = Array.from({ length: 300 }, (_, i) => ({
  name: `tool_${i}`,
  description: `Tool ${i}. ${"Does one thing well and says so at length. ".repeat(24)}`,
  inputSchema: { type: "object", properties: { path: { type: "string", description: "Where." } } },
}));

/** The CLI with a reader that takes its stdout only once it exited, or after 3 s. */
function slowReader(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(NODE, [CLI, ...args], { stdio: ["ignore", "pipe", "pipe"] });
  child.stdout.pause();
  let stdout = "";
  let stderr = "";
  // decoded as streams: a chunk can end inside a character of several bytes
  child.stderr.setEncoding("utf8").on("data", (c: string) => {
    stderr += c;
  });
  child.stdout.setEncoding("utf8");
  const resume = () => {
    child.stdout.on("data", (c: string) => {
      stdout += c;
    });
    child.stdout.resume();
  };
  const timer = setTimeout(resume, 3000);
  child.once("exit", () => {
    if (timer.hasRef()) {
      clearTimeout(timer);
      resume();
    }
  });
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

describe("output larger than a pipe", () => {
  it("reaches the reader whole (--json parses), and a reader gone first is exit 2 in one sentence", async () => {
    const cat = makeCatalog(TOOLS);
    const gw = await startGateway({
      args: ["--label", "big", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: cat.env,
    });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
    );
    const stateDir = gw.stateDir!;
    expect((await gw.client.listTools()).tools).toHaveLength(300);

    // A reader that does not keep up (`| less`, a shell loop, a busy machine): it starts reading
    // when the command has exited, or after 3 s if the command waits for it. Cut short, the
    // command had exited with 64 KiB in the pipe and the rest dropped.
    const json = await slowReader(["catalog", "show", "big", "--json", "--state-dir", stateDir]);
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout.length).toBeGreaterThan(4 * 65_536);
    // whole: it parses (cut short, it ended mid-string)
    const shown = JSON.parse(json.stdout);
    expect(shown.tools).toHaveLength(300);
    expect(shown.tools.at(-1).tool.name).toBe("tool_299");
    const text = await runCli(["catalog", "show", "big"], { stateDir });
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("tool_299");
    expect(text.stdout.length).toBeGreaterThan(65_536);

    // the reader closes its end after the first bytes
    const child = spawn(NODE, [CLI, "catalog", "show", "big", "--json", "--state-dir", stateDir], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    child.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    child.stdout.once("data", () => child.stdout.destroy());
    const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
    expect(stderr).not.toMatch(/internal error|EPIPE|\n\s+at /);
    expect(stderr).toBe(
      "portcullis catalog show: standard output was closed by its reader before everything was written; what it received is incomplete.\n",
    );
    expect(code).toBe(2);
  });
});
