// A lenient fixture server killed while its next process is told to hold the initialize the
// gateway replays to it (FIXTURE_INIT_HOLD): the gateway then stands in a new epoch whose
// handshake is under way, and what the client sends waits behind it (refusal-situations-epoch,
// held-refusals-at-end; over HTTP, test/http/held-refusals-at-session-end).
import { writeFileSync } from "node:fs";
import { waitFor } from "./files.js";
import type { RawGateway } from "./raw.js";

/** What is read of the gateway: its stderr (a raw gateway on pipes, or a `run --listen` front). */
type Logged = Pick<RawGateway, "stderr">;

/** The epoch of the gateway's last "new execution epoch" line that replaced another, if any. */
export const newEpoch = (gw: Logged): string | undefined =>
  /new execution epoch: .* epoch=(\w+) \(was /.exec(gw.stderr())?.[1];

/**
 * Creates `hold` and SIGKILLs `serverPid`; resolves once the next process logged the replayed
 * initialize it holds (`logged`: the fixture's method log) and the gateway told its new epoch.
 */
export async function killWithReplayHeld(
  gw: Logged,
  hold: string,
  serverPid: number,
  logged: () => { method: string }[],
): Promise<void> {
  writeFileSync(hold, "");
  process.kill(serverPid, "SIGKILL");
  await waitFor(
    () => logged().some((l) => l.method === "held initialize"),
    20_000,
    "the replayed initialize",
  );
  await waitFor(() => newEpoch(gw), 10_000, "the new epoch");
}
