/**
 * Which rows name a gateway that runs now, for the orders that put running ones first (the Audit
 * page's runs, the Catalog page's labels). Any process of the user can write `runs` and `gateways`
 * rows naming a live process of its own, its pid and start time included, and such a row passed
 * for a running gateway: thousands of them sorted before the human's. A row counts only when its
 * live process is, by its command line, a portcullis `run` (src/identity/procPortcullis.ts). One
 * whose process cannot be judged here (another PID namespace, or a namespace never read) does not
 * count either: the namespace is the row's own to write, and any value but ours made a forged row
 * "unknown", which counted, so the check was one column away. Only the order is at stake: such a
 * gateway's runs and label are listed after the running ones, by date, never hidden. The check
 * reads /proc once per distinct process a page's rows name (many rows naming one process cost one).
 */
import { type Liveness, processLiveness, type RecordedProcess } from "../identity/procLiveness.js";
import { runsPortcullisCommand } from "../identity/procPortcullis.js";

/** A judge of rows' processes, each (pid, start) read once: whether it is a running gateway. */
export function runningGatewayCheck(): (p: RecordedProcess) => boolean {
  const seen = new Map<string, boolean>();
  return (p) => {
    const key = `${p.pid}\u0000${p.start ?? ""}\u0000${p.pidNs ?? ""}\u0000${p.boot ?? ""}`;
    let running = seen.get(key);
    if (running === undefined) {
      running = isRunningGateway(processLiveness(p), p);
      seen.set(key, running);
    }
    return running;
  };
}

function isRunningGateway(liveness: Liveness, p: RecordedProcess): boolean {
  // "unknown": another PID namespace (or a place never read): nothing here tells it from a forgery
  return liveness === "alive" && runsPortcullisCommand(p.pid, "run", p.start);
}
