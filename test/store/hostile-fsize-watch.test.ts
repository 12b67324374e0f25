// `approvals --watch` under a file size limit (`ulimit -f`) below the -shm index's 32 KiB, started
// while no gateway has the store open: SQLite cannot make the index, so the store is read from a
// copy in memory (src/store/db.ts openStoreToRead). That copy never changes: a live list drawn from
// it stays empty while a gateway asks for approval, and the human watching it is told nothing is
// pending. What must hold: a --watch never shows a frozen copy as live; it reads what the
// gateways write (here: the request appears), or it refuses saying why.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { storedPending } from "../helpers/approvals.js";
import { tempDir, waitFor } from "../helpers/files.js";
import { hostEnv } from "../helpers/gateway.js";
import { CLI, FIXTURES, NODE } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

const cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.splice(0).reverse()) await c();
});

const TOOLS = '[{"name":"say","inputSchema":{"type":"object"}}]';

describe("approvals --watch under a file size limit the -shm index cannot be made under", () => {
  it("shows a request a gateway asks for after the watch began (or refuses to watch), never a frozen empty list", async () => {
    const stateDir = newStateDir();
    const watch = spawn(
      "sh",
      ["-c", 'ulimit -f 16 && exec "$@"', "sh", NODE, CLI, "approvals", "--watch", "--json"],
      { env: hostEnv({ PORTCULLIS_HOME: stateDir }), stdio: ["ignore", "pipe", "pipe"] },
    );
    let stdout = "";
    let stderr = "";
    watch.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
    });
    watch.stderr.on("data", (c: Buffer) => {
      stderr += c.toString();
    });
    const exited = new Promise<number | null>((r) => watch.on("close", (code) => r(code)));
    let ended: number | null | undefined;
    void exited.then((c) => {
      ended = c;
    });
    cleanup.push(async () => {
      if (ended === undefined) watch.kill("SIGTERM");
      await exited;
    });
    // the watch has read the store (it says once on stderr that it cannot write it), or ended
    await waitFor(() => stderr.includes("cannot be written") || ended !== undefined);

    const gw = rawGateway({
      args: ["--label", "fsize", "--approval", "per-call", "--", NODE, FIXTURES.rawlines],
      env: { FIXTURE_RAW_LOG: join(tempDir(), "raw.log"), FIXTURE_RAW_TOOLS: TOOLS },
      stateDir,
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    await gw.request("tools/list");
    gw.send({ jsonrpc: "2.0", id: "held", method: "tools/call", params: { name: "say", arguments: {} } });
    const [request] = await waitFor(() => {
      const p = storedPending(stateDir);
      return p.length > 0 && p;
    });

    // either the watch shows it, or it refused to watch a copy that does not change
    await waitFor(() => stdout.includes(request!.request) || ended !== undefined);
    if (ended !== undefined) {
      expect(ended).toBe(2);
      expect(stderr).toContain(`the store ${join(stateDir, "portcullis.db")} cannot be written`);
      expect(stderr).toContain(
        "approvals --watch would not show a request asked for or decided after it began",
      );
      expect(stderr).toContain("To fix it: raise the file size limit");
      expect(stdout).toBe("");
    } else {
      expect(stdout).toContain(`"change":"pending"`);
    }
  });
});
