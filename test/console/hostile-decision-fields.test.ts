// A decision POST whose fields say more than the page offered: the session button of a per-call
// tool (the page shows none, but a page edited in the browser, an extension, or a hand-made POST
// with the session's token and proof key can send it), and the review digest of another request.
// The console must decide only what the request allows, over the review it shows. A real gateway
// (per call) in front of the catalog fixture, the console process, plain HTTP as a browser sends.
import { describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { httpLogin, perCallShop, post, raw, requestState, reviewedIn } from "./helpers.js";

describe("decision fields the page did not offer", () => {
  it("a session approval of a per-call tool and another request's review digest decide nothing; the offered one-call approval decides", async () => {
    const { stateDir, gw, console_, end } = await perCallShop("portcullis-console-fields-");
    try {
      const seen = new Set<string>();
      const a = gw.client.callTool({ name: "deploy", arguments: { note: "a" } }, undefined, {
        timeout: 90_000,
      });
      a.catch(() => {}); // awaited below
      const ra = await nextStoredRequest(stateDir, seen);
      void gw.client.callTool({ name: "deploy", arguments: { note: "b" } }).catch(() => {});
      const rb = await nextStoredRequest(stateDir, seen);

      const s = await httpLogin(console_.url);
      const cardA = await raw(`${console_.url}/requests/${ra.request}`, { headers: { Cookie: s.cookie } });
      const cardB = await raw(`${console_.url}/requests/${rb.request}`, { headers: { Cookie: s.cookie } });
      expect(cardA.body).not.toContain('data-testid="approve-session"');
      const fields = { csrf: s.csrf, proof: s.proofKey! };
      const path = `/requests/${ra.request}/decide`;

      const session = await post(
        console_.url,
        path,
        { ...fields, action: "approve-session", reviewed: reviewedIn(cardA.body) },
        { Cookie: s.cookie },
      );
      expect(session.status).toBe(409);
      // the sentence every decision path gives (src/approval/perCallOnly.ts), without the CLI's flag
      expect(session.body).toContain(
        "tool deploy of shop needs a human decision for every call: it can be approved for this one call only.",
      );
      expect(requestState(stateDir, ra.request)).toBe("pending");

      const otherReview = await post(
        console_.url,
        path,
        { ...fields, action: "approve-call", reviewed: reviewedIn(cardB.body) },
        { Cookie: s.cookie },
      );
      expect(otherReview.status).toBe(409);
      expect(otherReview.body).toContain("changed after it was shown");
      expect(requestState(stateDir, ra.request)).toBe("pending");
      expect(requestState(stateDir, rb.request)).toBe("pending");

      const ok = await post(
        console_.url,
        path,
        { ...fields, action: "approve-call", reviewed: reviewedIn(cardA.body) },
        { Cookie: s.cookie },
      );
      expect(ok.status, ok.body).toBe(303);
      expect((await a).isError).toBeFalsy();
      expect(requestState(stateDir, rb.request)).toBe("pending");
    } finally {
      await end();
    }
  }, 60_000);
});
