// `console --port N` on a port that cannot be listened on is said in words naming the flag, with
// the system's code, as `run --listen` says it (README, "Commands": a port named on the command
// line that cannot be used). A port below 1024 for a user without the privilege was an internal
// error, exit 70, with node's stack. Real console processes; the privileged port as `nobody`
// when the test runs as root (root may listen there).
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { describe, expect, it } from "vitest";
import { runCli } from "../helpers/gateway.js";
import { unprivilegedUser } from "../helpers/otherUser.js";
import { newStateDir } from "../helpers/state.js";

function listening(): Promise<Server> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => resolve(s));
  });
}

/** The lowest port an unprivileged user may listen on (Linux), or null where not known. */
function unprivilegedPortStart(): number | null {
  try {
    return Number(readFileSync("/proc/sys/net/ipv4/ip_unprivileged_port_start", "utf8").trim());
  } catch {
    return null;
  }
}

describe("console --port on a port it cannot listen on", () => {
  it("taken by another program: one sentence naming --port, with EADDRINUSE, exit 2", async () => {
    const squatter = await listening();
    try {
      const port = (squatter.address() as { port: number }).port;
      const r = await runCli(["console", "--no-open", "--port", String(port)], { stateDir: newStateDir() });
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toBe(
        `portcullis console: --port ${port}: cannot listen there: another program listens on that port; stop it or choose another port (EADDRINUSE).\n`,
      );
    } finally {
      await new Promise((r) => squatter.close(r));
    }
  });

  it("below the unprivileged ports, for a user without the privilege: the same, with EACCES, never an internal error", async () => {
    const start = unprivilegedPortStart();
    const stateDir = newStateDir();
    const user = unprivilegedUser([stateDir]);
    // nothing to prove where every port is open to every user, or no such user can run the CLI
    if (start === null || start <= 1 || user === null) return;
    const port = start - 1;
    const r = await runCli(["console", "--no-open", "--port", String(port), "--state-dir", stateDir], {
      ...user.spawn,
    });
    expect(r.code, r.stderr).toBe(2);
    expect(r.stderr).toBe(
      `portcullis console: --port ${port}: cannot listen there: this user may not listen on that port (ports below 1024 need privileges); choose a port from 1024 up (EACCES).\n`,
    );
  });
});
