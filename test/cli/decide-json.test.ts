// approve, deny and revoke print their result as one JSON object with --json: a script read the
// grant's id out of "approved 01J…: grant 01J… (session, until …)". Stdout holds the object and
// nothing else (the review and the "To approve …" line go to stderr); a failure is still one
// sentence on stderr with its exit code and nothing on stdout; the passphrase is never in either.
// The real CLI against a real gateway, no terminal (the passphrase from a file).
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { afterEach, describe, expect, it } from "vitest";
import { nextStoredRequest } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { catalogGateway } from "../helpers/catalogGateway.js";
import { runCli } from "../helpers/gateway.js";
import { passphraseEnv, TEST_PASSPHRASE } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const cli = (stateDir: string, ...args: string[]) =>
  runCli([...args, "--state-dir", stateDir], { env: passphraseEnv(), noTerminal: true });

/** The whole of stdout as one JSON object (throws when anything else is there). */
const result = (stdout: string) => JSON.parse(stdout) as Record<string, unknown>;

describe("approve, deny and revoke --json", () => {
  it("print one JSON object each; failures stay one sentence on stderr", async () => {
    const tool = "deploy";
    const { gw, stateDir } = await catalogGateway(
      makeCatalog([{ name: tool, inputSchema: { type: "object" } }]),
      ["--label", "shell", "--approval-timeout", "60000"],
      cleanup,
    );
    let calls = 0;
    // each call its own arguments: a retry of a denied call would be answered by the denial
    const call = () => {
      calls += 1;
      const c = (gw.client as Client).callTool({ name: tool, arguments: { n: calls } }, undefined, {
        timeout: 90_000,
      });
      c.catch(() => {});
      return c;
    };
    const seen = new Set<string>();

    // approve ID --for session --json
    call();
    const first = await nextStoredRequest(stateDir, seen);
    const approved = await cli(stateDir, "approve", first.request, "--for", "session", "--json");
    expect(approved.code, approved.stderr).toBe(0);
    const a = result(approved.stdout);
    expect(a).toMatchObject({
      request: first.request,
      decision: "approved",
      for: "session",
      serverLabel: "shell",
      tool,
      coversNothing: false,
      serverEpochNow: null,
    });
    const grant = a.grant as { grant: string; mode: string; executionEpoch: string };
    expect(grant.grant).toMatch(/^[0-9A-Z]{26}$/);
    expect(grant.mode).toBe("session");
    expect(a.executionEpoch).toBe(grant.executionEpoch);
    // the review and the confirmation line are for the human, on stderr, not in the result
    expect(approved.stderr).toContain(`To approve ${tool} on shell`);
    expect(approved.stdout + approved.stderr).not.toContain(TEST_PASSPHRASE);

    // revoke GRANT --json, then again: already revoked is exit 1, one sentence, nothing on stdout
    const revoked = await cli(stateDir, "revoke", grant.grant, "--json");
    expect(revoked.code, revoked.stderr).toBe(0);
    expect(result(revoked.stdout)).toMatchObject({
      decision: "revoked",
      grant: grant.grant,
      request: first.request,
      serverLabel: "shell",
      mode: "session",
    });
    expect(revoked.stderr).toBe("");
    const again = await cli(stateDir, "revoke", grant.grant, "--json");
    expect(again.code).toBe(1);
    expect(again.stdout).toBe("");
    expect(again.stderr).toMatch(/^portcullis revoke: grant \S+ was already revoked at [^\n]+\n$/);

    // deny --next --reason --json: why it was picked is in the result
    call();
    const second = await nextStoredRequest(stateDir, seen);
    const denied = await cli(stateDir, "deny", "--next", "--reason", "not now", "--json");
    expect(denied.code, denied.stderr).toBe(0);
    const d = result(denied.stdout);
    expect(d).toMatchObject({ request: second.request, decision: "denied", reason: "not now", tool });
    expect(d.picked).toMatch(/oldest pending request/);
    expect(denied.stderr).toContain(`deny --next: ${second.request}`);

    // failures: the same sentence and exit code as without --json, nothing on stdout
    call();
    const third = await nextStoredRequest(stateDir, seen);
    const noFor = await cli(stateDir, "approve", "--next", "--json");
    expect(noFor.code).toBe(2);
    expect(noFor.stdout).toBe("");
    expect(noFor.stderr).toMatch(
      /^portcullis approve --next: there is no terminal to ask on; give --for session\|call/,
    );
    const missing = await cli(stateDir, "approve", "01M8Z1VBWG8Q99D6CRYJE0396A", "--for", "call", "--json");
    expect(missing.code).toBe(2);
    expect(missing.stdout).toBe("");
    expect(missing.stderr).toContain("there is no approval request 01M8Z1VBWG8Q99D6CRYJE0396A");
    // approve --next --for call --json decides the one left
    const next = await cli(stateDir, "approve", "--next", "--for", "call", "--json");
    expect(next.code, next.stderr).toBe(0);
    const n = result(next.stdout);
    expect(n).toMatchObject({ request: third.request, decision: "approved", for: "call" });
    expect((n.grant as { mode: string }).mode).toBe("per-call");
    expect(typeof n.picked).toBe("string");
  });
});
