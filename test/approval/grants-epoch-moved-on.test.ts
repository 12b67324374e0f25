// A restart makes the run's grants of the old epoch invalid at once (identity-pending: epoch B,
// grants for A invalid), though the grant row ends only at the run's next call that needs an
// approval (step 2 refuses it authorization_stale then). Between the two, `portcullis grants`
// still lists it, and says that its server now runs another epoch and that it covers none of
// that code's calls: a human reading the list is not to take the new code for approved. Real
// gateway, the revisioned fixture server rebuilt under onChange restart, approvals and the list
// by the real CLI, and the console's Grants page over HTTP.
import { afterEach, describe, expect, it } from "vitest";
import { httpLogin, raw, startConsoleProcess } from "../console/helpers.js";
import { decideByCli, nextStoredRequest } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const text = (r: unknown) => (r as { content: { text: string }[] }).content[0]!.text;

interface ListedGrant {
  grant: string;
  executionEpoch: string;
  serverEpoch: string | null;
}

async function grants(stateDir: string): Promise<{ json: ListedGrant[]; text: string }> {
  const json = await runCli(["grants", "--json", "--state-dir", stateDir]);
  expect(json.code, json.stderr).toBe(0);
  const shown = await runCli(["grants", "--state-dir", stateDir]);
  expect(shown.code, shown.stderr).toBe(0);
  return { json: (JSON.parse(json.stdout) as { grants: ListedGrant[] }).grants, text: shown.stdout };
}

describe("portcullis grants after the server's epoch changed", () => {
  it("lists the old epoch's grant with the epoch its server runs now, saying it covers none of its calls, until the run's next call ends it", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--on-change", "restart"], { stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const first = gw.client.callTool({ name: "read_status", arguments: {} }, undefined, { timeout: 120_000 });
    const request = await nextStoredRequest(stateDir);
    expect((await decideByCli(stateDir, "approve", request.request, "--for", "session")).code).toBe(0);
    expect(text(await first)).toMatch(/"revision":"A"/);
    const epochA = request.executionEpoch;

    // under epoch A the grant is listed as it is: nothing more to say
    const before = await grants(stateDir);
    expect(before.json).toEqual([expect.objectContaining({ executionEpoch: epochA, serverEpoch: epochA })]);
    expect(before.text).not.toMatch(/now runs epoch/);

    const from = gw.stderr().length;
    project.rebuild("B");
    const epochB = await waitFor(
      () => /new execution epoch: .* epoch=(\w+) \(was \w+; restart\)/.exec(gw.stderr().slice(from))?.[1],
      30_000,
      "epoch B",
    );
    // the status row names B once the gateway wrote it (its own writes, not the test's wait)
    const after = await waitFor(
      async () => {
        const g = await grants(stateDir);
        return g.json[0]?.serverEpoch === epochB ? g : undefined;
      },
      30_000,
      "the grant listed with epoch B",
    );
    expect(after.json).toEqual([expect.objectContaining({ executionEpoch: epochA })]);
    expect(after.text).toContain(
      `the server now runs epoch ${epochB}: this grant covers none of its calls, and ends at the run's next call that needs an approval`,
    );
    // the console's Grants page says the same beside the grant's epoch
    const consoleRun = await startConsoleProcess(stateDir);
    cleanup.push(() => consoleRun.stop());
    const session = await httpLogin(consoleRun.url);
    const page = await raw(`${consoleRun.url}/grants`, { headers: { Cookie: session.cookie } });
    expect(page.status).toBe(200);
    const moved = /data-testid="grant-epoch-moved">([\s\S]*?)<\/small>/.exec(page.body)?.[1];
    expect(moved?.replace(/<\/?code>/g, ""), page.body).toBe(
      `the server now runs epoch ${epochB}: this grant covers none of its calls, and ends at the run's next call that needs an approval`,
    );

    // the run's next call is refused stale once, which ends the grant: no longer listed
    await gw.client.listTools();
    const stale = (await gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e)) as {
      code: number;
    };
    expect(stale.code).toBe(-32051);
    const ended = await grants(stateDir);
    expect(ended.json).toEqual([]);
    expect(ended.text).toBe("no grant is active\n");
    const gone = await raw(`${consoleRun.url}/grants`, { headers: { Cookie: session.cookie } });
    expect(gone.body).not.toContain("grant-epoch-moved");
  }, 120_000);
});
