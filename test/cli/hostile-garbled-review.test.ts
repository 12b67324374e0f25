import { afterEach, describe, expect, it } from "vitest";
import { requestState } from "../console/helpers.js";
import type { Pending } from "../helpers/approvals.js";
import { watchApprovalsJson } from "../helpers/approvalsWatch.js";
import { startCli } from "../helpers/cliProcess.js";
import { waitFor } from "../helpers/files.js";
import { heldDeploys } from "../helpers/heldDeploys.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("portcullis approvals, approve and deny with a pending request whose stored review is no review", () => {
  it("lists it as unreadable and the others whole, refuses to decide it, and decides the others", async () => {
    const setup = await heldDeploys(cleanup, ["garbled", "fine"]);
    const { stateDir, gw, db, cli } = setup;
    const [a, b] = setup.requests as [Pending, Pending];
    const [first, second] = setup.calls as [Promise<{ isError?: unknown }>, Promise<{ isError?: unknown }>];

    for (const garbled of ["{}", "{"]) {
      db.prepare("UPDATE approval_requests SET review_json = ? WHERE request = ?").run(garbled, a!.request);

      const listed = await cli("approvals");
      expect(listed.code, `${garbled}: ${listed.stderr}`).toBe(0);
      const ofA = listed.stdout.split("\n").filter((l) => l.includes(a!.request));
      expect(ofA, garbled).toHaveLength(1);
      expect(ofA[0]).toMatch(
        new RegExp(
          `^approval request ${a!.request}: its stored review cannot be read \\(.+\\): .*nobody can approve or deny it, and it expires at `,
        ),
      );
      expect(listed.stdout).toContain(`approval request ${b.request}  pending`);
      expect(listed.stdout).toContain(`portcullis approve ${b.request}`);

      const json = await cli("approvals", "--json");
      expect(json.code, `${garbled}: ${json.stderr}`).toBe(0);
      const requests = (JSON.parse(json.stdout) as { requests: Record<string, unknown>[] }).requests;
      const jsonA = requests.find((r) => r.request === a!.request)!;
      const jsonB = requests.find((r) => r.request === b.request)!;
      expect(jsonA.review, garbled).toBeNull();
      expect(jsonA.unreadable).toMatch(/^its stored review cannot be read/);
      expect(jsonA.state).toBe("pending");
      expect((jsonB.review as { tool: { name: string } }).tool.name).toBe("deploy");
      expect(jsonB.unreadable).toBeUndefined();

      for (const decide of [
        ["approve", a!.request, "--for", "call"],
        ["deny", a!.request],
      ]) {
        const r = await cli(...decide);
        expect(r.code, `${garbled} ${decide[0]}: ${r.stderr}`).toBe(1);
        expect(r.stderr.trim().split("\n")).toHaveLength(1);
        expect(r.stderr).toContain(
          `${decide[0]}: approval request ${a!.request} cannot be decided: its stored review cannot be read`,
        );
        expect(r.stderr).toContain("nothing was decided");
        expect(r.stdout).toBe("");
      }
      expect(requestState(stateDir, a!.request)).toBe("pending");
    }

    // the live list too (`{` stored now): the line, then the other request whole; --json its shape
    const watched = startCli(["approvals", "--watch", "--state-dir", stateDir], {
      stateDir,
      onCleanup: (c) => cleanup.push(c),
    });
    await waitFor(() => watched.stdout().includes(`approve --next`), 20_000, "the watched list");
    watched.child.kill("SIGINT");
    expect(await watched.exited, watched.stderr()).toBe(0);
    expect(watched.stdout()).toContain(`approval request ${a!.request}: its stored review cannot be read`);
    expect(watched.stdout()).toContain(`approval request ${b.request}  pending`);
    const watchedJson = watchApprovalsJson(stateDir, cleanup);
    await waitFor(() => watchedJson.out().split("\n").length > 2, 20_000, "two pending lines");
    watchedJson.child.kill("SIGINT");
    expect(await watchedJson.exited).toBe(0);
    const lines = watchedJson
      .out()
      .trim()
      .split("\n")
      .map((l) => JSON.parse(l) as { request: Record<string, unknown> });
    expect(lines.find((l) => l.request.request === a!.request)?.request.review).toBeNull();
    expect(lines.find((l) => l.request.request === b.request)?.request.review).not.toBeNull();

    // --next passes the unreadable one by (older, and a call waits on it) and decides B
    const next = await cli("approve", "--next", "--for", "call");
    expect(next.code, next.stderr).toBe(0);
    expect(next.stdout).toContain(`approve --next: ${b.request}`);
    expect(next.stdout).toContain(`approved ${b.request}`);
    expect(requestState(stateDir, b.request)).toBe("approved");
    expect(requestState(stateDir, a!.request)).toBe("pending");
    // with only A left, --next says why it decides nothing (not that nothing is pending)
    const none = await cli("deny", "--next");
    expect(none.code, none.stderr).toBe(2);
    expect(none.stderr).toContain(
      "no approval request can be decided: the stored review of the one pending cannot be read",
    );
    expect(requestState(stateDir, a!.request)).toBe("pending");
    expect((await second).isError).toBeFalsy();
    await gw.close();
    await first.catch(() => {});
  }, 30_000);
});
