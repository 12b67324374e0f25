// `run --url` against @modelcontextprotocol/server-everything in its own Streamable HTTP mode
// (`index.js streamableHttp`, PORT from the environment): list and call through the guard, with
// a human approval given through the real CLI.
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { decideByCli, nextRequest, pending } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { EVERYTHING, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

async function everythingOverHttp(): Promise<{ url: string; proc: ChildProcess }> {
  const port = await freePort();
  const proc = spawn(NODE, [EVERYTHING.entry, "streamableHttp"], {
    env: { PATH: process.env.PATH ?? "", PORT: String(port) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  proc.stderr!.on("data", (b: Buffer) => {
    err += b.toString();
  });
  cleanup.push(async () => {
    if (proc.exitCode === null) {
      const gone = new Promise((resolve) => proc.once("exit", resolve));
      proc.kill("SIGKILL");
      await gone;
    }
  });
  await waitFor(() => /listening on port/.test(err), 20_000, "server-everything to listen");
  return { url: `http://127.0.0.1:${port}/mcp`, proc };
}

describe("run --url against server-everything (Streamable HTTP)", () => {
  it("lists and calls through the guard; the first call of the run waits for a human", async () => {
    const everything = await everythingOverHttp();
    const stateDir = newStateDir();
    const gw = await startGateway({
      args: ["--url", everything.url, "--label", "everything", "--approval-timeout", "30000"],
      stateDir,
    });
    cleanup.push(() => gw.close());
    const tools = (await gw.client.listTools()).tools.map((t) => t.name);
    expect(tools).toContain("echo");

    const call = gw.client.callTool({ name: "echo", arguments: { message: "through the guard" } });
    const req = await nextRequest(stateDir);
    expect(req.tool).toBe("echo");
    expect(req.serverLabel).toBe("everything");
    await decideByCli(stateDir, "approve", req.request, "--for", "session");
    const result = (await call) as { content: { text: string }[] };
    expect(result.content[0]!.text).toContain("through the guard");
    // the session grant covers the next call: no new request
    await gw.client.callTool({ name: "echo", arguments: { message: "again" } });
    expect(await pending(stateDir)).toEqual([]);

    const status = JSON.parse((await runCli(["status", "--json", "--state-dir", stateDir])).stdout)
      .gateways[0];
    expect(status.record.remote).toMatchObject({ url: everything.url, certificateChainSha256: null });
    expect(status.record.remote.serverInfo.name).toMatch(/everything/i);
  });
});
