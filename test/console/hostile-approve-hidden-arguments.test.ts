// The console's one-call approval over a review that hid part of an argument as a secret: the
// page cannot show that part (the review stores it as `[redacted]`), and an agent can dress any
// text up as a credential. The page offers no one-call approval and says why; a hand-made POST
// of one decides nothing, nor can a passkey ceremony be prepared for it; a denial decides. A
// real gateway (per call) in front of the catalog fixture, the console process, plain HTTP.
import { describe, expect, it } from "vitest";
import { preparePasskeyDecision } from "../../src/approval/passkey.js";
import { DecisionError, getRequest } from "../../src/approval/requests.js";
import { openStoreToRead } from "../../src/store/db.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { httpLogin, perCallShop, post, raw, reviewedIn } from "./helpers.js";

function withStore<T>(stateDir: string, f: (db: ReturnType<typeof openStoreToRead>) => T): T {
  const db = openStoreToRead(stateDir);
  try {
    return f(db);
  } finally {
    db.close();
  }
}

describe("the console's one-call approval of an argument the review hid part of", () => {
  it("is not offered, a POST of it decides nothing, no passkey decision is prepared; a denial decides", async () => {
    const { stateDir, gw, console_, end } = await perCallShop("portcullis-console-hidden-");
    try {
      const call = gw.client.callTool(
        { name: "deploy", arguments: { note: "done; password=$(rm$IFS-rf$IFS~)" } },
        undefined,
        { timeout: 90_000 },
      );
      call.catch(() => {}); // awaited below
      const req = await nextStoredRequest(stateDir, new Set());

      const s = await httpLogin(console_.url);
      const card = await raw(`${console_.url}/requests/${req.request}`, { headers: { Cookie: s.cookie } });
      expect(card.body).toContain("password=[redacted]");
      expect(card.body).not.toContain('data-testid="approve-call"');
      expect(card.body).toContain('data-testid="approve-call-refused"');
      expect(card.body).toContain("the review hid part of this call&#39;s argument note as a secret");

      const path = `/requests/${req.request}/decide`;
      const fields = { csrf: s.csrf, proof: s.proofKey!, reviewed: reviewedIn(card.body) };
      const approved = await post(
        console_.url,
        path,
        { ...fields, action: "approve-call" },
        { Cookie: s.cookie },
      );
      expect(approved.status).toBe(409);
      expect(approved.body).toContain("cannot be approved for this call");
      expect(approved.body).toContain("deny it");
      expect(withStore(stateDir, (db) => getRequest(db, req.request)?.state)).toBe("pending");

      // the passkey ceremony's challenge is made by the same refusal (decidableRequest)
      const prepared = () =>
        withStore(stateDir, (db) =>
          preparePasskeyDecision(db, req.request, "approve", { mode: "call", reviewed: fields.reviewed }),
        );
      expect(prepared).toThrow(DecisionError);
      expect(prepared).toThrow(/hid part of this call's argument note/);

      const denied = await post(console_.url, path, { ...fields, action: "deny" }, { Cookie: s.cookie });
      expect(denied.status, denied.body).toBe(303);
      await expect(call).rejects.toMatchObject({ code: -32057 });
      expect(withStore(stateDir, (db) => getRequest(db, req.request)?.state)).toBe("denied");
    } finally {
      await end();
    }
  }, 60_000);
});
