// `approvals --watch --json` printed nothing when nothing was pending, so a script could not tell
// a watch that had begun from one still starting. It now says once, on stderr, that it is watching
// and how many requests it told, after their lines; stdout stays one line per change. The real
// CLI: an empty store (nothing on stdout at all), and a real gateway's pending request (its
// "pending" line on stdout, counted in the watching line).
import { afterEach, describe, expect, it } from "vitest";
import { nextRequest } from "../helpers/approvals.js";
import { watchApprovalsJson } from "../helpers/approvalsWatch.js";
import { waitFor } from "../helpers/files.js";
import { startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const WATCHING = "portcullis approvals --watch: watching;";

describe("approvals --watch --json says it began", () => {
  it("with nothing pending: one stderr line saying so, nothing on stdout; Ctrl-C exits 0", async () => {
    const w = watchApprovalsJson(newStateDir(), cleanup);
    await waitFor(() => w.err().includes(WATCHING) || null, 20_000, "the watching line");
    expect(w.err()).toContain(
      "portcullis approvals --watch: watching; no approval request is pending (a line per change follows; Ctrl-C to exit)\n",
    );
    expect(w.out()).toBe("");
    w.child.kill("SIGINT");
    expect(await w.exited).toBe(0);
    expect(w.err().split(WATCHING).length).toBe(2);
  });

  it("with a request pending: its line on stdout, counted in the stderr line", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval-timeout", "40000"], {
      stateDir,
      credentials: true,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    gw.client.callTool({ name: "read_status", arguments: {} }).catch(() => {});
    const { request } = await nextRequest(stateDir);

    const w = watchApprovalsJson(stateDir, cleanup);
    await waitFor(() => w.err().includes(WATCHING) || null, 20_000, "the watching line");
    expect(w.err()).toContain(
      "portcullis approvals --watch: watching; 1 pending approval request(s) told above (a line per change follows; Ctrl-C to exit)\n",
    );
    // (stdout and stderr are two pipes: which this process reads first is not the order written)
    await waitFor(() => w.out().includes("\n") || null, 20_000, "the pending line");
    const lines = w
      .out()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { change: string; request: { request: string } });
    expect(lines).toMatchObject([{ change: "pending", request: { request } }]);
  });
});
