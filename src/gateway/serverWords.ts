/**
 * What a server says that could pass for what the gateway says. The gateway's refusals are
 * JSON-RPC errors with a code in -32050..-32059 and a `data.error` naming them (docs/refusals.md);
 * its other errors carry a `data.error` too. A server can answer with an error of that very shape
 * (an `authorization_required` whose `howToApprove` sends the human to a page of the server's),
 * and relayed as written the agent and its human could not tell it from the gateway's own. A
 * server's words never decide identity or authority, nor pass for the gateway's: such an error
 * reaches the client inside one of the gateway's, `server_error`, that says whose it is.
 */
import { inRefusalRange } from "../guard/refusals.js";
import type { ErrorObject } from "../relay/jsonrpc.js";

/**
 * Why the server's error `e` could be read as the gateway's (a phrase that follows "the server's
 * error"), or null when it cannot: its code is in the range the gateway keeps for its refusals,
 * or its `data` has an `error` member, the field that names each error of the gateway's.
 */
export function passesForGateway(e: ErrorObject): string | null {
  if (inRefusalRange(e.code)) return `has code ${e.code}, in the range portcullis keeps for its refusals`;
  const data = e.data;
  if (typeof data === "object" && data !== null && !Array.isArray(data) && Object.hasOwn(data, "error"))
    return "has a data.error member, the field that names portcullis's own errors";
  return null;
}
