// A server under its own watcher (node --watch) whose worker is swapped before the first answer:
// a build broken at launch, fixed while the client's initialize waits in the pipe. Replacement
// detection compares with the processes noted at the first answer, so that new worker was taken
// for the epoch's own, and the fixed build served calls under the epoch whose recorded identity
// is the broken build's.
import { createHash } from "node:crypto";
import { readFileSync, writeFileSync } from "node:fs";
import { afterEach, expect, it } from "vitest";
import { waitFor } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { makeProject } from "../helpers/project.js";
import { gatewayRow } from "../helpers/status.js";
import { nodeWatchGateway } from "../helpers/watchGateway.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const sha256 = (file: string) => createHash("sha256").update(readFileSync(file)).digest("hex");

it("node --watch: a build fixed before the first answer is served under an epoch with the fixed build's identity", async () => {
  const project = makeProject("B");
  cleanup.push(() => project.cleanup());
  writeFileSync(project.entry, `${readFileSync(project.entry, "utf8")}\nthis is not javascript (;\n`);
  const gw = nodeWatchGateway(project, { holdTimeoutMs: 60_000 });
  cleanup.push(() => gw.close());
  const init = gw.initialize(undefined, 60_000);
  // node --watch ran the broken build, which crashed: it waits for a change, the initialize in the pipe
  await waitFor(() => /Failed running/.test(gw.stderr()), 30_000, "the broken build to crash");
  project.rebuild("C");
  expect((await init).result).toBeDefined();
  const call = await gw.request("tools/call", { name: "read_status", arguments: {} }, 60_000);
  expect(JSON.parse(call.result.content[0].text).revision).toBe("C");
  // the row gets the record of the epoch that serves as it comes up, or at the next heartbeat when
  // the store was busy then: waited for (a row that never shows it fails below, naming the sha256)
  const fixed = sha256(project.entry);
  await gatewayRow(
    gw.stateDir,
    (r) => (r.record?.entry as { sha256?: string } | null | undefined)?.sha256 === fixed,
    "the row to record the fixed build",
    15_000,
  ).catch(() => null);
  const status = await runCli(["status", "--json"], { stateDir: gw.stateDir });
  const row = (
    JSON.parse(status.stdout) as { gateways: { epoch: string; record: { entry: { sha256: string } } }[] }
  ).gateways[0]!;
  // the epoch the fixed build serves under records the fixed build, not the broken one
  expect(row.record.entry.sha256).toBe(fixed);
});
