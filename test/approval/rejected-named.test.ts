// The line a gateway writes when a decision row is not honoured names what a human can look up:
// the grant by its id, a denial by its request, and an approval that names no grant by its
// request ("grant null is not honoured" said nothing).
import { afterEach, describe, expect, it } from "vitest";
import { HonouredDecisions } from "../../src/approval/honoured.js";
import { DecisionVerifier } from "../../src/approval/trust.js";
import { openStore } from "../../src/store/db.js";
import { removeDir } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";

let cleanup: (() => void)[] = [];
afterEach(() => {
  for (const c of cleanup.reverse()) c();
  cleanup = [];
});

describe("a decision row not honoured, as the gateway says it", () => {
  it("names the grant, the denial's request, or the request of an approval that names no grant", () => {
    const stateDir = newStateDir();
    cleanup.push(() => removeDir(stateDir));
    const db = openStore(stateDir);
    cleanup.push(() => db.close());
    const said: string[] = [];
    const recorded: Record<string, unknown>[] = [];
    const decisions = new HonouredDecisions({
      db,
      verifier: new DecisionVerifier(db, stateDir),
      run: "RUN",
      serverLabel: "inv",
      log: { warn: (line) => said.push(line) },
      emit: (e) => recorded.push(e),
    });
    decisions.reject(
      { what: "grant", grant: null, request: "01REQUESTNAMESNOGRANT0000" },
      "the approval names no grant",
    );
    decisions.reject(
      { what: "grant", grant: "01GRANT00000000000000000AA", request: "01R" },
      "its signature does not verify",
    );
    decisions.reject({ what: "denial", request: "01DENIEDREQUEST0000000000" }, "it is not signed");
    expect(said).toEqual([
      "the approval of request 01REQUESTNAMESNOGRANT0000 is not honoured: the approval names no grant",
      "grant 01GRANT00000000000000000AA is not honoured: its signature does not verify",
      "denial 01DENIEDREQUEST0000000000 is not honoured: it is not signed",
    ]);
    expect(said.join("\n")).not.toContain("null");
    // recorded each once, with what the row named
    expect(recorded.map((e) => e.type)).toEqual([
      "decision_rejected",
      "decision_rejected",
      "decision_rejected",
    ]);
  });
});
