// approve, deny, revoke and passkey rm write their failures themselves (approvals.ts' and
// passkey.ts' fail()), not through the command line's last sentence, which escapes: a sentence that
// names the state directory (no keyring in it) reached the terminal raw when that directory's name
// holds a newline, an ESC, a C1 CSI or a right-to-left override. Each command is made to fail on
// such a directory here, after the work that needs a keyring was done with it: a real gateway's
// pending request (approve, deny), a grant approved through the CLI (revoke), a passkey registered
// as the console registers one (passkey rm). The keyring is then moved away. The real CLI, over pipes.
import { cpSync, renameSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { finishPasskeyRegistration, passkeyRegistrationOptions } from "../../src/approval/passkey.js";
import { pinnedSigner } from "../../src/approval/pin.js";
import { safeText } from "../../src/catalog/text.js";
import { openStore } from "../../src/store/db.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { SoftAuthenticator, TEST_ORIGIN, TEST_RP_ID } from "../helpers/authenticator.js";
import { tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir, passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

/** C0 controls but the newline (a line end the command writes itself), C1 controls, format characters (bidi) */
const RAW = /(?!\n)[\p{Cc}\p{Cf}]/u;
/** the newline too: one sentence is one line, whatever the directory's name */
const HOSTILE = "a\n\u001b[2J\u009b1m\u202egnp.";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** A pending request of a real gateway in `stateDir`, its call waiting. */
async function pendingRequest(stateDir: string, seen: Set<string>): Promise<string> {
  const gw = rawGateway({ stateDir, args: ["--label", "echo", "--", ...fixtureCommand("echo")] });
  cleanup.push(() => gw.close());
  await gw.initialize();
  gw.request("tools/call", { name: "echo", arguments: { message: "hi" } }, 60_000).catch(() => {});
  return (await nextStoredRequest(stateDir, seen)).request;
}

/** The failure holds no raw control character, and names its command and the directory, escaped. */
function expectEscaped(
  r: { code: number | null; stdout: string; stderr: string },
  command: string,
  stateDir: string,
) {
  // soft: each command is reported, not only the first that fails
  expect.soft(r.code, `${command}: ${r.stderr}`).toBe(2);
  expect.soft(r.stderr, command).not.toMatch(RAW);
  expect.soft(r.stdout, command).not.toMatch(RAW);
  expect
    .soft(r.stderr, command)
    .toContain(`portcullis ${command}: there is no keyring in ${safeText(stateDir)};`);
}

describe("approve, deny, revoke and passkey rm name a state directory escaped in their own failures", () => {
  it("no keyring left in a state directory whose name holds control characters", async () => {
    const stateDir = join(tempDir(), `state-${HOSTILE}`);
    cpSync(newStateDir(), stateDir, { recursive: true });
    const env = passphraseEnv();
    const seen = new Set<string>();

    // a grant, to revoke; a passkey, to remove; a second request left pending
    const first = await pendingRequest(stateDir, seen);
    const approved = await runCli(["approve", first, "--for", "session", "--state-dir", stateDir], { env });
    expect(approved.code, approved.stderr).toBe(0);
    const grant = /grant ([0-9A-Z]{26})/.exec(approved.stdout)![1]!;
    const db = openStore(stateDir);
    const key = new SoftAuthenticator();
    try {
      const signer = await pinnedSigner(db, stateDir, TEST_PASSPHRASE);
      const options = await passkeyRegistrationOptions(
        { rpId: TEST_RP_ID, rpName: "portcullis", userName: "me" },
        db,
      );
      await finishPasskeyRegistration(db, stateDir, signer, key.register(options), {
        challenge: options.challenge,
        origin: TEST_ORIGIN,
        rpId: TEST_RP_ID,
        name: "laptop",
      });
    } finally {
      db.close();
    }
    const second = await pendingRequest(stateDir, seen);
    renameSync(join(stateDir, "keyring.json"), join(stateDir, "keyring.json.away"));

    const runs = {
      approve: ["approve", second, "--for", "session"],
      deny: ["deny", second],
      revoke: ["revoke", grant],
      // named by its subcommand, as passkey's other failures are
      "passkey rm": ["passkey", "rm", key.id],
    };
    for (const [command, args] of Object.entries(runs)) {
      const r = await runCli([...args, "--state-dir", stateDir], { env });
      expectEscaped(r, command, stateDir);
    }
  }, 60_000);

  it("a request ID or grant that is not one is not repeated, and the list to look in names the directory escaped", async () => {
    // (guarded by the ID's shape check and the pasted command's quoting, not by fail()'s escaping)
    const stateDir = join(tempDir(), `state-${HOSTILE}`);
    cpSync(newStateDir(), stateDir, { recursive: true });
    for (const command of ["approve", "deny", "revoke"]) {
      const r = await runCli([command, `01ARZ3NDEKTSV4RRFFQ69G5FA${HOSTILE}`, "--state-dir", stateDir], {
        env: passphraseEnv(),
      });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).not.toMatch(RAW);
      expect(r.stderr).toContain(`portcullis ${command}: the `);
      expect(r.stderr).not.toContain("01ARZ3NDEKTSV4RRFFQ69G5FA");
    }
  });
});
