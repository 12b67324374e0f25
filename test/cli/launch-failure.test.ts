// A wrapped server that cannot be launched (a typo in its path, a host that gives no PATH) must
// end the gateway at once with one sentence, while the host still holds its input open: a host
// waits for an answer to its `initialize` and would otherwise time out a minute later with
// nothing to show. The real CLI, its input left open as a host leaves it.
import { spawn } from "node:child_process";
import { describe, expect, it } from "vitest";
import { hostEnv } from "../helpers/gateway.js";
import { CLI, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

function runHeldOpen(args: string[], env: Record<string, string>, cwd?: string) {
  const child = spawn(NODE, [CLI, ...args], { env, cwd, stdio: ["pipe", "pipe", "pipe"] });
  let stderr = "";
  let stdout = "";
  child.stderr.on("data", (c: Buffer) => {
    stderr += c.toString();
  });
  child.stdout.on("data", (c: Buffer) => {
    stdout += c.toString();
  });
  child.stdin.on("error", () => {});
  // what a host sends first; the input is never ended
  child.stdin.write(
    `${JSON.stringify({ jsonrpc: "2.0", id: 0, method: "initialize", params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "host", version: "1" } } })}\n`,
  );
  return new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) => {
    child.on("close", (code) => resolve({ code, stderr, stdout }));
  }).finally(() => child.stdin.destroy());
}

describe("a server that cannot be launched", () => {
  it("ends the gateway with a sentence while its input is still open (a missing entry, from /)", async () => {
    const stateDir = newStateDir();
    const r = await runHeldOpen(
      ["run", "--label", "typo", "--", "node", "/nonexistent/server.js"],
      hostEnv({ PORTCULLIS_HOME: stateDir }),
      "/",
    );
    expect(r.code).toBe(2);
    // absolute from the root: "nonexistent/server.js" would send the user looking elsewhere
    expect(r.stderr).toContain("cannot read the entry file /nonexistent/server.js (it does not exist).");
    expect(r.stderr).not.toMatch(/internal error/);
  }, 30_000);

  it("ends the gateway when the command is not on the host's PATH", async () => {
    const stateDir = newStateDir();
    const env = { ...hostEnv({ PORTCULLIS_HOME: stateDir }), PATH: "/nonexistent-bin" };
    const r = await runHeldOpen(["run", "--label", "nopath", "--", "node", "server.js"], env);
    expect(r.code).toBe(2);
    // lower case after the prefix, as every other sentence of run ("cannot read the entry file …")
    expect(r.stderr).toMatch(/^portcullis run: cannot find the command "node" on PATH/m);
  }, 30_000);
});
