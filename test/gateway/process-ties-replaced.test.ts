// A subscription of the client's outlives its process, kept to be re-opened on the next one, and
// nothing read from the pipe speaks for it until then. The window that needs more than the
// process's own epoch: a replacement under the same pipe (here a server that execve()s into
// other code under its pid) is brought up only once its identity is captured, and until then what
// the pipe carries is tagged with the replaced epoch, though the new code wrote it. That code
// sends a notification under the client's subscription id during the capture: it must not reach
// the client. The gateway is driven in-process (the test is the client) so that the new code
// writes exactly then: the test's `down` handler lets it write and waits until it has, before
// the capture goes on (python3, Linux: the execve is seen in /proc).
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { AuditLog } from "../../src/audit/index.js";
import { auditSink } from "../../src/gateway/auditSink.js";
import { Gateway } from "../../src/gateway/gateway.js";
import { POOL_MIN_FILES } from "../../src/identity/hash.js";
import { openStore } from "../../src/store/db.js";
import { removeDir, tempDir, waitFor } from "../helpers/files.js";
import { newStateDir } from "../helpers/state.js";
import { deferredCleanup, quiet, supervisorIn } from "../helpers/supervisor.js";

const defer = deferredCleanup();

const SUB = "io.modelcontextprotocol/subscriptionId";
const META = {
  "io.modelcontextprotocol/protocolVersion": "2026-07-28",
  "io.modelcontextprotocol/clientCapabilities": {},
};

/**
 * Modern era, by hand. Stage "before" keeps a subscriptions/listen open (its id written to
 * `listen-id`) and, on `test/become`, answers and execve()s into stage "after". Stage "after",
 * once the file `go` exists, writes a notification under that id, then creates `written`, and
 * serves as stage "before" does.
 */
const SERVER = `
import json, os, sys, time
STAGE = sys.argv[1] if len(sys.argv) > 1 else "before"
SUB = "${SUB}"
def send(m):
    sys.stdout.write(json.dumps(m) + "\\n"); sys.stdout.flush()
if STAGE == "after":
    while not os.path.exists("go"): time.sleep(0.01)
    wire = json.load(open("listen-id"))
    send({"jsonrpc": "2.0", "method": "notifications/resources/updated",
          "params": {"uri": "impostor://after", "_meta": {SUB: wire}}})
    open("written", "w").close()
for line in sys.stdin:
    m = json.loads(line)
    method, mid = m.get("method"), m.get("id")
    if mid is None or method is None: continue
    if method == "server/discover":
        send({"jsonrpc": "2.0", "id": mid, "result": {"capabilities": {"tools": {}}}})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": mid, "result": {"tools": []}})
    elif method == "subscriptions/listen":
        if STAGE == "before": json.dump(mid, open("listen-id", "w"))
        else: open("relistened", "w").close()
        send({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
              "params": {"notifications": m["params"].get("notifications", {}), "_meta": {SUB: mid}}})
    elif method == "test/become":
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
        os.execv(sys.executable, [sys.executable, os.path.abspath(__file__), "after"])
    else:
        send({"jsonrpc": "2.0", "id": mid, "result": {}})
`;

it.skipIf(process.platform !== "linux")(
  "a notification under the client's subscription id, written by the code that replaced its process before the new epoch is up, does not reach the client",
  async () => {
    const dir = tempDir("pc-process-ties-replaced-");
    const stateDir = newStateDir();
    defer(() => removeDir(dir));
    defer(() => removeDir(stateDir));
    writeFileSync(join(dir, "server.py"), SERVER);
    const db = openStore(stateDir);
    defer(() => void db.close());
    mkdirSync(join(dir, "data"));
    writeFileSync(join(dir, "data", "0.txt"), "0\n");
    const { sup, ups } = supervisorIn(dir, {
      serverLabel: "replaced",
      command: "python3",
      args: ["server.py"],
      include: ["data/**"],
    });
    defer(() => sup.shutdown());
    const sent: { id?: unknown; method?: string; params?: Record<string, unknown> }[] = [];
    const gateway = new Gateway({
      label: "replaced",
      onChange: "report",
      supervisor: sup,
      store: db,
      log: quiet,
      events: auditSink(AuditLog.open(db, stateDir), quiet),
      downstream: { send: (m) => void sent.push(m as (typeof sent)[number]), close: () => {} },
      onEnd: () => {},
    });
    // The replaced code writes once the replaced epoch is down, and the capture of the new one
    // begins only once it has (this runs before it). That capture has files to hash afresh, enough
    // for its worker pool: the line in the pipe is read while it waits on the pool's threads.
    sup.on("down", (_gen, why) => {
      if (why !== "replaced") return;
      writeFileSync(join(dir, "go"), "");
      const until = Date.now() + 10_000;
      while (!existsSync(join(dir, "written")) && Date.now() < until) execFileSync("sleep", ["0.01"]);
      for (let i = 1; i <= POOL_MIN_FILES; i++) writeFileSync(join(dir, "data", `${i}.txt`), `${i}\n`);
    });
    await sup.start();

    const request = (id: string, method: string, params: Record<string, unknown> = {}) =>
      gateway.onClientLine(
        JSON.stringify({ jsonrpc: "2.0", id, method, params: { ...params, _meta: META } }),
      );
    const acks = () =>
      sent.filter(
        (m) =>
          m.method === "notifications/subscriptions/acknowledged" &&
          (m.params?._meta as Record<string, unknown> | undefined)?.[SUB] === "listen:0",
      );
    request("discover", "server/discover");
    await waitFor(() => sent.find((m) => m.id === "discover"), 20_000, "the discover answer");
    request("list", "tools/list");
    await waitFor(() => sent.find((m) => m.id === "list"), 20_000, "the list");
    request("listen:0", "subscriptions/listen", { notifications: { resourcesListChanged: true } });
    await waitFor(() => acks().length === 1 || undefined, 20_000, "the subscription acknowledged");
    expect(existsSync(join(dir, "listen-id"))).toBe(true);

    // the server execve()s into other code; the supervisor sees it, and brings up a new epoch
    const first = sup.current!;
    request("become", "test/become");
    await waitFor(() => sent.find((m) => m.id === "become"), 20_000, "the become answer");
    await waitFor(() => sup.checkReplacement(), 10_000, "the execve to be seen");
    const next = await waitFor(() => ups.find((g) => g.reason === "replaced"), 20_000, "the new epoch");
    expect(next.child.pid).toBe(first.child.pid);
    expect(existsSync(join(dir, "written"))).toBe(true);
    // the client's subscription is re-opened on the new code (after its replayed server/discover),
    // and acknowledged to the client again: everything the pipe carried before was read by then
    await waitFor(() => acks().length === 2 || undefined, 20_000, "the subscription re-opened");
    expect(existsSync(join(dir, "relistened"))).toBe(true);

    const updated = sent.filter((m) => m.method === "notifications/resources/updated");
    expect(updated, JSON.stringify(updated)).toEqual([]);
  },
  60_000,
);
