// A copy of a real gateway's request written into the store under another id, in the same run
// (its gateway the real, running one), looked like the real request on the console's Requests
// page, and one click approved it. The gateway holds a mark of each request it makes that no
// other process can forge (src/approval/vouch.ts): the console now marks a card whose gateway
// does not vouch for its row, in the words `portcullis approvals` prints, and approving one needs
// a box ticked saying a gateway printed its ID ("confirm-unvouched"), checked before any
// passphrase is asked; denying it stays one click (deny first). Linux only (elsewhere no gateway
// can vouch). A real gateway (per call), the console process, forged rows written with SQLite,
// plain HTTP as the page's forms send it.
import { describe, expect, it } from "vitest";
import { NOT_VOUCHED_NOTE } from "../../src/approval/vouch.js";
import { nextRequest } from "../helpers/approvals.js";
import { forgeInSameRun } from "../helpers/forgedRequests.js";
import { TEST_PASSPHRASE } from "../helpers/state.js";
import { httpLogin, perCallShop, post, raw, requestState, reviewedIn } from "./helpers.js";

const TO_APPROVE = "01M95GYS1Q2PM811SG8AHB299F";
const TO_DENY = "01M95GYS1Q2PM811SG8AHB300G";

/** The card of `id` on a page: its article, up to the next one. */
function cardOf(body: string, id: string): string {
  const cards = body.split("<article").slice(1);
  const card = cards.find((c) => c.includes(`data-request-id="${id}"`));
  if (!card) throw new Error(`no card of ${id} on the page`);
  return card;
}

describe.skipIf(process.platform !== "linux")(
  "a forged copy of a running gateway's request on the console",
  () => {
    it("is marked not vouched; approving it needs the box ticked before the passphrase; denying it does not", async () => {
      const { stateDir, gw, console_, end } = await perCallShop("portcullis-console-unvouched-");
      try {
        void gw.client.callTool({ name: "deploy", arguments: { note: "a" } }).catch(() => {});
        const real = await nextRequest(stateDir, new Set());
        forgeInSameRun(stateDir, real.request, TO_APPROVE);
        forgeInSameRun(stateDir, real.request, TO_DENY);
        const s = await httpLogin(console_.url);
        const get = (path: string) => raw(`${console_.url}${path}`, { headers: { Cookie: s.cookie } });

        // the Requests page: the copies marked, in the CLI's words, with the box; the real one not
        const list = await get("/");
        expect(list.status).toBe(200);
        for (const id of [TO_APPROVE, TO_DENY]) {
          const card = cardOf(list.body, id);
          expect(card).toContain(`<p class="error" data-testid="not-vouched">${NOT_VOUCHED_NOTE}</p>`);
          expect(card).toContain('data-testid="confirm-unvouched"');
        }
        expect(cardOf(list.body, real.request)).not.toContain("not-vouched");
        expect(cardOf(list.body, real.request)).not.toContain("confirm-unvouched");

        // the copy's own page says it too
        const own = await get(`/requests/${TO_APPROVE}`);
        expect(own.body).toContain(NOT_VOUCHED_NOTE);
        const approve = {
          csrf: s.csrf,
          action: "approve-call",
          reviewed: reviewedIn(own.body),
        };
        const path = `/requests/${TO_APPROVE}/decide`;

        // approving without the box: refused before a passphrase is asked or checked
        const bare = await post(
          console_.url,
          path,
          { ...approve, passphrase: TEST_PASSPHRASE },
          { Cookie: s.cookie },
        );
        expect(bare.status, bare.body).toBe(409);
        expect(bare.body).toContain(`the gateway of ${TO_APPROVE} does not vouch for it`);
        expect(bare.body).not.toContain('name="passphrase"');
        expect(requestState(stateDir, TO_APPROVE)).toBe("pending");

        // nor does a passkey ceremony for it get prepared without the box (the page's script sends it)
        const port = new URL(console_.url).port;
        const passkeyOptions = (unvouched: string) =>
          raw(`${console_.url}/requests/${TO_APPROVE}/passkey/options`, {
            method: "POST",
            headers: {
              Host: `localhost:${port}`,
              Origin: `http://localhost:${port}`,
              Cookie: s.cookie,
              "Content-Type": "application/json",
              "X-CSRF-Token": s.csrf,
            },
            body: JSON.stringify({ action: "approve-call", reviewed: approve.reviewed, unvouched }),
          });
        const unticked = await passkeyOptions("");
        expect(unticked.status, unticked.body).toBe(409);
        expect(unticked.body).toContain(`the gateway of ${TO_APPROVE} does not vouch for it`);
        // ticked, it goes on past this check
        const tickedOptions = await passkeyOptions("confirmed");
        expect(tickedOptions.body).not.toContain("does not vouch");

        // with the box ticked: the passphrase is asked, the box carried through, and it is decided
        const ticked = { ...approve, unvouched: "confirmed" };
        const asked = await post(console_.url, path, ticked, { Cookie: s.cookie });
        expect(asked.status, asked.body).toBe(200);
        expect(asked.body).toContain('name="passphrase"');
        expect(asked.body).toContain('<input type="hidden" name="unvouched" value="confirmed">');
        const done = await post(
          console_.url,
          path,
          { ...ticked, passphrase: TEST_PASSPHRASE },
          { Cookie: s.cookie },
        );
        expect([200, 303], done.body).toContain(done.status);
        expect(requestState(stateDir, TO_APPROVE)).toBe("approved");

        // denying the other copy: no box needed
        const denied = await post(
          console_.url,
          `/requests/${TO_DENY}/decide`,
          { csrf: s.csrf, action: "deny", passphrase: TEST_PASSPHRASE },
          { Cookie: s.cookie },
        );
        expect([200, 303], denied.body).toContain(denied.status);
        expect(requestState(stateDir, TO_DENY)).toBe("denied");

        // the gateway's own request needs no box: its approval goes on to the passphrase
        const realPage = await get(`/requests/${real.request}`);
        const realAsked = await post(
          console_.url,
          `/requests/${real.request}/decide`,
          { csrf: s.csrf, action: "approve-call", reviewed: reviewedIn(realPage.body) },
          { Cookie: s.cookie },
        );
        expect(realAsked.status, realAsked.body).toBe(200);
        expect(realAsked.body).toContain('name="passphrase"');
        expect(requestState(stateDir, real.request)).toBe("pending");
      } finally {
        await end();
      }
    }, 60_000);
  },
);
