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
import { INPUT_REQUEST_KEY, REQUEST_STATE_PREFIX } from "./elicitation.js";

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

/**
 * Why the server's result `result` carries the marks of the gateway's own `input_required` (the
 * answer that sends the human to the console to approve a call, src/gateway/elicitation.ts), or
 * null when it does not: its input request under the gateway's key, or a `requestState` the
 * gateway takes for its own (and would take out of the client's retry).
 */
export function marksOfGateway(result: unknown): string | null {
  if (!isObject(result)) return null;
  const requests = result.inputRequests;
  if (isObject(requests) && Object.hasOwn(requests, INPUT_REQUEST_KEY))
    return `has an input request under "${INPUT_REQUEST_KEY}", the key of portcullis's own approval requests`;
  const state = result.requestState;
  if (typeof state === "string" && state.startsWith(REQUEST_STATE_PREFIX))
    return `has a requestState beginning "${REQUEST_STATE_PREFIX}", as portcullis's own approval requests do`;
  return null;
}

/**
 * What a server's elicitation message is given in front of it when it could pass for one of the
 * gateway's (which begin "portcullis:", src/gateway/elicitation.ts).
 */
export const NOT_PORTCULLIS = "(from the server, not from portcullis) ";

/**
 * Whether an elicitation message of the server's begins as the gateway's own do: "portcullis",
 * in any case, after anything that is not a letter (spaces, punctuation, invisible characters).
 */
function speaksAsGateway(message: string): boolean {
  const start = message.search(/\p{L}/u);
  return start >= 0 && message.slice(start, start + 10).toLowerCase() === "portcullis";
}

/**
 * The params of a server's `elicitation/create` as the client gets them: a message that begins as
 * the gateway's own is said to be the server's; anything else as it is (null: unchanged).
 */
export function attributedElicitation(params: unknown): Record<string, unknown> | null {
  if (!isObject(params) || typeof params.message !== "string" || !speaksAsGateway(params.message))
    return null;
  return { ...params, message: `${NOT_PORTCULLIS}${params.message}` };
}

/**
 * A server's 2026-07-28 `input_required` result as the client gets it: each embedded
 * `elicitation/create` whose message begins as the gateway's is said to be the server's (null:
 * nothing to change).
 */
export function attributedInputRequests(result: unknown): Record<string, unknown> | null {
  if (!isObject(result) || !isObject(result.inputRequests)) return null;
  let changed = false;
  // fromEntries defines each key as its own, "__proto__" included (an assignment would not)
  const requests = Object.fromEntries(
    Object.entries(result.inputRequests).map(([key, r]) => {
      const params =
        isObject(r) && r.method === "elicitation/create" ? attributedElicitation(r.params) : null;
      if (params === null) return [key, r];
      changed = true;
      return [key, { ...(r as object), params }];
    }),
  );
  return changed ? { ...result, inputRequests: requests } : null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
