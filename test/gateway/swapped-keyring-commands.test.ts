// "A swapped keyring is detected" (docs/security.md, signed decisions): another keyring.json put
// in place of the one whose approver key is pinned in the audit chain. forged-grants.test.ts
// covers `approve` and the gateway's stderr; here the rest of the promise: `deny` and the audit's
// decrypting commands (`audit show`, `activity`, `sessions`: the ones that take the passphrase;
// `verify`, `export` and `checkpoint` read only the chain's clear headers and sealed bodies, and
// take no passphrase) refuse it with exit 1, and `portcullis status` (human and --json) shows
// "approvals refused: …" for a gateway started on it.
//
// Two swaps a same-user agent can make without the passphrase or with it known:
//  - "approver half": keyring.json edited, its approver public key the attacker's own;
//  - "another init": the whole keyring.json of another `portcullis init` (same passphrase, so it
//    opens: only the pin in this chain tells it from the real one).

import { generateKeyPairSync } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { approverKeyId } from "../../src/keyring/approver.js";
import { nextStoredRequest, storedPending } from "../helpers/approvals.js";
import { tempDir } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const KEYRING = "keyring.json";

/** The attacker's own approver key written into keyring.json (the rest left as it was). */
function swapApproverHalf(stateDir: string): string {
  const pair = generateKeyPairSync("ed25519");
  const raw = Buffer.from(pair.publicKey.export({ format: "jwk" }).x!, "base64url");
  const path = join(stateDir, KEYRING);
  const keyring = JSON.parse(readFileSync(path, "utf8"));
  keyring.approver.publicKey = raw.toString("base64url");
  keyring.approver.keyId = approverKeyId(raw);
  writeFileSync(path, JSON.stringify(keyring, null, 2));
  return keyring.approver.keyId;
}

/** The keyring.json of another `portcullis init`, with the same passphrase, put in its place. */
async function swapWholeKeyring(stateDir: string): Promise<string> {
  const other = join(tempDir("portcullis-other-init-"), "state");
  const init = await runCli(["init", "--state-dir", other], { env: passphraseEnv() });
  expect(init.code, init.stderr).toBe(0);
  const text = readFileSync(join(other, KEYRING), "utf8");
  writeFileSync(join(stateDir, KEYRING), text, { mode: 0o600 });
  return JSON.parse(text).approver.keyId;
}

const SWAPS: [string, (stateDir: string) => string | Promise<string>, RegExp][] = [
  [
    "approver half",
    swapApproverHalf,
    /approver private key does not open with the data key \(or its public half was changed\)/,
  ],
  [
    "another init",
    swapWholeKeyring,
    /is not the one pinned in the audit chain: keyring\.json was replaced or edited/,
  ],
];

describe.each(SWAPS)("a swapped keyring (%s)", (_what, swap, refusal) => {
  it("deny, audit show/activity/sessions exit 1; status shows approvals refused", async () => {
    const stateDir = newStateDir();
    const original = readFileSync(join(stateDir, KEYRING), "utf8");
    const pinnedId = JSON.parse(original).approver.keyId as string;
    const swappedId = await swap(stateDir);
    expect(swappedId).not.toBe(pinnedId);

    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval-timeout", "120000"], { stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    await gw.waitForStderr(
      /no grant will be honoured: the keyring's approver key [0-9a-f]{32} is not the one pinned/,
    );

    // status, for the human: the refusal is said, with the swapped key's id
    const status = await runCli(["status"], { stateDir });
    expect(status.code, status.stderr).toBe(0);
    expect(status.stdout).toMatch(
      new RegExp(
        `approvals refused: the keyring's approver key ${swappedId} is not the one pinned in the audit chain`,
      ),
    );
    const json = await runCli(["status", "--json"], { stateDir });
    expect(json.code, json.stderr).toBe(0);
    const rows = (JSON.parse(json.stdout) as { gateways: { pid: number; status: { line: string }[] }[] })
      .gateways;
    const row = rows.find((g) => g.pid === gw.pid);
    expect(row, json.stdout).toBeDefined();
    expect(row!.status.map((s) => s.line)).toContainEqual(
      expect.stringMatching(
        new RegExp(`^approvals refused: the keyring's approver key ${swappedId} is not the one pinned`),
      ),
    );

    // a call waits for a human; deny with the passphrase refuses the keyring, and decides nothing
    const call = gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    const r = await nextStoredRequest(stateDir);
    const deny = await runCli(["deny", r.request, "--state-dir", stateDir], { env: passphraseEnv() });
    expect(deny.code, deny.stderr).toBe(1);
    expect(deny.stderr).toMatch(refusal);
    expect(storedPending(stateDir).map((p) => p.request)).toContain(r.request);
    const denyNext = await runCli(["deny", "--next", "--state-dir", stateDir], { env: passphraseEnv() });
    expect(denyNext.code, denyNext.stderr).toBe(1);
    expect(denyNext.stderr).toMatch(refusal);
    expect(storedPending(stateDir).map((p) => p.request)).toContain(r.request);

    // the audit's decrypting commands: nothing shown, exit 1, and why
    for (const args of [
      ["show", "1"],
      ["show", "1", "--json"],
      ["activity"],
      ["activity", "--json"],
      ["sessions"],
    ]) {
      const a = await runCli(["audit", ...args], { stateDir, env: passphraseEnv() });
      expect(a.code, `audit ${args.join(" ")}: ${a.stderr}`).toBe(1);
      expect(a.stdout, `audit ${args.join(" ")}`).toBe("");
      expect(a.stderr, `audit ${args.join(" ")}`).toMatch(refusal);
    }

    // the real keyring put back: the same commands read the same chain (the refusal was the swap's)
    writeFileSync(join(stateDir, KEYRING), original, { mode: 0o600 });
    const shown = await runCli(["audit", "show", "1"], { stateDir, env: passphraseEnv() });
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).not.toBe("");
    await gw.close();
    await call;
  });
});
