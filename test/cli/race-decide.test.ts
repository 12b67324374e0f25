// Several humans (or scripts) deciding the same pending request at the same moment:
// `approve ID --for session`, `approve ID --for call` and `deny ID` started together, and `revoke
// GRANT` twice at once. Real processes on one state directory, a real gateway waiting for the
// decision. Whatever the interleaving: exactly one decision is recorded (one command exits 0, the
// others exit 1 saying the request is no longer pending), the request's row matches the single
// audit record of it, at most one grant exists, the waiting call gets the winner's answer, and the
// audit chain verifies.
import { afterEach, describe, expect, it } from "vitest";
import { openStoreToRead } from "../../src/store/db.js";
import { nextStoredRequest, verifiedAuditEvents } from "../helpers/approvals.js";
import { removeDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { newStateDir, passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const ROUNDS = 4;

describe("deciding one request from several processes at once", () => {
  it("approve --for session, approve --for call and deny together: one decision, one record, at most one grant", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const seen = new Set<string>();
    for (let round = 0; round < ROUNDS; round++) {
      const gw: RawGateway = rawGateway({
        stateDir,
        args: ["--label", "echo", "--", ...fixtureCommand("echo")],
      });
      cleanup.push(() => gw.close());
      await gw.initialize();
      const call = gw.request(
        "tools/call",
        { name: "echo", arguments: { message: `round ${round}` } },
        20_000,
      );
      const req = await nextStoredRequest(stateDir, seen);

      const env = passphraseEnv();
      // rotate who starts first, so each command gets to be first
      const commands = [
        ["approve", req.request, "--for", "session"],
        ["approve", req.request, "--for", "call"],
        ["deny", req.request],
      ];
      const order = [...commands.slice(round % 3), ...commands.slice(0, round % 3)];
      const results = await Promise.all(
        order.map((args) => runCli([...args, "--state-dir", stateDir], { env })),
      );
      const winners = results.filter((r) => r.code === 0);
      expect(winners.length, results.map((r) => `${r.code} ${r.stdout}${r.stderr}`).join("\n")).toBe(1);
      for (const r of results.filter((x) => x.code !== 0)) {
        expect(r.code, r.stderr).toBe(1);
        expect(r.stderr).toMatch(/no longer pending/);
      }
      const winner = order[results.findIndex((r) => r.code === 0)]!;

      const db = openStoreToRead(stateDir);
      let row: { state: string; decision_for: string | null; grant_id: string | null };
      let grants: { grant_id: string; mode: string }[];
      try {
        row = db
          .prepare("SELECT state, decision_for, grant_id FROM approval_requests WHERE request = ?")
          .get(req.request) as typeof row;
        grants = db
          .prepare("SELECT grant_id, mode FROM grants WHERE request = ?")
          .all(req.request) as typeof grants;
      } finally {
        db.close();
      }
      if (winner[0] === "deny") {
        expect(row.state).toBe("denied");
        expect(grants).toEqual([]);
      } else {
        expect(row.state).toBe("approved");
        expect(row.decision_for).toBe(winner[3]);
        expect(grants.map((g) => g.grant_id)).toEqual([row.grant_id]);
        expect(grants[0]!.mode).toBe(winner[3] === "session" ? "session" : "per-call");
      }
      const answer = await call;
      expect(answer.error === undefined, JSON.stringify(answer)).toBe(winner[0] === "approve");

      const events = await verifiedAuditEvents(stateDir);
      const decisions = events.filter(
        (e) =>
          (e.type === "approval_granted" || e.type === "approval_denied") &&
          JSON.stringify(e).includes(req.request),
      );
      expect(decisions.map((e) => e.type)).toEqual([
        winner[0] === "deny" ? "approval_denied" : "approval_granted",
      ]);
      await gw.close();
    }
  }, 60_000);

  it("revoke GRANT twice at once while the gateway calls under it: one revocation, one record, and no call covered after it", async () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const gw: RawGateway = rawGateway({
      stateDir,
      args: ["--label", "echo", "--", ...fixtureCommand("echo")],
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    const seen = new Set<string>();
    const first = gw.request("tools/call", { name: "echo", arguments: { message: "first" } }, 20_000);
    const req = await nextStoredRequest(stateDir, seen);
    const approved = await runCli(["approve", req.request, "--for", "session", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(approved.code, approved.stderr).toBe(0);
    expect((await first).error).toBeUndefined();
    const db = openStoreToRead(stateDir);
    let grant: string;
    try {
      grant = (
        db.prepare("SELECT grant_id FROM approval_requests WHERE request = ?").get(req.request) as {
          grant_id: string;
        }
      ).grant_id;
    } finally {
      db.close();
    }

    // calls keep flowing under the grant while two revokes race
    let stop = false;
    let n = 0;
    const flow = (async () => {
      while (!stop) {
        const r = await gw.request(
          "tools/call",
          { name: "echo", arguments: { message: `flow ${n++}` } },
          20_000,
        );
        if (r.error) break; // refused (revoked) or held for a new approval: the grant stopped covering
      }
    })();
    const results = await Promise.all(
      [0, 1].map(() => runCli(["revoke", grant, "--state-dir", stateDir], { env: passphraseEnv() })),
    );
    expect(results.map((r) => r.code).sort(), results.map((r) => r.stderr).join("\n")).toEqual([0, 1]);
    expect(results.find((r) => r.code === 1)!.stderr).toMatch(/already revoked/);
    stop = true;

    // A call started after both revokes returned is not covered: it asks a human again (as may
    // the flow's last call); every request it makes is denied until it is answered.
    const after = gw.request(
      "tools/call",
      { name: "echo", arguments: { message: "after the revoke" } },
      20_000,
    );
    let answered = false;
    void after.then(() => {
      answered = true;
    });
    while (!answered) {
      const next = nextStoredRequest(stateDir, seen).catch(() => null); // none may come: `after` is answered
      const again = await Promise.race([next, after.then(() => null)]);
      if (again) await runCli(["deny", again.request, "--state-dir", stateDir], { env: passphraseEnv() });
    }
    expect((await after).error?.data).toMatchObject({ error: "approval_denied" });
    await flow;

    const events = await verifiedAuditEvents(stateDir);
    const revocations = events.filter(
      (e) => e.type === "grants_revoked" && (e.grants as string[] | undefined)?.includes(grant),
    );
    expect(revocations.length).toBe(1);
    expect(revocations[0]!.reason).toBe("revoked by a human");
  }, 60_000);
});
