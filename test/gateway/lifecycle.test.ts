// The supervisor's end states: a crash loop stops with a clear message, `onChange: disconnect`
// ends the client connection, and a rebuilt server that negotiates differently is not edited in
// place — the connection ends so the host re-initializes.
import { writeFileSync } from "node:fs";
import { afterEach, describe, expect, it } from "vitest";
import { readJsonLines, tempDir } from "../helpers/files.js";
import { startInventory } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { makeProject } from "../helpers/project.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("supervision end states", () => {
  it("a crash loop stops with one clear message and exit code 1; every request was answered", async () => {
    const starts = `${tempDir("portcullis-crash-")}/starts.jsonl`;
    const gw: RawPeer = rawGateway({
      args: ["--label", "crashy", "--approval", "none", "--", ...fixtureCommand("crashy")],
      env: { FIXTURE_STARTS: starts },
    });
    cleanup.push(() => gw.close());
    gw.send({
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-11-25", capabilities: {}, clientInfo: { name: "t", version: "1" } },
    });
    const exit = await gw.exited;
    expect(exit.code).toBe(1);
    expect(gw.stderr()).toMatch(/exited with code 1 5 times within 30 s; supervision stopped/);
    expect(readJsonLines(starts)).toHaveLength(5);
    // the initialize was not left hanging
    expect(gw.messages().some((m) => m.id === 1 && m.error)).toBe(true);
  });

  it("onChange disconnect: a rebuild ends the client connection so the host reconnects", async () => {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "none", "--on-change", "disconnect"]);
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    project.rebuild("B");
    const exit = await gw.exited;
    expect(exit.code).toBe(0);
    expect(gw.stderr()).toMatch(/build complete: dist\/server\.js changed/);
    expect(gw.stderr()).toMatch(/onChange: disconnect/);
  });

  it("a restarted server that negotiates different capabilities ends the connection instead of editing it", async () => {
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "none", "--on-change", "restart"]);
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    project.rebuild("A", { resources: true }); // same tools, a new capability
    const exit = await gw.exited;
    expect(exit.code).toBe(0);
    expect(gw.stderr()).toMatch(/negotiated a different protocol version or capabilities/);
  });
});

describe("a catalog that cannot be fetched", () => {
  it("held tools/list and tools/call are answered identity_pending after the hold timeout, never left waiting", async () => {
    const dir = tempDir("portcullis-nolist-");
    const server = `${dir}/server.mjs`;
    // a server that claims tools but refuses to list them
    writeFileSync(
      server,
      `import { createInterface } from "node:readline";
const out = (m) => process.stdout.write(JSON.stringify(m) + "\\n");
createInterface({ input: process.stdin }).on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === "initialize") out({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "nolist", version: "1" } } });
  else out({ jsonrpc: "2.0", id: m.id, error: { code: -32603, message: "listing is broken" } });
});
`,
    );
    const gw: RawPeer = rawGateway({
      args: [
        "--label",
        "nolist",
        "--approval",
        "none",
        "--hold-timeout",
        "800",
        "--",
        process.execPath,
        server,
      ],
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    const list = await gw.request("tools/list", {}, 10_000);
    expect(list.error?.code).toBe(-32053);
    const call = await gw.request("tools/call", { name: "x", arguments: {} }, 10_000);
    expect(call.error?.code).toBe(-32053);
    expect(gw.stderr()).toMatch(/cannot fetch the tool catalog: .*listing is broken/);
  });
});
