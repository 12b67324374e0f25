// A store writer (any process of the user) rewrites one pending request's stored review into
// something that is no review (`{}`, `null`, text that is no JSON, a tool name that is no
// string). The console drew the Requests page by rendering every pending request's card, so that
// one row made the whole page an internal error (500), and the human, sent there after logging
// in, saw none of the other requests. The card of a review that cannot be drawn now says so and
// offers no decision (none is taken: the row no longer matches its review); the other requests
// are listed and decided.
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { waitForPending } from "../helpers/approvals.js";
import { held } from "../helpers/browser.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import {
  catalogFile,
  DEPLOY_TOOL,
  gatewayFor,
  httpLogin,
  post,
  raw,
  requestState,
  reviewedIn,
  startConsoleProcess,
} from "./helpers.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

describe("a pending request whose stored review was rewritten into no review", () => {
  it("is shown as unreadable, deciding nothing; the other requests are listed and decided", async () => {
    const stateDir = newStateDir();
    const dir = tempDir("portcullis-console-tools-");
    cleanup.push(() => {
      removeDir(dir);
      removeDir(stateDir);
    });
    const gw = await gatewayFor(stateDir, catalogFile(dir, [DEPLOY_TOOL]), [], {
      PORTCULLIS_NO_CONSOLE: "1",
    });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const first = held(gw.client.callTool({ name: "deploy", arguments: { note: "garbled" } }));
    const [a] = await waitForPending(stateDir, (l) => (l.length === 1 ? l : null), 20_000, "request A");
    const second = held(gw.client.callTool({ name: "deploy", arguments: { note: "fine" } }));
    const b = await waitForPending(
      stateDir,
      (l) => l.find((p) => p.request !== a!.request),
      20_000,
      "request B",
    );

    const c = await startConsoleProcess(stateDir);
    cleanup.push(() => c.stop());
    const db = new Database(join(stateDir, "portcullis.db"));
    cleanup.push(() => {
      db.close();
    });
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
