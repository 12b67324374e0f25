// The fixture servers and test helpers, exercised directly (no gateway): each fixture behaves
// as its header says, so gateway tests can rely on it.
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { DELETE_ENVIRONMENT, makeCatalog, numberedTools } from "./helpers/catalog.js";
import { readJsonLines, removeDir, sleep, tempDir, waitFor } from "./helpers/files.js";
import { startDirect, startModernDirect } from "./helpers/gateway.js";
import { EVERYTHING, FILESYSTEM, FIXTURES, MEMORY, NODE } from "./helpers/paths.js";
import { IGNORES_CANCEL, INVENTORY_KEY, makeProject, type Project } from "./helpers/project.js";
import { rawPeer } from "./helpers/raw.js";

type Closer = { close(): Promise<void> } | { cleanup(): void };
const open: Closer[] = [];
function track<T extends Closer>(thing: T): T {
  open.push(thing);
  return thing;
}
afterEach(async () => {
  for (const thing of open.splice(0).reverse()) {
    if ("close" in thing) await thing.close().catch(() => {});
    else thing.cleanup();
  }
});

// biome-ignore lint/suspicious/noExplicitAny: tool results are checked loosely
const textOf = (result: any): string => result.content?.[0]?.text ?? "";

async function startProject(project: Project, env: Record<string, string> = {}) {
  return track(
    await startDirect(
      project.command[0],
      project.command.slice(1),
      { ...project.env, ...env },
      { cwd: project.dir },
    ),
  );
}

describe("revisioned fixture (via makeProject)", () => {
  it("revision A lists the four tools and enforces the credential on adjust_inventory", async () => {
    const project = track(makeProject("A"));
    const server = await startProject(project);
    const { tools } = await server.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(["read_status", "adjust_inventory", "slow_write", "crash_now"]);
    const adjust = tools.find((t) => t.name === "adjust_inventory")!;
    expect(adjust.inputSchema.required).toEqual(["sku"]);
    expect(tools.find((t) => t.name === "read_status")!.annotations?.readOnlyHint).toBe(true);

    const refused = await server.client.callTool({
      name: "adjust_inventory",
      arguments: { sku: "X1", delta: 2 },
    });
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/INVENTORY_API_KEY/);
    const status = JSON.parse(textOf(await server.client.callTool({ name: "read_status", arguments: {} })));
    expect(status).toMatchObject({ revision: "A", pid: expect.any(Number), dependency: "fixture-dep 1.0.0" });

    const records = project.records();
    expect(records.map((r) => [r.revision, r.tool, r.ok])).toEqual([
      ["A", "adjust_inventory", false],
      ["A", "read_status", true],
    ]);
    expect(records[0]!.credential).toBeNull();
    expect(records[0]!.args).toEqual({ sku: "X1", delta: 2 });
  });

  it("with the credential, A accepts {sku, delta}; the record holds a digest, never the key", async () => {
    const project = track(makeProject("A"));
    const server = await startProject(project, project.credentialEnv);
    const result = await server.client.callTool({
      name: "adjust_inventory",
      arguments: { sku: "X1", delta: -1 },
    });
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toBe("revision A: X1 adjusted by -1");
    const [record] = project.records();
    expect(record).toMatchObject({ revision: "A", tool: "adjust_inventory", ok: true, pid: server.pid });
    expect(record!.credential).toMatch(/^[0-9a-f]{12}$/);
    expect(readFileSync(project.recordFile, "utf8")).not.toContain(INVENTORY_KEY);
  });

  it("rebuild to B changes the entry and adds the required warehouse; C keeps B's list byte for byte", async () => {
    const project = track(makeProject("A"));
    const entryA = readFileSync(project.entry, "utf8");
    project.rebuild("B");
    const entryB = readFileSync(project.entry, "utf8");
    expect(entryB).not.toBe(entryA);
    const b = await startProject(project, project.credentialEnv);
    const toolsB = (await b.client.listTools()).tools;
    expect(toolsB.find((t) => t.name === "adjust_inventory")!.inputSchema.required).toEqual([
      "sku",
      "warehouse",
    ]);
    const missing = await b.client.callTool({ name: "adjust_inventory", arguments: { sku: "X1", delta: 1 } });
    expect(missing.isError).toBe(true);
    await b.client.callTool({
      name: "adjust_inventory",
      arguments: { sku: "X1", delta: 1, warehouse: "W9" },
    });
    await b.close();

    project.rebuild("C");
    expect(readFileSync(project.entry, "utf8")).not.toBe(entryB);
    const c = await startProject(project, project.credentialEnv);
    const toolsC = (await c.client.listTools()).tools;
    expect(JSON.stringify(toolsC)).toBe(JSON.stringify(toolsB));
    await c.client.callTool({
      name: "adjust_inventory",
      arguments: { sku: "X1", delta: 1, warehouse: "W9" },
    });
    expect(project.records().map((r) => [r.revision, r.ok])).toEqual([
      ["B", false],
      ["B", true],
      ["C", true],
    ]);
    expect(project.revision()).toBe("C");
  });

  it("changeDependency changes what the server runs while dist/server.js stays identical", async () => {
    const project = track(makeProject("A"));
    const entry = readFileSync(project.entry);
    project.changeDependency("fixture-dep 2.0.0 (patched)");
    expect(readFileSync(project.entry).equals(entry)).toBe(true);
    const server = await startProject(project);
    const status = JSON.parse(textOf(await server.client.callTool({ name: "read_status", arguments: {} })));
    expect(status.dependency).toBe("fixture-dep 2.0.0 (patched)");
  });

  it("slow_write counts before waiting: killed while pending, it ran exactly once", async () => {
    const project = track(makeProject("A"));
    const server = await startProject(project, { FIXTURE_SLOW_TIMEOUT_MS: "20000" });
    const pending = server.client.callTool({ name: "slow_write", arguments: { note: "once" } });
    pending.catch(() => {});
    await waitFor(() => project.counter() === 1, 5_000, "counter = 1");
    server.kill("SIGKILL");
    await server.exited;
    await expect(pending).rejects.toThrow();
    expect(project.counter()).toBe(1);
    expect(project.records().filter((r) => r.tool === "slow_write")).toHaveLength(1);
  });

  it("slow_write finishes when the release file appears", async () => {
    const project = track(makeProject("B"));
    const server = await startProject(project);
    const pending = server.client.callTool({ name: "slow_write", arguments: {} });
    await waitFor(() => project.counter() === 1, 5_000, "counter = 1");
    project.release();
    expect(textOf(await pending)).toBe("slow_write released: revision B count 1");
  });

  it("records the id each call came under and the cancellations it received; obeys them unless the note says not to", async () => {
    const project = track(makeProject("B"));
    const peer = track(
      rawPeer(project.command[0], project.command.slice(1), project.env, { cwd: project.dir }),
    );
    await peer.request("initialize", {
      protocolVersion: "2025-06-18",
      capabilities: {},
      clientInfo: { name: "fixture-test", version: "1.0.0" },
    });
    peer.send({ jsonrpc: "2.0", method: "notifications/initialized" });
    const call = (id: number, note: string) =>
      peer.send({
        jsonrpc: "2.0",
        id,
        method: "tools/call",
        params: { name: "slow_write", arguments: { note } },
      });
    call(7, "obeys");
    call(8, `deaf${IGNORES_CANCEL}`);
    await waitFor(() => project.records().length === 2, 5_000, "both calls received");
    expect(project.records().map((r) => [r.requestId, r.args.note])).toEqual([
      [7, "obeys"],
      [8, `deaf${IGNORES_CANCEL}`],
    ]);
    for (const requestId of [7, 8, 9])
      peer.send({ jsonrpc: "2.0", method: "notifications/cancelled", params: { requestId } });
    await waitFor(() => project.cancellations().length === 3, 5_000, "three cancellations");
    project.release();
    await peer.next((m) => m.id === 8);
    // the obeyed one is never answered: a call sent after it is, and nothing came under 7 before
    call(10, "after");
    await peer.next((m) => m.id === 10);
    expect(peer.messages().filter((m) => m.id === 7)).toEqual([]);
    expect(project.cancellations().map((c) => [c.requestId, c.waiting, c.ignored])).toEqual([
      [7, true, false],
      [8, true, true],
      [9, false, false],
    ]);
  });

  it("crash_now exits with code 3 without answering", async () => {
    const project = track(makeProject("A"));
    const server = await startProject(project);
    await expect(server.client.callTool({ name: "crash_now", arguments: {} })).rejects.toThrow();
    expect((await server.exited).code).toBe(3);
  });

  it("the resources build option changes the declared capabilities; the wrapper script starts the server", async () => {
    const project = track(makeProject("A", { resources: true }));
    const server = track(await startDirect(project.wrapper, [], project.env, { cwd: project.dir }));
    expect(server.client.getServerCapabilities()).toMatchObject({ tools: {}, resources: {} });
    const status = JSON.parse(textOf(await server.client.callTool({ name: "read_status", arguments: {} })));
    expect(status.revision).toBe("A");
  });
});

describe("catalog fixture", () => {
  it("pages 3×N tools in 3 pages with cursors, and rejects a cursor it never issued", async () => {
    const catalog = track(makeCatalog(numberedTools("t", 12), { pageSize: 4 }));
    const server = track(await startDirect(NODE, [FIXTURES.catalog], catalog.env));
    const pages: string[][] = [];
    let cursor: string | undefined;
    do {
      const page = await server.client.listTools(cursor === undefined ? {} : { cursor });
      pages.push(page.tools.map((t) => t.name));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    expect(pages).toHaveLength(3);
    expect(pages.flat()).toEqual(numberedTools("t", 12).map((t) => t.name));
    await expect(server.client.listTools({ cursor: "bogus" })).rejects.toThrow(/invalid cursor/);
  });

  it("answers delete_environment after it was dropped from the list, and records every call", async () => {
    const catalog = track(makeCatalog([DELETE_ENVIRONMENT, ...numberedTools("t", 1)]));
    const server = track(await startDirect(NODE, [FIXTURES.catalog], catalog.env));
    expect((await server.client.listTools()).tools.map((t) => t.name)).toContain("delete_environment");
    const mark = server.received().length;
    catalog.write(numberedTools("t", 1));
    await server.waitForNotification("notifications/tools/list_changed", 5_000, mark);
    expect((await server.client.listTools()).tools.map((t) => t.name)).toEqual(["t_0"]);
    const result = await server.client.callTool({
      name: "delete_environment",
      arguments: { environment: "prod" },
    });
    expect(JSON.parse(textOf(result))).toMatchObject({
      tool: "delete_environment",
      args: { environment: "prod" },
    });
    expect(catalog.records()).toEqual([
      {
        tool: "delete_environment",
        args: { environment: "prod" },
        pid: expect.any(Number),
        at: expect.any(String),
      },
    ]);
  });

  it("stays silent on changes with FIXTURE_NOTIFY=0 (the list still changes)", async () => {
    const catalog = track(makeCatalog(numberedTools("a", 2), { notify: false }));
    const server = track(await startDirect(NODE, [FIXTURES.catalog], catalog.env));
    catalog.write(numberedTools("b", 3));
    await sleep(400);
    expect(server.notifications("notifications/tools/list_changed")).toHaveLength(0);
    expect((await server.client.listTools()).tools.map((t) => t.name)).toEqual(["b_0", "b_1", "b_2"]);
  });
});

describe("modern fixture (2026-07-28)", () => {
  it("negotiates 2026-07-28 with the v2 client: discover, envelope, paging, listen stream", async () => {
    const catalog = track(makeCatalog(numberedTools("m", 6), { pageSize: 2 }));
    const server = track(
      await startModernDirect(NODE, [FIXTURES.modern], catalog.env, { negotiation: "pin" }),
    );
    expect(server.client.getProtocolEra()).toBe("modern");
    expect(server.client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    // The session process never saw server/discover: that went to a probe sibling.
    expect(server.sent().some((m) => m.method === "server/discover" || m.method === "initialize")).toBe(
      false,
    );
    const { tools } = await server.client.listTools();
    expect(tools.map((t) => t.name)).toEqual(numberedTools("m", 6).map((t) => t.name));
    const lists = server.sent().filter((m) => m.method === "tools/list");
    expect(lists).toHaveLength(3);
    expect(lists[0]!.params._meta["io.modelcontextprotocol/protocolVersion"]).toBe("2026-07-28");

    const result = await server.client.callTool({ name: "not_listed", arguments: { a: 1 } });
    expect(JSON.parse(textOf(result))).toMatchObject({ tool: "not_listed", era: "modern" });

    const subscription = await server.client.listen({ toolsListChanged: true });
    expect(subscription.honoredFilter).toEqual({ toolsListChanged: true });
    const listenId = server.sent().find((m) => m.method === "subscriptions/listen")!.id;
    const mark = server.received().length;
    catalog.write(numberedTools("n", 1));
    const note = await server.waitForNotification("notifications/tools/list_changed", 5_000, mark);
    expect(note.params._meta["io.modelcontextprotocol/subscriptionId"]).toBe(listenId);
    await subscription.close();
  });

  it("serves a legacy v1 client too, unless FIXTURE_LEGACY=reject", async () => {
    const server = track(await startDirect(NODE, [FIXTURES.modern], {}));
    const result = await server.client.callTool({ name: "echo", arguments: { text: "hi" } });
    expect(JSON.parse(textOf(result))).toMatchObject({ tool: "echo", era: "legacy" });
    await expect(
      startDirect(NODE, [FIXTURES.modern], { FIXTURE_LEGACY: "reject" }, { connectTimeoutMs: 5_000 }),
    ).rejects.toThrow(/Unsupported protocol version/);
  });

  it("falls back to legacy with the v2 client in auto mode against a legacy-only server", async () => {
    const catalog = track(makeCatalog(numberedTools("l", 2)));
    const server = track(await startModernDirect(NODE, [FIXTURES.catalog], catalog.env));
    expect(server.client.getProtocolEra()).toBe("legacy");
    expect(server.sent()[0]!.method).toBe("initialize");
  });
});

describe("badpeer fixture", () => {
  const expectMisbehaviour = (lines: string[]) => {
    expect(lines[0]).toMatch(/^\{"jsonrpc":"2.0","method":"notifications\/message","params":\{"level":$/);
    expect(lines[1]!.length).toBeGreaterThan(5 * 1024 * 1024);
    expect(JSON.parse(lines[1]!).method).toBe("notifications/message");
    expect(lines[2]).toBe('{"hello":1}');
    expect(JSON.parse(lines[3]!)).toMatchObject({ id: 987654321, result: {} });
    expect(JSON.parse(lines[4]!)).toMatchObject({ id: "never-sent", result: {} });
    expect(Array.isArray(JSON.parse(lines[5]!))).toBe(true);
    // 100,000 levels each: JSON.parse reads them, nothing recursive could walk them
    expect(lines[6]!.length).toBeGreaterThan(200_000);
    expect(JSON.parse(lines[6]!).method).toBe("notifications/message");
    expect(JSON.parse(lines[7]!)).toMatchObject({ id: "deep-request", method: "sampling/createMessage" });
  };

  it("with FIXTURE_BAD=all, writes the bad lines right after initialize and then answers normally", async () => {
    const peer = track(rawPeer(NODE, [FIXTURES.badpeer], { FIXTURE_BAD: "all" }));
    await peer.initialize();
    const list = await peer.request("tools/list");
    expect(list.result.tools.map((t: { name: string }) => t.name)).toEqual([
      "echo",
      "deep",
      "answer-badly",
      "misbehave",
    ]);
    const lines = peer.lines();
    expect(JSON.parse(lines[0]!).result.serverInfo.name).toBe("badpeer-fixture");
    expectMisbehaviour(lines.slice(1, 9));
    expect(JSON.parse(lines[9]!).result.tools).toHaveLength(4);
  });

  it("misbehaves on a tools/call, then answers that call and the next ones", async () => {
    const peer = track(rawPeer(NODE, [FIXTURES.badpeer], {}));
    await peer.initialize();
    const before = peer.lines().length;
    const answer = await peer.request("tools/call", { name: "misbehave", arguments: {} });
    expect(answer.result.content[0].text).toBe("misbehaved: malformed,huge,nonjsonrpc,unknown-id,batch,deep");
    expectMisbehaviour(peer.lines().slice(before));
    const deep = await peer.request("tools/call", { name: "deep", arguments: { depth: 3 } });
    expect(deep.result.structuredContent).toEqual({ deep: [[[]]] });
    const echo = await peer.request("tools/call", { name: "echo", arguments: { text: "still here" } });
    expect(echo.result.content[0].text).toBe("still here");
    // the line comes on stderr, what was awaited on another pipe (or the store, or the exit): read in either order
    await waitFor(
      () => peer.stderr().includes("writing huge"),
      20_000,
      "the fixture's line on the huge write",
    );
    expect(peer.stderr()).toContain("writing huge");
  });
});

describe("crashy, echo and watcher fixtures", () => {
  it("crashy exits with code 1 at once, counting starts", async () => {
    const dir = tempDir();
    track({ cleanup: () => removeDir(dir) });
    const starts = join(dir, "starts.jsonl");
    const peer = track(rawPeer(NODE, [FIXTURES.crashy], { FIXTURE_STARTS: starts }));
    expect((await peer.exited).code).toBe(1);
    expect(readJsonLines(starts)).toHaveLength(1);
  });

  it("crashy with FIXTURE_CRASH_AFTER_MS serves MCP, then exits with FIXTURE_EXIT_CODE", async () => {
    const peer = track(
      rawPeer(NODE, [FIXTURES.crashy], { FIXTURE_CRASH_AFTER_MS: "600", FIXTURE_EXIT_CODE: "7" }),
    );
    const init = await peer.initialize();
    expect(init.result.serverInfo.name).toBe("crashy-fixture");
    expect((await peer.request("tools/list")).result.tools[0].name).toBe("noop");
    expect((await peer.exited).code).toBe(7);
  });

  it("echo answers like server-everything's echo", async () => {
    const server = track(await startDirect(NODE, [FIXTURES.echo]));
    const result = await server.client.callTool({ name: "echo", arguments: { message: "hi" } });
    expect(textOf(result)).toBe("Echo: hi");
  });

  it("watcher replaces its child on rebuild while the client's pipe stays open", async () => {
    const project = track(makeProject("A"));
    const starts = join(project.dir, "state", "starts.jsonl");
    const server = track(
      await startDirect(
        NODE,
        [FIXTURES.watcher, "--watch", project.entry, "--replay-initialize", "--", NODE, project.entry],
        { ...project.env, FIXTURE_STARTS: starts },
        { cwd: project.dir },
      ),
    );
    const first = JSON.parse(textOf(await server.client.callTool({ name: "read_status", arguments: {} })));
    expect(first.revision).toBe("A");
    project.rebuild("B");
    await waitFor(() => readJsonLines(starts).length === 2, 10_000, "a second child");
    const second = JSON.parse(
      textOf(
        await server.client.callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 10_000 }),
      ),
    );
    expect(second.revision).toBe("B");
    expect(second.pid).not.toBe(first.pid);
    const pids = readJsonLines<{ watcher: number; pid: number }>(starts);
    expect(pids.every((s) => s.watcher === server.pid)).toBe(true);
    expect(pids.map((s) => s.pid)).toEqual([first.pid, second.pid]);
  });
});

describe("npm reference servers (paths.ts)", () => {
  it("server-everything, server-filesystem and server-memory start on stdio from their entry files", async () => {
    const everything = track(await startDirect(NODE, EVERYTHING.args()));
    expect((await everything.client.listTools()).tools.map((t) => t.name)).toContain("echo");
    const dir = tempDir();
    track({ cleanup: () => removeDir(dir) });
    const filesystem = track(await startDirect(NODE, FILESYSTEM.args(dir)));
    expect((await filesystem.client.listTools()).tools.map((t) => t.name)).toContain("read_text_file");
    const memory = track(await startDirect(NODE, MEMORY.args(), MEMORY.env(join(dir, "memory.jsonl"))));
    expect((await memory.client.listTools()).tools.map((t) => t.name)).toContain("create_entities");
  });
});
