// The console's Servers page shows each running gateway as `portcullis status` knows it: its
// server's state, the current epoch with its execution record (command, entry, identity), and its
// status lines, here the ones a rebuild under onChange "report" writes. A real gateway in front of
// the inventory fixture, the real console over HTTP; what the page must say is read from
// `status --json`, never written by the test.
import { afterEach, describe, expect, it } from "vitest";
import { runCli, startGateway } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";
import { httpLogin, raw, startConsoleProcess } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface StatusGateway {
  serverLabel: string;
  state: string;
  epoch: string;
  record: { launchCommand: string[]; identityDigest: string };
}

describe("the console's Servers page", () => {
  it("shows a running gateway's state, its current epoch and execution record, and the status lines a rebuild wrote", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startGateway({
      stateDir,
      args: ["--label", "inventory", "--approval", "none", "--", ...project.command],
      cwd: project.dir,
      env: project.env,
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    project.rebuild("B");
    await gw.waitForStderr(/running server unchanged: /, 10_000);

    const status = await runCli(["status", "--json", "--state-dir", stateDir]);
    expect(status.code).toBe(0);
    const [g] = (JSON.parse(status.stdout) as { gateways: StatusGateway[] }).gateways;
    expect(g?.serverLabel).toBe("inventory");

    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const s = await httpLogin(c.url);
    const page = await raw(`${c.url}/servers`, { headers: { Cookie: s.cookie } });
    expect(page.status).toBe(200);
    const article = /<article class="server">[\s\S]*?<\/article>/.exec(page.body)?.[0] ?? "";
    expect(article).toContain(`inventory <span class="state state-${g!.state}">${g!.state}</span>`);
    expect(article).toContain(`<dt>epoch</dt><dd><code>${g!.epoch}</code>`);
    expect(article).toContain(g!.record.identityDigest);
    expect(article).toContain(g!.record.launchCommand.at(-1)!);
    // the rebuild's status lines, as the gateway wrote them to its stderr
    expect(article).toMatch(/<li[^>]*><time>[^<]+<\/time> build complete: dist\/server\.js changed<\/li>/);
    expect(article).toMatch(
      new RegExp(`<li[^>]*><time>[^<]+</time> running server unchanged: pid=\\d+ epoch=${g!.epoch};`),
    );
  });
});
