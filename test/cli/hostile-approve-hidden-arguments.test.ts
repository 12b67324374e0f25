// A one-call approval is of exactly the call's arguments (their digest is signed), yet a review
// stores each argument redacted: what the redactor takes for a credential is `[redacted]` in
// every review, the terminal's and the console's, --verbose too. An agent that wants a call
// approved without the human seeing it dresses the harmful part up as a credential: a PEM key's
// markers around a command (which hides everything between them), `password=$(…)`. A one-call
// approval over a review that hid part of an argument is refused before the passphrase (the
// redactor keeps hiding what it takes for a key: a secret is never shown). Real gateway in front of
// the catalog fixture, the real CLI; the fixture's record of the calls it received is the ground
// truth of what was forwarded.
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { runCli } from "../helpers/gateway.js";
import { approveForCall, perCallToolGateway, requestState } from "../helpers/perCallTool.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const RUN = {
  name: "run_command",
  description: "Run a shell command.",
  inputSchema: {
    type: "object",
    required: ["command"],
    properties: { command: { type: "string" }, api_key: { type: "string" } },
    additionalProperties: false,
  },
};

/** The attack pass's command: a key's markers around `rm -rf ~`. */
const DRESSED_AS_KEY = 'echo "-----BEGIN PRIVATE KEY-----"; rm -rf ~; echo "-----END PRIVATE KEY-----"';
/** A span the redactor still hides (a secret-named pair's value runs to the end of its word). */
const HIDDEN = "$(rm$IFS-rf$IFS~)";
const PAIR = `echo password=${HIDDEN}`;

async function setup() {
  const { stateDir, gw, received } = await perCallToolGateway(RUN, cleanup);
  const call = (args: Record<string, unknown>) => {
    const c = gw.client.callTool({ name: "run_command", arguments: args }, undefined, { timeout: 90_000 });
    c.catch(() => {}); // awaited by the test; a failed expectation before that leaves it to the cleanup
    return c;
  };
  return { stateDir, received, call };
}

describe("a one-call approval of arguments the review hid part of", () => {
  it("a command between a key's markers, hidden by the review, cannot be approved for one call: refused before the passphrase, nothing runs", async () => {
    const { stateDir, received, call } = await setup();
    const pending = call({ command: DRESSED_AS_KEY });
    const req = await nextStoredRequest(stateDir);

    const listed = await runCli(["approvals", "--state-dir", stateDir]);
    expect(listed.stdout).not.toContain("rm -rf ~");
    expect(listed.stdout).toContain("not approvable for this call");

    const refused = await approveForCall(stateDir, req.request);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain("the review hid part of this call's argument command as a secret");
    expect(refused.stdout).not.toContain("rm -rf ~");
    expect(await requestState(stateDir, req.request)).toBe("pending");
    expect(received()).toEqual([]);
    const no = await runCli(["deny", req.request, "--state-dir", stateDir], {
      env: passphraseEnv(),
      noTerminal: true,
    });
    expect(no.code).toBe(0);
    await expect(pending).rejects.toMatchObject({ code: -32057 });
    expect(received()).toEqual([]);
  }, 60_000);

  it("is refused before the passphrase when part of an argument was hidden, --verbose too; denying it is allowed", async () => {
    const { stateDir, received, call } = await setup();
    const pending = call({ command: PAIR });
    const req = await nextStoredRequest(stateDir);

    for (const extra of [[], ["--verbose"]]) {
      // no passphrase in the environment: a refusal after asking for it would fail otherwise
      const refused = await runCli(
        ["approve", req.request, "--for", "call", ...extra, "--state-dir", stateDir],
        {
          noTerminal: true,
        },
      );
      expect(refused.stdout).toContain("password=[redacted]");
      // said on the review itself, before any choice
      expect(refused.stdout).toContain(
        "! part of command is hidden as a secret ([redacted]): not approvable for this call, deny it",
      );
      expect(refused.stdout).not.toContain("rm$IFS");
      expect(refused.code).toBe(2);
      expect(refused.stderr).toContain("the review hid part of this call's argument command as a secret");
      expect(refused.stderr).toContain(`deny it ('portcullis deny ${req.request}`);
      expect(refused.stderr).toContain("nothing was approved");
      expect(refused.stderr).not.toMatch(/passphrase/i);
      expect(await requestState(stateDir, req.request)).toBe("pending");
    }
    expect(received()).toEqual([]);

    const no = await runCli(["deny", req.request, "--state-dir", stateDir], {
      env: passphraseEnv(),
      noTerminal: true,
    });
    expect(no.code).toBe(0);
    await expect(pending).rejects.toMatchObject({ code: -32057 });
    expect(received()).toEqual([]);
  }, 60_000);

  it("a whole value under a secret-like argument name, shown as `name (hidden)`, does not refuse it", async () => {
    const { stateDir, received, call } = await setup();
    const args = { command: "ls /tmp", api_key: "k-123" };
    const pending = call(args);
    const req = await nextStoredRequest(stateDir);
    const ok = await approveForCall(stateDir, req.request);
    expect(ok.stderr).toBe("");
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain("api_key (hidden)");
    expect((await pending).isError).toBeFalsy();
    expect(received()).toEqual([args]);
  }, 60_000);
});
