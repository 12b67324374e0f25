// @modelcontextprotocol/server-everything in its own Streamable HTTP mode (`index.js
// streamableHttp`, PORT from the environment; it keeps an event store, so its SSE streams carry
// priming events), as the `run --url` tests start it: on a free port, killed and started again
// on the same port (a new process: its sessions are gone).
import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { exitWithOutput } from "../helpers/exitWithOutput.js";
import { waitFor } from "../helpers/files.js";
import { EVERYTHING, NODE } from "../helpers/paths.js";

export interface EverythingHttp {
  port: number;
  url: string;
  proc: ChildProcess;
  /** SIGKILL, and wait for the exit */
  kill(): Promise<void>;
  /** a new process on the same port */
  restart(): Promise<EverythingHttp>;
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once("error", reject);
    s.listen(0, "127.0.0.1", () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

export async function everythingOverHttp(port?: number): Promise<EverythingHttp> {
  const p = port ?? (await freePort());
  const proc = spawn(NODE, [EVERYTHING.entry, "streamableHttp"], {
    env: { PATH: process.env.PATH ?? "", PORT: String(p) },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let err = "";
  proc.stderr!.setEncoding("utf8").on("data", (s: string) => {
    err += s;
  });
  // ended once its stderr is read to the end too: a server that failed to start has said all of why
  let ended = false;
  const exited = exitWithOutput(proc, [proc.stderr!]).then(() => {
    ended = true;
  });
  await waitFor(
    () => {
      if (ended) throw new Error(`server-everything exited:\n${err}`);
      return /listening on port/.test(err);
    },
    20_000,
    "server-everything to listen",
  );
  const server: EverythingHttp = {
    port: p,
    url: `http://127.0.0.1:${p}/mcp`,
    proc,
    kill: async () => {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill("SIGKILL");
      await exited;
    },
    restart: async () => {
      await server.kill();
      return everythingOverHttp(p);
    },
  };
  return server;
}
