// `portcullis revoke` from another process while a gateway runs: the gateway keeps the run's
// session grants as last read (it does not read the store per call), so what stops the next call
// under a revoked grant is step 8, which reads the grant again with the call's intent record
// (src/approval/authorizer.ts, condition). Each call covered by a grant from that read must get
// that second look, also when several calls are decided at once (sent in one write, so that the
// gateway decides them together): none may go out under the revoked grant. A real gateway (a raw
// stdio peer, to write the calls together), CLI and store.

import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { catalogFile, DEPLOY_TOOL } from "../console/helpers.js";
import { storedPending, waitForPending } from "../helpers/approvals.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli, type WireMessage } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const deploy = (id: string, note: string) =>
  JSON.stringify({
    jsonrpc: "2.0",
    id,
    method: "tools/call",
    params: { name: "deploy", arguments: { note } },
  });

describe("a session grant revoked from the CLI while its gateway runs", () => {
  it.each([1, 3])(
    "the very next calls (%i sent at once) are held for a human, none covered by it",
    async (n) => {
      const dir = tempDir("portcullis-revoke-next-");
      cleanup.push(() => removeDir(dir));
      const gw = rawGateway({
        args: ["--label", "shop", "--approval-timeout", "60000", "--", NODE, FIXTURES.catalog],
        env: { FIXTURE_CATALOG: catalogFile(dir, [DEPLOY_TOOL]), PORTCULLIS_NO_CONSOLE: "1" },
      });
      cleanup.push(() => gw.close());
      const { stateDir } = gw;
      const cli = (...args: string[]) =>
        runCli([...args, "--state-dir", stateDir], { env: passphraseEnv(), noTerminal: true });
      const answer = (id: string) => gw.next((m) => m.id === id, 30_000);
      await gw.initialize();
      await gw.request("tools/list");

      // approved for the session, then a call covered by the grant as the gateway read it
      gw.send(`${deploy("first", "approved for the session")}\n`);
      const first = await waitForPending(
        stateDir,
        (l) => l[0],
        20_000,
        "the first call's request",
        storedPending,
      );
      const approved = await cli("approve", first.request, "--for", "session");
      expect(approved.code, approved.stderr).toBe(0);
      expect((await answer("first")).error).toBeUndefined();
      gw.send(`${deploy("covered", "covered")}\n`);
      expect((await answer("covered")).error).toBeUndefined();

      const db = new Database(join(stateDir, "portcullis.db"), { readonly: true });
      const grant = db
        .prepare("SELECT grant_id FROM grants WHERE request = ?")
        .pluck()
        .get(first.request) as string;
      db.close();
      const revoked = await cli("revoke", grant);
      expect(revoked.code, revoked.stderr).toBe(0);

      // n calls in one write: the gateway reads them in one chunk and decides them together
      const ids = Array.from({ length: n }, (_, i) => `after-${i}`);
      gw.send(ids.map((id, i) => `${deploy(id, `after revoke ${i}`)}\n`).join(""));
      const answers = new Map<string, WireMessage>();
      for (const id of ids) void answer(id).then((m) => answers.set(id, m));
      // each is held: deny whatever the gateway asks until every call has its answer
      const denied = new Set<string>([first.request]);
      while (answers.size < n) {
        const asked = await waitForPending(
          stateDir,
          (l) => l.find((p) => !denied.has(p.request)) ?? (answers.size === n ? "done" : null),
          20_000,
          "a request of a call after the revoke",
          storedPending,
        );
        if (asked === "done") break;
        denied.add(asked.request);
        const d = await cli("deny", asked.request);
        expect(d.code, d.stderr).toBe(0);
      }
      for (const id of ids) {
        const m = answers.get(id)!;
        expect(m.error, `${id} went out under the revoked grant: ${JSON.stringify(m)}`).toBeDefined();
        expect(JSON.stringify(m.error)).toContain("A human denied this call");
      }
    },
    30_000,
  );
});
