import type { CallLeft, PendingRequest } from "./requests.js";

/**
 * Whether a call waits on a pending request right now, in one sentence for the human deciding it
 * (`portcullis approvals`, `approvals --watch`, the console's card), from what its gateway
 * recorded (CallWaits), never from anything a server said. A request nobody waits for may still
 * be worth deciding: a session approval covers the run's later calls of the tool, and a retry of
 * the same call takes a decision made meanwhile; a one-call decision serves that retry only.
 * Null for a request whose gateway is gone or that expired (the card says so already).
 * `now` decides whether a time is today's (UTC): one that is not carries its date.
 */
export function callWaitText(
  req: Pick<PendingRequest, "waiting" | "callWaiting" | "callWaitingSince" | "callLeft" | "mode">,
  now: Date = new Date(),
): string | null {
  const clock = (iso: string | null) => clockOf(iso, now);
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

/**
 * callWaitText of a request as a listing gives it (`pendingRequests`: its gateway alive, its
 * call-wait columns read), or null for one read otherwise (its fields absent): the review card
 * and the console's card show the line only for a listed request.
 */
export function listedCallWaitText(
  req: Partial<Pick<PendingRequest, "waiting" | "callWaiting" | "callWaitingSince" | "callLeft">> &
    Pick<PendingRequest, "mode">,
): string | null {
  if (req.waiting === undefined || req.callWaiting === undefined) return null;
  return callWaitText({
    waiting: req.waiting,
    callWaiting: req.callWaiting,
    callWaitingSince: req.callWaitingSince ?? null,
    callLeft: req.callLeft ?? null,
    mode: req.mode,
  });
}

const LEFT: Record<CallLeft, (at: string) => string> = {
  cancelled: (at) => `the client cancelled its call at ${at}`,
  "hold-ended": (at) => `its call's wait ran out at ${at}, and the agent was told to retry it`,
  "sent-to-console": (at) => `its call was sent to the console at ${at}, to be retried once decided`,
  answered: (at) => `its call was answered at ${at}`,
};

/**
 * "12:03:04 UTC" of an ISO (UTC) time of today, "2026-07-28 12:03:04 UTC" of any other day: a
 * request can outlive the day it was made on (a long hold, a console left open overnight), and a
 * bare clock time would then read as today's.
 */
function clockOf(iso: string | null, now: Date): string {
  const at = iso && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/.test(iso) ? new Date(iso) : null;
  if (!at || Number.isNaN(at.getTime())) return "an unknown time";
  const utc = at.toISOString();
  const time = `${utc.slice(11, 19)} UTC`;
  return utc.slice(0, 10) === now.toISOString().slice(0, 10) ? time : `${utc.slice(0, 10)} ${time}`;
}
