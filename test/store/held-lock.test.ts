// Another process keeps the store's write lock longer than the busy timeout (a database browser
// with an unsaved edit, an sqlite3 shell inside BEGIN): the gateway's own bookkeeping writes (its
// status row's heartbeat, from a timer) fail, and must not take the gateway and its server down.
// Real gateway, real server, a real second process holding the lock.
import { afterEach, describe, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { holdStoreLock } from "../helpers/lock.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

describe("a store locked by another process past the busy timeout", () => {
  it("a gateway, idle and with a call at its server, serves on and catches up once the lock is gone", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval", "none"], { stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    // a call at the server (its intent written) while the lock is taken
    const slow = gw.client.callTool({ name: "slow_write", arguments: {} });
    await waitFor(() => project.counter() === 1, 10_000, "slow_write at the server");

    const lock = await holdStoreLock(stateDir);
    let held = true;
    cleanup.push(() => (held ? lock.release() : undefined));
    // the heartbeat (every 5 s) waits the busy timeout (10 s), then fails: said once, survived
    const said = await gw.waitForStderr(/cannot update this gateway's row in the store/, 40_000);
    expect(said).toContain(stateDir);
    expect(said).toMatch(/locked by another process/);
    await lock.release();
    held = false;
    await gw.waitForStderr(/is writable again/, 30_000);

    project.release();
    expect(text(await slow)).toMatch(/^slow_write released/);
    expect(text(await gw.client.callTool({ name: "read_status", arguments: {} }))).toMatch(/"revision":"A"/);
    expect(gw.stderr()).not.toMatch(/SqliteError|database is locked|internal error/);
    expect(gw.stderr().match(/cannot update this gateway's row/g)).toHaveLength(1);
    const status = await runCli(["status", "--json"], { stateDir });
    const gateways = (JSON.parse(status.stdout) as { gateways: { pid: number }[] }).gateways;
    expect(gateways.map((g) => g.pid)).toEqual([gw.pid]);
  }, 120_000);
});
