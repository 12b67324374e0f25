// The gateway's passkey origin check (docs/security.md, "Signed decisions": a gateway honours a
// passkey decision only when its clientDataJSON's "origin is on the pinned RP id"; and under
// "What signing does not give", "The origin's port": "A gateway checks that the assertion's origin
// is on the pinned RP id's host, not its port (the console's port may change); the console checks
// the exact origin"). src/approval/passkeyAssertion.ts `assertionFault` / `originHost`.
//
// Every assertion below is a real WebAuthn assertion (ES256 on P-256, node:crypto, by the
// software authenticator of test/helpers/authenticator.ts), signed by the pinned credential over
// the decision's own challenge, authenticatorData for the RP id, UP and UV set: the origin in its
// clientDataJSON is the only thing wrong with it, so a refusal can only come from the origin check.
//
// 1. As a unit, assertionFault over a table of origins: the right port on another host (another
//    loopback address, a subdomain of the RP id, a name that begins with it, user info that hides
//    the real host), another scheme, no URL at all: refused; the RP id's host on any port, or none,
//    over http or https: accepted.
// 2. End to end, a real gateway in front of the inventory fixture: a decision whose assertion's
//    origin is http://127.0.0.1:<the console's port> (the console's port, another host) is written
//    straight into the store, as the approval module's code would: the gateway does not honour it
//    (stderr, decision_rejected) and the call keeps waiting; the same decision with the origin
//    http://localhost:<another port> is honoured and the call runs. The console's own path
//    (completePasskeyDecision) refuses that other port: it checks the exact origin.
//
// What it would catch being removed: the origin comparison in assertionFault (any origin
// accepted: the refused rows of the table and the end-to-end refusal fail), a comparison that
// accepts subdomains or prefixes of the RP id (evil.localhost, localhost.evil.test), one over
// the whole origin including its port (the port rows and the end-to-end acceptance fail), and
// the console's exact-origin check (its other-port decision would be recorded). Checked on a copy
// of the build: with the comparison removed, every "refuses" row and the end-to-end test fail;
// with the port made part of it (URL.host), every "accepts" row and the end-to-end test fail.
import { createHash, randomBytes } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import {
  completePasskeyDecision,
  finishPasskeyRegistration,
  passkeyRegistrationOptions,
  preparePasskeyDecision,
} from "../../src/approval/passkey.js";
import {
  assertionFault,
  decisionChallenge,
  encodePasskeySignature,
  type PasskeyAssertion,
} from "../../src/approval/passkeyAssertion.js";
import { pinnedSigner } from "../../src/approval/pin.js";
import { type Decision, decideRequest } from "../../src/approval/requests.js";
import { openStore, type Store } from "../../src/store/db.js";
import { auditEvents, nextStoredRequest } from "../helpers/approvals.js";
import { SoftAuthenticator, TEST_ORIGIN, TEST_RP_ID } from "../helpers/authenticator.js";
import { runCli, startInventory } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { newStateDir, TEST_PASSPHRASE } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const EXPECT = { origin: TEST_ORIGIN, rpId: TEST_RP_ID };
const PORT = new URL(TEST_ORIGIN).port; // the console's port in these tests

function asStored(a: ReturnType<SoftAuthenticator["assert"]>): PasskeyAssertion {
  return {
    v: "webauthn/1",
    credentialId: a.id,
    authenticatorData: a.response.authenticatorData,
    clientDataJSON: a.response.clientDataJSON,
    signature: a.response.signature,
  };
}

describe("the gateway's passkey origin check (assertionFault)", () => {
  const key = new SoftAuthenticator();
  const pinned = {
    credentialId: key.id,
    publicKey: Buffer.from(key.coseKey()).toString("base64url"),
    rpId: TEST_RP_ID,
  };
  const challenge = decisionChallenge(`sha256:${createHash("sha256").update(randomBytes(32)).digest("hex")}`);
  const fault = (origin: string) =>
    assertionFault(pinned, challenge, asStored(key.assert(challenge, { origin })));

  it.each([
    `http://127.0.0.1:${PORT}`,
    `http://127.0.0.2:${PORT}`,
    `http://[::1]:${PORT}`,
    `http://evil.localhost:${PORT}`,
    `http://localhost.evil.test:${PORT}`,
    `http://localhostx:${PORT}`,
    `http://localhost@evil.test:${PORT}`,
    `https://evil.test:${PORT}`,
    `ws://localhost:${PORT}`,
    `file:///localhost:${PORT}`,
    "localhost",
    "null",
  ])("refuses an assertion whose origin is %s: not on the RP id's host", (origin) => {
    expect(fault(origin)).toBe(`its origin is not on the passkey's RP id ${TEST_RP_ID}`);
  });

  it.each([
    TEST_ORIGIN,
    "http://localhost:1",
    "http://localhost:65535",
    "http://localhost",
    `https://localhost:${PORT}`,
    "HTTP://LOCALHOST:8080",
  ])("accepts one whose origin is %s: the RP id's host, whatever the port", (origin) => {
    expect(fault(origin)).toBeNull();
  });

  it("the same assertion with its signature broken is refused: the accepted rows are verified, not waved through", () => {
    const a = asStored(key.assert(challenge, { origin: "http://localhost:1" }));
    const sig = Buffer.from(a.signature, "base64url");
    sig[sig.length - 1]! ^= 1;
    expect(assertionFault(pinned, challenge, { ...a, signature: sig.toString("base64url") })).toBe(
      "its signature does not verify against the pinned passkey",
    );
  });
});

describe("a real gateway and a passkey decision from another origin", () => {
  it("refuses the console's port on another host; honours the RP id's host on another port (the console refuses that one)", async () => {
    const stateDir = newStateDir();
    const project = makeProject("A");
    cleanup.push(() => project.cleanup());
    const gw = await startInventory(project, ["--approval-timeout", "60000"], { stateDir });
    cleanup.push(() => gw.close());
    await gw.client.listTools();
    const db: Store = openStore(stateDir);
    cleanup.push(() => {
      db.close();
    });
    const key = new SoftAuthenticator();
    const signer = await pinnedSigner(db, stateDir, TEST_PASSPHRASE);
    const options = await passkeyRegistrationOptions(
      { rpId: TEST_RP_ID, rpName: "portcullis", userName: "me" },
      db,
    );
    await finishPasskeyRegistration(db, stateDir, signer, key.register(options), {
      challenge: options.challenge,
      ...EXPECT,
      name: "laptop",
    });

    const call = gw.client.callTool({ name: "read_status", arguments: {} });
    const { request } = await nextStoredRequest(stateDir);
    const approve: Decision = { approve: true, for: "session" };
    /** A decision answered by the pinned passkey at `origin`, written into the store as-is. */
    const writeFrom = (origin: string): string => {
      db.prepare(
        "UPDATE approval_requests SET state = 'pending', decided_at = NULL, grant_id = NULL, decision_signature = NULL WHERE request = ?",
      ).run(request);
      const prepared = preparePasskeyDecision(db, request, "approve");
      const a = key.assert(prepared.options.challenge, { origin });
      return decideRequest(db, request, approve, `passkey at ${origin}`, {
        kind: "passkey",
        statement: prepared.statement,
        signature: encodePasskeySignature(asStored(a)),
      }).grant!.grant;
    };

    // the console's port, another host: not honoured, the call keeps waiting
    const otherHost = writeFrom(`http://127.0.0.1:${PORT}`);
    await gw.waitForStderr(
      new RegExp(
        `grant ${otherHost} is not honoured: its origin is not on the passkey's RP id ${TEST_RP_ID}`,
      ),
    );
    expect(project.records()).toEqual([]);

    // the console refuses the RP id's host on another port: it checks the exact origin
    db.prepare(
      "UPDATE approval_requests SET state = 'pending', decided_at = NULL, grant_id = NULL, decision_signature = NULL WHERE request = ?",
    ).run(request);
    const viaConsole = preparePasskeyDecision(db, request, "approve");
    await expect(
      completePasskeyDecision(
        db,
        viaConsole,
        key.assert(viaConsole.options.challenge, { origin: "http://localhost:1" }),
        {
          ...EXPECT,
          stateDir,
        },
      ),
    ).rejects.toThrow(/origin/i);

    // the gateway honours it: the host is the RP id's, the port does not count
    const otherPort = writeFrom("http://localhost:1");
    expect((await call).isError).toBeFalsy();
    expect(project.records().map((r) => r.tool)).toEqual(["read_status"]);
    expect(gw.stderr()).not.toMatch(new RegExp(`grant ${otherPort} is not honoured`));

    const rejected = (await auditEvents(stateDir)).filter((e) => e.type === "decision_rejected");
    expect(rejected).toEqual([
      expect.objectContaining({
        grant: otherHost,
        why: expect.stringMatching(/origin is not on the passkey's RP id/),
      }),
    ]);
    // `grants` lists the honoured one only as honoured
    const grants = await runCli(["grants", "--json", "--state-dir", stateDir]);
    expect(grants.code, grants.stderr).toBe(0);
    const listed = (JSON.parse(grants.stdout) as { grants: { grant: string; honoured?: boolean }[] }).grants;
    expect(listed.find((g) => g.grant === otherPort)).toMatchObject({ honoured: true });
  });
});
