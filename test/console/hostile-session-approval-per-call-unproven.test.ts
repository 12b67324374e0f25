// A forged session approval of a per-call tool's request, sent by a session that holds no
// passphrase proof: the page never offers that button, so the console refuses it at once, with
// the sentence every decision path gives (src/approval/perCallOnly.ts). It must not first ask for
// the passphrase, nor check one sent with it (a wrong one would count as a failed attempt), and
// the request stays pending. A real gateway (per call), the console process, plain HTTP.
import { describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { httpLogin, perCallShop, post, raw, requestState, reviewedIn } from "./helpers.js";

const SENTENCE =
  "tool deploy of shop needs a human decision for every call: it can be approved for this one call only.";

describe("a session approval of a per-call tool without a held proof", () => {
  it("is refused before any passphrase is asked or checked, and decides nothing", async () => {
    const { stateDir, gw, console_, end } = await perCallShop("portcullis-console-percall-");
    try {
      void gw.client.callTool({ name: "deploy", arguments: { note: "a" } }).catch(() => {});
      const req = await nextStoredRequest(stateDir, new Set());
      const s = await httpLogin(console_.url);
      const card = await raw(`${console_.url}/requests/${req.request}`, { headers: { Cookie: s.cookie } });
      const path = `/requests/${req.request}/decide`;
      // no `proof` field: the session's held proof is not brought, as after a reload elsewhere
      const fields = { csrf: s.csrf, action: "approve-session", reviewed: reviewedIn(card.body) };

      const asked = await post(console_.url, path, fields, { Cookie: s.cookie });
      expect(asked.status, asked.body).toBe(409);
      expect(asked.body).toContain(SENTENCE);
      expect(asked.body).not.toContain('name="passphrase"');

      // a passphrase sent along is not checked: a wrong one is not a failed attempt (401)
      const guessed = await post(
        console_.url,
        path,
        { ...fields, passphrase: "not the passphrase" },
        {
          Cookie: s.cookie,
        },
      );
      expect(guessed.status, guessed.body).toBe(409);
      expect(guessed.body).toContain(SENTENCE);
      expect(guessed.body).not.toContain('name="passphrase"');
      expect(requestState(stateDir, req.request)).toBe("pending");
    } finally {
      await end();
    }
  }, 60_000);
});
