import { afterEach, describe, expect, it } from "vitest";
import type { Pending } from "../helpers/approvals.js";
import { heldDeploys } from "../helpers/heldDeploys.js";
import { httpLogin, post, raw, requestState, reviewedIn, startConsoleProcess } from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a pending request whose stored review was rewritten into no review", () => {
  it("is shown as unreadable, deciding nothing; the other requests are listed and decided", async () => {
    const setup = await heldDeploys(cleanup, ["garbled", "fine"]);
    const { stateDir, gw, db } = setup;
    const [a, b] = setup.requests as [Pending, Pending];
    const [first, second] = setup.calls as [Promise<{ isError?: unknown }>, Promise<{ isError?: unknown }>];

    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    // `{`: no JSON at all, which the store's reader threw on for every page
    for (const garbled of ["{}", "null", "{", '{"tool":{"name":{"x":1}},"arguments":"nope"}']) {
      db.prepare("UPDATE approval_requests SET review_json = ? WHERE request = ?").run(garbled, a!.request);
      const s = await httpLogin(c.url);
      const home = await raw(`${c.url}/`, { headers: { Cookie: s.cookie } });
      expect(home.status, garbled).toBe(200);
      const cards = home.body.split("<article").slice(1);
      const ofA = cards.find((x) => x.includes(`data-request-id="${a!.request}"`))!;
      const ofB = cards.find((x) => x.includes(`data-request-id="${b.request}"`))!;
      expect(ofA, garbled).toContain('data-testid="unreadable-request"');
      expect(ofA).not.toMatch(/approve-(session|call)/);
      expect(ofB, garbled).toContain('data-testid="approve-call"');
      const own = await raw(`${c.url}/requests/${a!.request}`, { headers: { Cookie: s.cookie } });
      expect(own.status, garbled).toBe(200);
      expect(own.body).toContain('data-testid="unreadable-request"');
    }
    // A can be decided by nobody, as its card says: a denial too is refused (409), A stays pending
    const s = await httpLogin(c.url);
    const denied = await post(
      c.url,
      `/requests/${a!.request}/decide`,
      { csrf: s.csrf, action: "deny", proof: s.proofKey ?? "" },
      { Cookie: s.cookie },
    );
    expect(denied.status).toBe(409);
    expect(denied.body).toContain("does not ask what its review shows");
    expect(requestState(stateDir, a!.request)).toBe("pending");
    // a forged one-call approval of A (its page offers none) is refused the same way, not a 500
    // (the check of arguments partly hidden read the review's arguments before the decision did)
    const forged = await post(
      c.url,
      `/requests/${a!.request}/decide`,
      { csrf: s.csrf, reviewed: "forged", action: "approve-call", proof: s.proofKey ?? "" },
      { Cookie: s.cookie },
    );
    expect(forged.status, forged.body).toBe(409);
    expect(requestState(stateDir, a!.request)).toBe("pending");
    // B is decided from the console as ever (the held proof's key, its review digest)
    const page = await raw(`${c.url}/requests/${b.request}`, { headers: { Cookie: s.cookie } });
    const decided = await post(
      c.url,
      `/requests/${b.request}/decide`,
      { csrf: s.csrf, reviewed: reviewedIn(page.body), action: "approve-call", proof: s.proofKey ?? "" },
      { Cookie: s.cookie },
    );
    expect(decided.status, decided.body).toBeLessThan(400);
    expect(requestState(stateDir, b.request)).toBe("approved");
    expect(requestState(stateDir, a!.request)).toBe("pending");
    expect((await second).isError).toBeFalsy();
    await gw.close();
    await first.catch(() => {});
  });
});
