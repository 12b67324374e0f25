// A pending request's run row rewritten in the store to name another process chain (its
// `chain_json` and `chain_digest`): the request is shown and decided on its review's chain, since
// the run's stored chain is not what the human approves. The review the gateway wrote with the request carries the process chain
// as the gateway held it in memory, and is what `approvals` and the console show; the gateway
// honours only a grant of a review it wrote, and covers calls of its run by id. No reader decides
// on the stored chain (src/approval/runs.ts, RunRow), so refusing such a request would only let
// a store writer block approvals it can block anyway (by cancelling the request). A chain made
// unreadable (`{`) is decided as ever too: test/cli/hostile-damaged-rows.test.ts.
import { afterEach, describe, expect, it } from "vitest";
import { httpLogin, raw, startConsoleProcess } from "../console/helpers.js";
import type { Pending } from "../helpers/approvals.js";
import { heldDeploys } from "../helpers/heldDeploys.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const FORGED_CHAIN = [
  { pid: 1, ppid: null, startTime: "1", executable: "/usr/bin/forged", sha256: null, command: "forged" },
];
const FORGED_DIGEST = `sha256:${"f".repeat(64)}`;

describe("a pending request's run chain rewritten in the store", () => {
  it("is shown and decided on the review's own chain, and the gateway honours the approval", async () => {
    const setup = await heldDeploys(cleanup, ["forged chain"]);
    const { stateDir, db, cli } = setup;
    const [a] = setup.requests as [Pending];
    const [call] = setup.calls as [Promise<{ isError?: unknown }>];
    const review = JSON.parse(
      db
        .prepare("SELECT review_json FROM approval_requests WHERE request = ?")
        .pluck()
        .get(a.request) as string,
    ) as { agentRun: { run: string; chainDigest: string } };
    const realDigest = review.agentRun.chainDigest;
    expect(realDigest).toMatch(/^sha256:/);
    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());

    const forged = db
      .prepare("UPDATE runs SET chain_json = ?, chain_digest = ? WHERE run = ?")
      .run(JSON.stringify(FORGED_CHAIN), FORGED_DIGEST, review.agentRun.run);
    expect(forged.changes).toBe(1);

    const listed = await cli("approvals");
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).not.toContain("cannot be read");
    expect(listed.stdout).toContain(`portcullis approve ${a.request}`);
    expect(listed.stdout).not.toContain(FORGED_DIGEST);
    expect(listed.stdout).not.toContain("/usr/bin/forged");
    const json = await cli("approvals", "--json");
    expect(json.code, json.stderr).toBe(0);
    expect(json.stdout).not.toContain(FORGED_DIGEST);
    const listedReq = (
      JSON.parse(json.stdout) as {
        requests: {
          request: string;
          review: { agentRun: { chainDigest: string } } | null;
          unreadable?: string;
        }[];
      }
    ).requests.find((r) => r.request === a.request)!;
    expect(listedReq.unreadable).toBeUndefined();
    expect(listedReq.review?.agentRun.chainDigest).toBe(realDigest);

    const s = await httpLogin(c.url);
    const home = await raw(`${c.url}/`, { headers: { Cookie: s.cookie } });
    expect(home.status).toBe(200);
    const card = home.body.split("<article").find((x) => x.includes(`data-request-id="${a.request}"`))!;
    expect(card).not.toContain('data-testid="unreadable-request"');
    expect(card).toContain('data-testid="approve-call"');
    expect(card).toContain(realDigest);
    expect(card).not.toContain(FORGED_DIGEST);

    const approved = await cli("approve", a.request, "--for", "call");
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout + approved.stderr).not.toContain(FORGED_DIGEST);
    // the gateway took the approval up: the held call ran
    expect((await call).isError).toBeFalsy();
  }, 30_000);
});
