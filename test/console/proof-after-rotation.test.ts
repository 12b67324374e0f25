// A console holding a passphrase proof while `portcullis rotate-keys` replaces the keys. The proof
// holds the approver key rotated away, whose decisions every gateway refuses: the console used to
// sign with it until the window ended (the request marked approved, the call then refused as not
// verified). Now a held proof is dropped once keyring.json names another approver key, and the
// next decision asks for the passphrase again, saying why ("the keys were rotated"); the new
// passphrase decides it and the same running gateway honours it. A passphrase change, which keeps
// the keys, leaves the held proof as it is (one click still decides). A real gateway (per call)
// before the catalog fixture, a real console process, the real CLI rotating; plain HTTP.
import { describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { runCli } from "../helpers/gateway.js";
import { changeByCli, passphraseFile, withPassphrase } from "../helpers/passphraseChange.js";
import { passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";
import { httpLogin, perCallShop, post, raw, requestState, reviewedIn } from "./helpers.js";

const NEW = "the passphrase after the console's rotation";

type Shop = Awaited<ReturnType<typeof perCallShop>>;

/** A call of deploy, held for a human, and the form fields that approve it with the held proof. */
async function askedOnce(shop: Shop, s: Awaited<ReturnType<typeof httpLogin>>, seen: Set<string>) {
  const call = shop.gw.client.callTool({ name: "deploy", arguments: { note: "n" } }, undefined, {
    timeout: 90_000,
  });
  call.catch(() => {}); // awaited by the test
  const req = await nextStoredRequest(shop.stateDir, seen);
  seen.add(req.request);
  const card = await raw(`${shop.console_.url}/requests/${req.request}`, { headers: { Cookie: s.cookie } });
  const fields = {
    csrf: s.csrf,
    proof: s.proofKey!,
    reviewed: reviewedIn(card.body),
    action: "approve-call",
  };
  const decide = (extra: Record<string, string> = {}) =>
    post(shop.console_.url, `/requests/${req.request}/decide`, { ...fields, ...extra }, { Cookie: s.cookie });
  return { call, req, decide };
}

describe("a console proof held across a change of keyring.json", () => {
  it("after rotate-keys the held proof is dropped: the decision asks for the passphrase, saying the keys were rotated", async () => {
    const shop = await perCallShop("portcullis-console-rotated-");
    try {
      const seen = new Set<string>();
      const s = await httpLogin(shop.console_.url);
      expect(s.proofKey, "the login holds a proof for the window").not.toBeNull();

      // before the rotation, the held proof decides with one click
      const before = await askedOnce(shop, s, seen);
      const clicked = await before.decide();
      expect([200, 303], clicked.body).toContain(clicked.status);
      expect(requestState(shop.stateDir, before.req.request)).toBe("approved");
      expect((await before.call).isError ?? false).toBe(false);

      const rotated = await runCli(["rotate-keys"], {
        stateDir: shop.stateDir,
        env: { ...passphraseEnv(), PORTCULLIS_NEW_PASSPHRASE_FILE: passphraseFile(NEW) },
      });
      expect(rotated.code, rotated.stderr).toBe(0);

      // the same click, the same proof key: nothing is signed with the key rotated away
      const after = await askedOnce(shop, s, seen);
      const asked = await after.decide();
      expect(asked.status, asked.body).toBe(200);
      expect(asked.body).toContain('data-testid="decision-proof"');
      expect(asked.body).toContain("the keys were rotated");
      expect(requestState(shop.stateDir, after.req.request)).toBe("pending");
      expect(shop.console_.output()).toContain("a held passphrase proof was dropped: the keys were rotated");

      // the old passphrase no longer opens the keyring; the new one decides, and the running
      // gateway honours the new key's decision
      const old = await after.decide({ passphrase: TEST_PASSPHRASE });
      expect(old.status, old.body).toBe(401);
      expect(requestState(shop.stateDir, after.req.request)).toBe("pending");
      const proven = await after.decide({ passphrase: NEW });
      expect([200, 303], proven.body).toContain(proven.status);
      expect(requestState(shop.stateDir, after.req.request)).toBe("approved");
      expect((await after.call).isError ?? false).toBe(false);
      expect(shop.console_.output()).not.toContain(NEW);
    } finally {
      await shop.end();
    }
  }, 90_000);

  it("after a passphrase change (the same keys) the held proof still decides with one click", async () => {
    const shop = await perCallShop("portcullis-console-rewrapped-");
    try {
      const seen = new Set<string>();
      const s = await httpLogin(shop.console_.url);
      const changed = await changeByCli(shop.stateDir, TEST_PASSPHRASE, NEW);
      expect(changed.code, changed.stderr).toBe(0);
      const asked = await askedOnce(shop, s, seen);
      const clicked = await asked.decide();
      expect([200, 303], clicked.body).toContain(clicked.status);
      expect(clicked.body).not.toContain('data-testid="decision-proof"');
      expect(requestState(shop.stateDir, asked.req.request)).toBe("approved");
      expect((await asked.call).isError ?? false).toBe(false);
      // a command after the change, with the new passphrase, sees the same chain
      const verified = await runCli(["audit", "sessions"], {
        stateDir: shop.stateDir,
        env: withPassphrase(NEW),
      });
      expect(verified.code, verified.stderr).toBe(0);
    } finally {
      await shop.end();
    }
  }, 60_000);
});
