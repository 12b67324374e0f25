import type { CallLeft, PendingRequest } from "./requests.js";

/**
 * Whether a call waits on a pending request right now, in one sentence for the human deciding it
 * (`portcullis approvals`, `approvals --watch`, the console's card), from what its gateway
 * recorded (CallWaits), never from anything a server said. A request nobody waits for may still
 * be worth deciding: a session approval covers the run's later calls of the tool, and a retry of
 * the same call takes a decision made meanwhile; a one-call decision serves that retry only.
 * Null for a request whose gateway is gone or that expired (the card says so already).
 */
export function callWaitText(
  req: Pick<PendingRequest, "waiting" | "callWaiting" | "callWaitingSince" | "callLeft" | "mode">,
): string | null {
  if (!req.waiting) return null;
  if (req.callWaiting === null)
    return "whether a call waits on it is not recorded (its gateway runs an older portcullis)";
  if (req.callWaiting) return `a call waits on it (since ${clock(req.callWaitingSince)})`;
  const left = req.callLeft;
  const why = left ? ` (${LEFT[left.how](clock(left.at))})` : "";
  const use =
    req.mode === "session"
      ? "approving it for the session still covers this run's later calls of the tool"
      : "a decision serves only a retry of this same call";
  return `no call waits on it${why}; ${use}`;
}

const LEFT: Record<CallLeft, (at: string) => string> = {
  cancelled: (at) => `the client cancelled its call at ${at}`,
  "hold-ended": (at) => `its call's wait ran out at ${at}, and the agent was told to retry it`,
  "sent-to-console": (at) => `its call was sent to the console at ${at}, to be retried once decided`,
  answered: (at) => `its call was answered at ${at}`,
};

/** "12:03:04 UTC" of an ISO time (a request lives minutes: the day goes without saying). */
function clock(iso: string | null): string {
  return iso && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(iso) ? `${iso.slice(11, 19)} UTC` : "an unknown time";
}
