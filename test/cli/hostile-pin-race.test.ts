// Two passphrase commands at the same moment on a state directory whose approver key is not
// pinned yet in the audit chain (an old keyring without an approver key, or an init killed before
// its pin): each looks for a pin, finds none, and pins (src/approval/pin.ts, ensurePinned; the
// key itself is added under keyring.json.upgrade.lock, src/keyring/keyring.ts). Exactly one pin
// must land, naming the key keyring.json holds afterwards, and the chain must verify; two pins
// (or two keys) would leave the second key's decisions ignored for ever. Real CLI processes,
// started together, many times over.
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { openRecords } from "../../src/audit/index.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore } from "../../src/store/db.js";
import { nextRequest } from "../helpers/approvals.js";
import { removeDir } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newKeyringOnlyStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const ROUNDS = 20;

/** The chain's record types, read from the records' plain headers. */
function chainTypes(stateDir: string): string[] {
  const db = openStore(stateDir);
  try {
    return (db.prepare("SELECT record FROM audit_records ORDER BY seq").pluck().all() as Buffer[]).map(
      (r) => /"type":"([a-z_]+)"/.exec(r.toString("latin1", 0, r.indexOf(0x0a)))![1]!,
    );
  } finally {
    db.close();
  }
}

/** Every decrypted event of the chain (the test passphrase opens the audit key). */
async function events(stateDir: string): Promise<Record<string, unknown>[]> {
  const { auditPrivateKey } = await unlockKeyring(stateDir, TEST_PASSPHRASE);
  const db = openStore(stateDir);
  try {
    return [...openRecords(db, auditPrivateKey)].map((r) => r.event);
  } finally {
    db.close();
  }
}

/** One pin in the chain, naming the approver key keyring.json holds; the chain verifies. */
async function expectOnePin(stateDir: string, what: string): Promise<void> {
  expect(
    chainTypes(stateDir).filter((t) => t === "approver_key_pinned"),
    what,
  ).toHaveLength(1);
  const keyring = JSON.parse(readFileSync(join(stateDir, "keyring.json"), "utf8"));
  expect(keyring.approver?.keyId, what).toMatch(/^[0-9a-f]{32}$/);
  const pins = (await events(stateDir)).filter((e) => e.type === "approver_key_pinned");
  expect(pins, what).toEqual([
    expect.objectContaining({
      approverKeyId: keyring.approver.keyId,
      approverPublicKey: keyring.approver.publicKey,
    }),
  ]);
  const verify = await runCli(["audit", "verify", "--json"], { stateDir });
  expect(verify.code, `${what}: ${verify.stderr}`).toBe(0);
  expect(JSON.parse(verify.stdout), what).toMatchObject({ ok: true });
}

describe("two passphrase commands pinning at the same moment", () => {
  it(`an old keyring (no approver key, no store): two audit reads add one key and pin it once (${ROUNDS} rounds)`, async () => {
    for (let round = 0; round < ROUNDS; round++) {
      const stateDir = newKeyringOnlyStateDir();
      cleanup.push(() => removeDir(stateDir));
      const path = join(stateDir, "keyring.json");
      const old = JSON.parse(readFileSync(path, "utf8"));
      delete old.approver;
      writeFileSync(path, JSON.stringify(old, null, 2), { mode: 0o600 });
      const env = passphraseEnv();
      const both = await Promise.all(
        [0, 1].map(() => runCli(["audit", "activity", "--json", "--state-dir", stateDir], { env })),
      );
      const what = `round ${round}: ${both.map((r) => r.stderr).join(" | ")}`;
      expect(
        both.map((r) => r.code),
        what,
      ).toEqual([0, 0]);
      // one of them pinned, and says so; the other found the pin
      expect(
        both.filter((r) => /pinned in the audit chain/.test(r.stderr)),
        what,
      ).toHaveLength(1);
      await expectOnePin(stateDir, what);
    }
  }, 300_000);

  it("a keyring whose key is not pinned yet: two approves of one request pin once and decide once (8 rounds)", async () => {
    for (let round = 0; round < 8; round++) {
      // as an init killed between its keyring and its pin leaves it: the key there, no store yet
      const stateDir = newKeyringOnlyStateDir();
      const project = makeProject("A");
      const gw = await startInventory(project, ["--approval", "session", "--approval-timeout", "60000"], {
        stateDir,
      });
      try {
        await gw.client.listTools();
        const call = gw.client.callTool({ name: "read_status", arguments: {} });
        const { request } = await nextRequest(stateDir);
        const env = passphraseEnv();
        const both = await Promise.all(
          [0, 1].map(() =>
            runCli(["approve", request, "--for", "session", "--state-dir", stateDir], { env }),
          ),
        );
        const what = `round ${round}: ${both.map((r) => `${r.code} ${r.stderr}`).join(" | ")}`;
        // one decides; the other is told the request is decided already, and records nothing
        expect(both.map((r) => r.code).sort(), what).toEqual([0, 1]);
        expect((await call).isError, what).toBeFalsy();
        await expectOnePin(stateDir, what);
        expect(
          chainTypes(stateDir).filter((t) => t === "approval_granted"),
          what,
        ).toHaveLength(1);
        expect(
          project.records().map((r) => r.tool),
          what,
        ).toEqual(["read_status"]);
      } finally {
        await gw.close();
        project.cleanup();
        removeDir(stateDir);
      }
    }
  }, 300_000);
});
