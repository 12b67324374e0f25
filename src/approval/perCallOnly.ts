import { displayName, safeText } from "../catalog/text.js";

/**
 * Why a session approval of a per-call tool's request is refused: one sentence for every path
 * that decides (approve ID, approve --next, the console's forms, decideRequest itself), each
 * adding how it approves one call. The names are the server's: displayed as the review shows them.
 */
export function perCallOnlyReason(req: { tool: string; serverLabel: string }): string {
  return `tool ${displayName(req.tool)} of ${safeText(req.serverLabel)} needs a human decision for every call: it can be approved for this one call only`;
}
