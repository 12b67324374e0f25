// Which server process a gateway serves now, read from its own stderr: the status line it writes
// when a process starts serving ("serving ...: pid=N epoch=E") or replaces another ("new
// execution epoch: pid=N epoch=E"). Tests that kill or replace the server wait on these.
import { completeLines } from "./completeLines.js";
import type { RawGateway } from "./raw.js";

/** The pid and epoch of the server process the gateway serves now (its latest status line). */
export function serving(gw: RawGateway): { pid: number; epoch: string } {
  for (const line of completeLines(gw.stderr()).reverse()) {
    const m = /(?:serving .*: |new execution epoch: )pid=(\d+) epoch=(\w+)/.exec(line);
    if (m) return { pid: Number(m[1]), epoch: m[2]! };
  }
  throw new Error(`no epoch in the gateway's log:\n${gw.stderr()}`);
}

/** The pid of the server process the gateway serves now (its latest status line). */
export function servingPid(gw: RawGateway): number {
  return serving(gw).pid;
}
