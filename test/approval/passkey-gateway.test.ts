// Passkey decisions end to end: real gateways in front of the real inventory fixture, a passkey
// registered with the passphrase (as the console does it) and answered by a software
// authenticator, the real CLI for `passkey list|rm|add`. A decision signed by the passkey ends
// the wait; a forged one (another credential, no user verification, another statement, a
// credential row inserted by SQL) keeps the call waiting and is recorded as decision_rejected;
// after `passkey rm`, what the passkey approved covers nothing.

import { randomBytes } from "node:crypto";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import {
  completePasskeyDecision,
  finishPasskeyRegistration,
  passkeyRegistrationOptions,
  preparePasskeyDecision,
} from "../../src/approval/passkey.js";
import { encodePasskeySignature } from "../../src/approval/passkeyAssertion.js";
import { pinnedSigner } from "../../src/approval/pin.js";
import { type Decision, decideRequest, pendingRequests } from "../../src/approval/requests.js";
import { openRecords } from "../../src/audit/log.js";
import { writeConsoleAddress } from "../../src/console/address.js";
import { unlockKeyring } from "../../src/keyring/keyring.js";
import { openStore, type Store } from "../../src/store/db.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { SoftAuthenticator, TEST_ORIGIN, TEST_RP_ID } from "../helpers/authenticator.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { makeProject, type Project } from "../helpers/project.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const EXPECT = { origin: TEST_ORIGIN, rpId: TEST_RP_ID };

function refusal(e: unknown) {
  return e as { code: number; message: string; data: Record<string, unknown> };
}

/** The store, as the console (or any process of the same user) opens it. */
function store(stateDir: string): Store {
  const db = openStore(stateDir);
  cleanup.push(() => {
    db.close();
  });
  return db;
}

/** Every audit event, decrypted with the passphrase. */
async function auditEvents(stateDir: string): Promise<Record<string, unknown>[]> {
  const db = openStore(stateDir);
  try {
    const { auditPrivateKey } = await unlockKeyring(stateDir, TEST_PASSPHRASE);
    return [...openRecords(db, auditPrivateKey)].map((r) => r.event);
  } finally {
    db.close();
  }
}

async function gateway(project: Project, stateDir: string) {
  const gw = await startInventory(project, ["--approval-timeout", "30000"], { stateDir });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return gw;
}

function setup() {
  const stateDir = newStateDir();
  const project = makeProject("A");
  cleanup.push(() => project.cleanup());
  return { stateDir, project };
}

/** Registration as the console does it: the passphrase gives the signer, the browser the answer. */
async function register(
  db: Store,
  stateDir: string,
  name: string,
  key = new SoftAuthenticator(),
): Promise<SoftAuthenticator> {
  const signer = await pinnedSigner(db, stateDir, TEST_PASSPHRASE);
  const options = await passkeyRegistrationOptions(
    { rpId: TEST_RP_ID, rpName: "portcullis", userName: "me" },
    db,
  );
  await finishPasskeyRegistration(db, stateDir, signer, key.register(options), {
    challenge: options.challenge,
    ...EXPECT,
    name,
  });
  return key;
}

/** The console's decision: prepared, answered by the passkey, completed. */
async function decideWith(
  db: Store,
  stateDir: string,
  key: SoftAuthenticator,
  request: string,
  decision: "approve" | "deny",
  o: { reason?: string } = {},
) {
  const prepared = preparePasskeyDecision(db, request, decision, o);
  return completePasskeyDecision(db, prepared, key.assert(prepared.options.challenge), {
    ...EXPECT,
    stateDir,
  });
}

describe("a passkey decides a waiting call", () => {
  it("approves (the held call proceeds) and denies (the client gets approval_denied with the reason)", async () => {
    const { stateDir, project } = setup();
    const gw = await gateway(project, stateDir);
    const db = store(stateDir);
    const key = await register(db, stateDir, "test laptop");
    const seen = new Set<string>();

    const held = gw.client.callTool({ name: "read_status", arguments: {} });
    await decideWith(db, stateDir, key, (await nextStoredRequest(stateDir, seen)).request, "approve");
    expect((await held).isError).toBeFalsy();

    const denied = gw.client
      .callTool({ name: "adjust_inventory", arguments: { sku: "S-1", delta: 1 } })
      .catch((e) => e);
    await decideWith(db, stateDir, key, (await nextStoredRequest(stateDir, seen)).request, "deny", {
      reason: "not on Fridays",
    });
    const e = refusal(await denied);
    expect(e.data).toMatchObject({ error: "approval_denied" });
    expect(JSON.stringify(e)).toContain("not on Fridays");
    expect(project.records().map((r) => r.tool)).toEqual(["read_status"]);

    const listed = await runCli(["passkey", "list", "--json", "--state-dir", stateDir]);
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout).passkeys).toEqual([
      expect.objectContaining({
        id: key.id,
        name: "test laptop",
        honoured: true,
        lastUsedAt: expect.any(String),
      }),
    ]);
    const events = await auditEvents(stateDir);
    expect(events).toContainEqual(
      expect.objectContaining({
        type: "passkey_pinned",
        credentialId: key.id,
        name: "test laptop",
        rpId: TEST_RP_ID,
      }),
    );
    expect(events).toContainEqual(
      expect.objectContaining({
        type: "approval_granted",
        decidedBy: expect.stringMatching(/^passkey "test laptop"/),
      }),
    );
    expect(events.filter((x) => x.type === "decision_rejected")).toEqual([]);
  });
});

describe("forged passkey decisions are not honoured by the gateway", () => {
  it("another credential, no user verification, another statement, a credential row inserted by SQL", async () => {
    const { stateDir, project } = setup();
    const gw = await gateway(project, stateDir);
    const db = store(stateDir);
    const key = await register(db, stateDir, "real");
    const call = gw.client.callTool({ name: "read_status", arguments: {} });
    const r = await nextStoredRequest(stateDir);

    // an attacker with the approval module's code writes decisions signed by what it has
    const forge = (
      answer: (challenge: string) => ReturnType<SoftAuthenticator["assert"]>,
      decision: Decision,
    ) => {
      db.prepare(
        "UPDATE approval_requests SET state = 'pending', decided_at = NULL, grant_id = NULL, decision_signature = NULL WHERE request = ?",
      ).run(r.request);
      const prepared = preparePasskeyDecision(
        db,
        r.request,
        decision.approve ? "approve" : "deny",
        decision.approve ? {} : { reason: "forged" },
      );
      const a = answer(prepared.options.challenge);
      return decideRequest(db, r.request, decision, "attacker", {
        kind: "passkey",
        statement: prepared.statement,
        signature: encodePasskeySignature({
          credentialId: a.id,
          authenticatorData: a.response.authenticatorData,
          clientDataJSON: a.response.clientDataJSON,
          signature: a.response.signature,
        }),
      });
    };
    const approve: Decision = { approve: true, for: "session" };

    // 1. a credential that was never registered
    const stranger = new SoftAuthenticator();
    const g1 = forge((c) => stranger.assert(c), approve).grant!.grant;
    await gw.waitForStderr(
      new RegExp(`grant ${g1} is not honoured: passkey .* is not pinned in the audit chain`),
    );
    // 2. the registered passkey, without user verification
    const g2 = forge((c) => key.assert(c, { uv: false }), approve).grant!.grant;
    await gw.waitForStderr(new RegExp(`grant ${g2} is not honoured: .*UV flag not set`));
    // 3. the registered passkey, over another statement (the denial's challenge, made an approval)
    const g3 = forge(
      () => key.assert(preparePasskeyDecision(db, r.request, "deny").options.challenge),
      approve,
    ).grant!.grant;
    await gw.waitForStderr(new RegExp(`grant ${g3} is not honoured: the passkey signed another decision`));
    // 4. a denial by a credential row inserted into the passkeys table by SQL, without a pin
    const sqlKey = new SoftAuthenticator();
    const raw = new Database(join(stateDir, "portcullis.db"));
    cleanup.push(() => {
      raw.close();
    });
    raw
      .prepare(
        "INSERT INTO passkeys (credential_id, name, public_key, counter, rp_id, created_at) VALUES (?, 'sql', ?, 0, ?, ?)",
      )
      .run(
        sqlKey.id,
        Buffer.from(sqlKey.coseKey()).toString("base64url"),
        TEST_RP_ID,
        new Date().toISOString(),
      );
    forge((c) => sqlKey.assert(c), { approve: false, reason: "forged" });
    await gw.waitForStderr(
      new RegExp(`denial ${r.request} is not honoured: passkey ${sqlKey.id} is not pinned`),
    );
    const listed = await runCli(["passkey", "list", "--state-dir", stateDir]);
    expect(listed.stdout).toMatch(new RegExp(`${sqlKey.id} .*\\n    NOT honoured by gateways: .*not pinned`));

    // the human's own decision, with the real passkey, still goes through
    db.prepare(
      "UPDATE approval_requests SET state = 'pending', decided_at = NULL, grant_id = NULL, decision_signature = NULL WHERE request = ?",
    ).run(r.request);
    await decideWith(db, stateDir, key, r.request, "approve");
    expect((await call).isError).toBeFalsy();
    expect(project.records().map((x) => x.tool)).toEqual(["read_status"]);

    const rejected = (await auditEvents(stateDir)).filter((e) => e.type === "decision_rejected");
    expect(rejected).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ what: "grant", grant: g1, request: r.request }),
        expect.objectContaining({ what: "grant", grant: g2, request: r.request }),
        expect.objectContaining({ what: "grant", grant: g3, request: r.request }),
        expect.objectContaining({ what: "denial", request: r.request }),
      ]),
    );
  });
});

describe("portcullis passkey", () => {
  it("rm takes the authority away without the passphrase: the session grant it gave stops covering", async () => {
    const { stateDir, project } = setup();
    const gw = await gateway(project, stateDir);
    const db = store(stateDir);
    // an ID whose base64url starts with '-' (first byte 0xF8): `rm -…` takes it as the ID, not an option
    const dashed = Buffer.concat([Buffer.from([0xf8]), randomBytes(15)]);
    const key = await register(db, stateDir, "old phone", new SoftAuthenticator(dashed));
    expect(key.id.startsWith("-")).toBe(true);
    const seen = new Set<string>();
    const first = gw.client.callTool({ name: "read_status", arguments: {} });
    const { grant } = await decideWith(
      db,
      stateDir,
      key,
      (await nextStoredRequest(stateDir, seen)).request,
      "approve",
    );
    await first;
    await gw.client.callTool({ name: "read_status", arguments: {} }); // covered: nothing asked

    // no passphrase in the environment: removing authority needs none
    const removed = await runCli(["passkey", "rm", key.id.slice(0, 8), "--state-dir", stateDir]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toMatch(new RegExp(`removed passkey ${key.id}`));
    const again = await runCli(["passkey", "rm", key.id, "--state-dir", stateDir]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already removed/);
    // a store writer undoes the grant's end: the removal in the audit chain is what counts
    db.prepare("UPDATE grants SET ended_at = NULL, ended_reason = NULL WHERE grant_id = ?").run(grant!.grant);

    // The third call waits at most the gateway's hold (30 s): everything slow (the passphrase's key
    // derivation, CLI processes) is done before it, so a loaded machine cannot make the hold end
    // before the human's denial arrives (the call would get approval_timeout instead).
    const human = await pinnedSigner(db, stateDir, TEST_PASSPHRASE);
    const third = gw.client.callTool({ name: "read_status", arguments: {} }).catch((e) => e);
    const asked = await waitFor(
      () => pendingRequests(db).find((r) => !seen.has(r.request)) ?? null,
      20_000,
      "the third call's approval request",
    );
    await gw.waitForStderr(
      new RegExp(`grant ${grant!.grant} is not honoured: passkey ${key.id} was removed`),
    );
    // and the removed passkey cannot decide the new request either
    await expect(decideWith(db, stateDir, key, asked.request, "approve")).rejects.toThrow(/was removed/);
    decideRequest(db, asked.request, { approve: false }, "test human (passphrase)", human);
    expect(refusal(await third).data).toMatchObject({ error: "approval_denied" });
    expect(project.records().map((x) => x.tool)).toEqual(["read_status", "read_status"]);
    const events = await auditEvents(stateDir);
    expect(events).toContainEqual(expect.objectContaining({ type: "passkey_removed", credentialId: key.id }));
    expect(events).toContainEqual(
      expect.objectContaining({
        type: "decision_rejected",
        grant: grant!.grant,
        why: expect.stringMatching(/removed/),
      }),
    );
    const listed = await runCli(["passkey", "list", "--json", "--state-dir", stateDir]);
    expect(JSON.parse(listed.stdout)).toEqual({ passkeys: [] });
  });

  it("add sends the human to the console's /passkeys page, and says how to start it when none runs", async () => {
    const { stateDir } = setup();
    store(stateDir); // the store exists, as after init
    const none = await runCli(["passkey", "add", "--state-dir", stateDir]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(
      /registered in the console, after the passphrase: start it with 'portcullis console --state-dir \S+'.*\/passkeys/,
    );
    // a console running (its address written by a live process: this one)
    writeConsoleAddress(stateDir, "http://127.0.0.1:7345");
    const running = await runCli(["passkey", "add", "--state-dir", stateDir]);
    expect(running.code).toBe(0);
    // at localhost: browsers refuse an IP address as a passkey's relying party
    expect(running.stdout).toContain("http://localhost:7345/passkeys");
  });
});
