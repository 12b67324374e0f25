// docs/architecture.md (src/cli/): "a failure line names its command at most once: `portcullis
// run: …` when its sentence starts with the command, else `portcullis: …`". `approve --next`
// with a request pending and no terminal to ask on said "portcullis: approve --next: there is no
// terminal to ask on; …": its sentence starts with the command, and the line read as the
// 'portcullis: CMD: …' form the rule retired. A real gateway in front of the inventory fixture
// holds a call for a human; `approve --next` runs detached (no controlling terminal).
import { afterEach, describe, expect, it } from "vitest";
import { nextRequest, pending } from "../helpers/approvals.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("approve --next without a terminal", () => {
  it("fails with a line that starts 'portcullis approve', never 'portcullis: approve'", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval-timeout", "40000"], { stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    void gw.client.callTool({ name: "read_status", arguments: {} }).catch(() => {});
    const req = await nextRequest(stateDir);

    const r = await runCli(["approve", "--next"], { stateDir, env: passphraseEnv(), noTerminal: true });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toMatch(/no terminal to ask on/);
    expect(r.stderr).not.toMatch(/^portcullis: approve/);
    expect(r.stderr).toMatch(/^portcullis approve --next: there is no terminal to ask on; /);
    expect(r.stdout).toBe("");
    // nothing decided
    expect((await pending(stateDir)).map((p) => p.request)).toEqual([req.request]);
  });
});
