// The "connection over" check on a late answer to a replayed handshake, on its own. Through the
// CLI the server is stopped as soon as the client's input closes and nothing is owed, so that
// answer comes from a process no longer alive, and the check behind it never decides anything.
// Here the gateway is driven in-process in front of a real server process (the lenient fixture,
// its initialize held while a file exists) and the test plays the client: the client closes its
// input (finishInFlight) while the replayed initialize waits, and the new process stays alive and
// current when its answer comes, as it does while a gateway still waits for a client's last
// answers. That answer must carry nothing on: no notifications/initialized, no catalog fetch.
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { AuditLog } from "../../src/audit/index.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { openStore } from "../../src/store/db.js";
import type { Logger } from "../../src/util/log.js";
import { readJsonLines, removeDir, waitFor } from "../helpers/files.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { deferredCleanup, quiet, supervisorIn } from "../helpers/supervisor.js";

const defer = deferredCleanup();

interface Logged {
  method: string;
  pid: number;
}

/** The fixture's own markers in its method log, not messages it received. */
const MARKER = /^(held|answered) |^stdin ended$/;

/** The modern era's envelope, on every request of a 2026-07-28 client. */
const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};

describe("a late answer to a replayed handshake once the connection is over", () => {
  for (const era of ["legacy", "modern"] as const) {
    const method = era === "legacy" ? "initialize" : "server/discover";
    it(`${era} era: the client closed its input while the new process's ${method} waited: its answer, from a process still alive and current, sends that process nothing more`, async () => {
      const dir = mkdtempSync(join(tmpdir(), "pc-late-handshake-"));
      const stateDir = newStateDir();
      defer(() => removeDir(dir));
      defer(() => removeDir(stateDir));
      const hold = join(dir, "hold");
      const methodLog = join(dir, "methods.jsonl");
      const logged = () => (existsSync(methodLog) ? readJsonLines<Logged>(methodLog) : []);

      const db = openStore(stateDir);
      defer(() => void db.close());
      const events = auditSink(AuditLog.open(db, stateDir), quiet);
      const { sup } = supervisorIn(dir, {
        serverLabel: "late",
        command: NODE,
        args: [FIXTURES.lenient],
        env: {
          PATH: process.env.PATH ?? "/usr/bin:/bin",
          FIXTURE_METHOD_LOG: methodLog,
          FIXTURE_INIT_HOLD: hold,
          FIXTURE_LISTEN_OPEN: "1",
        },
      });
      defer(() => sup.shutdown());
      const debug: string[] = [];
      const log: Logger = { ...quiet, debug: (m) => void debug.push(m), debugging: true };
      const sent: { id?: unknown; result?: unknown; error?: unknown }[] = [];
      const gateway = new Gateway({
        label: "late",
        onChange: "report",
        supervisor: sup,
        store: db,
        log,
        events,
        downstream: { send: (m) => void sent.push(m as (typeof sent)[number]), close: () => {} },
        onEnd: () => {},
      });
      await sup.start();

      // the client's handshake and its first list, served by the first process (modern: and a
      // subscription of its own, which a new process gets once its handshake is complete)
      const request = (id: number | string, name: string, params: Record<string, unknown> = {}) =>
        gateway.onClientLine(
          JSON.stringify({
            jsonrpc: "2.0",
            id,
            method: name,
            params: era === "modern" ? { ...params, _meta: META } : params,
          }),
        );
      if (era === "legacy")
        request(1, "initialize", {
          protocolVersion: "2025-11-25",
          capabilities: {},
          clientInfo: { name: "t", version: "1" },
        });
      else request(1, "server/discover");
      await waitFor(() => sent.find((m) => m.id === 1), 20_000, "the handshake's answer");
      if (era === "legacy")
        gateway.onClientLine(JSON.stringify({ jsonrpc: "2.0", method: "notifications/initialized" }));
      request(2, "tools/list");
      expect(await waitFor(() => sent.find((m) => m.id === 2), 20_000, "the list")).toHaveProperty("result");
      if (era === "modern") {
        request("listen:0", "subscriptions/listen", { notifications: { promptsListChanged: true } });
        await waitFor(
          () => logged().find((l) => l.method === "subscriptions/listen"),
          20_000,
          "the subscription at the first process",
        );
      }

      // the process dies; the next one's replayed initialize is held
      const first = sup.current!;
      writeFileSync(hold, "");
      process.kill(first.child.pid!, "SIGKILL");
      const held = await waitFor(
        () => logged().find((l) => l.method === `held ${method}` && l.pid !== first.child.pid),
        20_000,
        `the replayed ${method}`,
      );
      const next = sup.current!;
      expect(next).not.toBe(first);

      // the client closes its input: nothing is owed, so this resolves at once; the server is not
      // stopped here (that is the caller's, once it resolves), and the new process stays current
      await gateway.finishInFlight(5_000);
      expect(next.alive).toBe(true);
      expect(sup.current).toBe(next);

      rmSync(hold);
      // the late answer is read: dropped, or (without the check) carried on to the process
      await waitFor(
        () =>
          debug.some((l) =>
            /dropped the answer of epoch=.* to its replayed handshake: the connection is over/.test(l),
          ) ||
          logged().some((l) => l.pid === held.pid && l.method !== method && !MARKER.test(l.method)) ||
          undefined,
        20_000,
        "the late answer handled",
      );
      expect(next.alive && sup.current === next).toBe(true);
      // a request of the gateway's own after it, answered by the same process: every line the
      // gateway wrote to it before was read by then
      const after = await new Promise((resolve) => {
        // (the gateway sends nothing more to it: the test asks through the supervisor's own pipe)
        sup.once("line", (text) => resolve(text));
        sup.send({
          jsonrpc: "2.0",
          id: "probe",
          method: "ping",
          ...(era === "modern" ? { params: { _meta: META } } : {}),
        });
      });
      expect(String(after)).toContain("probe");
      const received = logged()
        .filter((l) => l.pid === held.pid && !MARKER.test(l.method))
        .map((l) => l.method);
      expect(received).toEqual([method, "ping"]);
    }, 60_000);
  }
});
