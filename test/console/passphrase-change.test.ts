// A console running while `portcullis passphrase` changes the keyring's passphrase: the console
// caches no key derived from the passphrase (each proof opens keyring.json anew: src/console/proof.ts),
// so the very next login with the old passphrase is refused, and the new one proves the human.
// A proof held from before the change stays held until its window ends (the keys are the same;
// docs/console.md says so). Would catch: a console that kept the key-encryption key, or the data
// key's wrapping, from its first proof and went on taking the old passphrase. Real console process,
// plain HTTP.
import { afterEach, describe, expect, it } from "vitest";
import { removeDir } from "../helpers/files.js";
import { changeByCli } from "../helpers/passphraseChange.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";
import { cookiePairs, httpLogin, raw, startConsoleProcess } from "./helpers.js";

const NEW = "the console's new passphrase";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A login attempt with `passphrase`: its status and page. */
async function tryLogin(base: string, passphrase: string): Promise<{ status: number; body: string }> {
  const form = await raw(`${base}/login`);
  const csrf = /name="csrf" value="([^"]+)"/.exec(form.body)![1]!;
  const r = await raw(`${base}/login`, {
    method: "POST",
    headers: {
      Origin: base,
      Cookie: cookiePairs(form.headers["set-cookie"]).join("; "),
      "Content-Type": "application/x-www-form-urlencoded",
    },
    body: new URLSearchParams({ csrf, passphrase }).toString(),
  });
  return { status: r.status, body: r.body };
}

describe("the console across a passphrase change", () => {
  it("refuses the old passphrase at the next login, and takes the new one", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const console_ = await startConsoleProcess(stateDir);
    cleanup.push(() => console_.stop());
    // proven once with the old passphrase, before the change
    await httpLogin(console_.url, TEST_PASSPHRASE);

    const changed = await changeByCli(stateDir, TEST_PASSPHRASE, NEW);
    expect(changed.code, changed.stderr).toBe(0);

    const old = await tryLogin(console_.url, TEST_PASSPHRASE);
    expect(old.status).toBe(401);
    expect(old.body).toContain("wrong passphrase");
    const s = await httpLogin(console_.url, NEW);
    expect(s.proofKey).not.toBeNull();
    expect(console_.output()).not.toContain(NEW);
  });
});
