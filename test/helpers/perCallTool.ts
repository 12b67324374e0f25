// A gateway asking a human for every call of one tool the catalog fixture serves, and the CLI
// steps the one-call approval tests take (test/cli/hostile-approve-cut-arguments,
// hostile-approve-hidden-arguments). The fixture's record of the calls it received is the ground
// truth of what was forwarded.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { runCli, type Session } from "./gateway.js";
import { recordingCatalogGateway } from "./recordingCatalogGateway.js";
import { passphraseEnv } from "./state.js";

/** The gateway (label "shell", per-call, a 60 s hold) serving `tool`; its teardown goes on `cleanup`. */
export async function perCallToolGateway(
  tool: Record<string, unknown>,
  cleanup: (() => Promise<void> | void)[],
): Promise<{ stateDir: string; gw: Session<Client>; received: () => Record<string, unknown>[] }> {
  const { stateDir, gw, received } = await recordingCatalogGateway(
    [tool],
    ["--label", "shell", "--approval", "per-call", "--approval-timeout", "60000"],
    cleanup,
    "portcullis-per-call-tool-",
  );
  return { stateDir, gw, received };
}

/** `portcullis approve ID --for call …` with the passphrase from a file, no terminal. */
export function approveForCall(stateDir: string, id: string, ...extra: string[]) {
  return runCli(["approve", id, "--for", "call", ...extra, "--state-dir", stateDir], {
    env: passphraseEnv(),
    noTerminal: true,
  });
}

/** The request's state as `approvals --json` lists it ("not pending" once it is not listed). */
export function requestState(stateDir: string, id: string): Promise<string> {
  return runCli(["approvals", "--json", "--state-dir", stateDir]).then((r) => {
    const listed = (JSON.parse(r.stdout) as { requests: { request: string; state: string }[] }).requests;
    return listed.find((q) => q.request === id)?.state ?? "not pending";
  });
}
