// A real gateway before the catalog fixture (`deploy`, and any other tools given) with calls held
// for a human, one pending approval request each, and the store opened beside it to damage a
// row: what the tests of rows another process rewrote (hostile-garbled-review,
// hostile-damaged-columns, hostile-damaged-rows) start from.
import { join } from "node:path";
import Database from "better-sqlite3";
import { catalogFile, DEPLOY_TOOL, gatewayFor } from "../console/helpers.js";
import { type Pending, waitForPending } from "./approvals.js";
import { held } from "./browser.js";
import { removeDir, tempDir } from "./files.js";
import { type CliResult, runCli } from "./gateway.js";
import { newStateDir, passphraseEnv } from "./state.js";

export interface HeldDeploys {
  stateDir: string;
  gw: Awaited<ReturnType<typeof gatewayFor>>;
  /** one pending request per note, in order */
  requests: Pending[];
  /** each held call's answer (its rejection already caught) */
  calls: Promise<unknown>[];
  /** the store, as any process of the user may open it */
  db: Database.Database;
  /** a CLI command on the state directory, with the test passphrase and no terminal */
  cli: (...args: string[]) => Promise<CliResult>;
}

/**
 * Starts the gateway (label `shop`, `tools` served) and calls `deploy` once per note, waiting for
 * each call's request before the next, so that `requests[i]` is the call with `notes[i]`. What is
 * opened is closed by the functions pushed on `cleanup`, in reverse.
 */
export async function heldDeploys(
  cleanup: (() => Promise<void> | void)[],
  notes: string[],
  tools: unknown[] = [DEPLOY_TOOL],
): Promise<HeldDeploys> {
  const stateDir = newStateDir();
  const dir = tempDir("portcullis-held-deploys-");
  cleanup.push(() => {
    removeDir(dir);
    removeDir(stateDir);
  });
  const gw = await gatewayFor(stateDir, catalogFile(dir, tools), [], { PORTCULLIS_NO_CONSOLE: "1" });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const requests: Pending[] = [];
  const calls: Promise<unknown>[] = [];
  for (const note of notes) {
    calls.push(held(gw.client.callTool({ name: "deploy", arguments: { note } })));
    const seen = new Set(requests.map((r) => r.request));
    requests.push(
      await waitForPending(
        stateDir,
        (l) => l.find((p) => !seen.has(p.request)),
        20_000,
        `request of "${note}"`,
      ),
    );
  }
  const db = new Database(join(stateDir, "portcullis.db"));
  cleanup.push(() => {
    db.close();
  });
  const cli = (...args: string[]) =>
    runCli([...args, "--state-dir", stateDir], { env: passphraseEnv(), noTerminal: true });
  return { stateDir, gw, requests, calls, db, cli };
}
