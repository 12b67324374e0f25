// The execution record is completed once the server answers: the processes a wrapper started
// (for a server reached by URL, what it said of itself: test/http/upstream-fixture.test.ts). The
// audit holds the completed record (server_identified) under the identity `status` shows, before
// the first call is released, whenever it differs from what server_started recorded at launch.
import { rmSync, writeFileSync } from "node:fs";
import { basename, join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { waitFor } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { newStateDir } from "../helpers/state.js";
import { gatewayRow } from "../helpers/status.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

interface Row {
  epoch: string;
  record: { identityDigest: string; processes: { executable: string }[] };
}

describe("server_identified", () => {
  it.runIf(process.platform === "linux")(
    "a shell wrapper's server: the record with the server's process is in the audit before the first call",
    async () => {
      const stateDir = newStateDir();
      // not `exec`: the shell stays, and the server is its child, started only once the launch is
      // recorded (server_started: the shell alone). A fixed delay here was not enough on a loaded
      // machine: the launch's record already held the server, and nothing was left to complete.
      const go = join(stateDir, "..", `${basename(stateDir)}.go`);
      const script = `while [ ! -e "${go}" ]; do sleep 0.05; done; "${NODE}" "${FIXTURES.echo}"`;
      const starting = startGateway({
        args: ["--approval", "none", "--", "/bin/sh", "-c", script],
        stateDir,
        connectTimeoutMs: 60_000,
      });
      cleanup.push(() => rmSync(go, { force: true }));
      await waitFor(
        async () => (await auditEvents(stateDir)).some((e) => e.type === "server_started"),
        45_000,
        "the launch's server_started",
      );
      writeFileSync(go, "");
      const gw = await starting;
      cleanup.push(() => gw.close());
      await gw.client.listTools();
      await gw.client.callTool({ name: "echo", arguments: { message: "x" } });

      // the row gets the completed record as the server answers, or at the next heartbeat when the
      // store was busy then: waited for (a row that never shows it fails below)
      await gatewayRow(
        stateDir,
        (r) => (r.record?.processes.length ?? 0) >= 2,
        "the row to hold the completed record",
        15_000,
      ).catch(() => null);
      const status = await runCli(["status", "--json", "--state-dir", stateDir]);
      const row = (JSON.parse(status.stdout).gateways as Row[])[0]!;
      const events = await auditEvents(stateDir);
      const started = events.find((e) => e.type === "server_started")!;
      const identified = events.filter((e) => e.type === "server_identified");
      expect(identified).toHaveLength(1);
      expect(identified[0]).toMatchObject({ epoch: row.epoch, identityDigest: row.record.identityDigest });
      expect((started.record as Row["record"]).identityDigest).not.toBe(row.record.identityDigest);
      const processes = (identified[0]!.record as Row["record"]).processes;
      expect(processes.length).toBeGreaterThanOrEqual(2); // the shell and the server
      // before the call's intent
      const order = events.map((e) => e.type);
      expect(order.indexOf("server_identified")).toBeLessThan(order.indexOf("tool_called"));
    },
  );
});
