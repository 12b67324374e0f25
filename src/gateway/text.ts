/** Small pure helpers of the gateway that say something about a message. */

import { cutShort } from "../util/cut.js";
import { setOwn } from "../util/setOwn.js";

/** Top-level fields the schema's defaults filled in: shown to reviewers and recorded. */
export function defaultsApplied(args: unknown, effective: Record<string, unknown>): Record<string, unknown> {
  const given = typeof args === "object" && args !== null ? (args as Record<string, unknown>) : {};
  const out: Record<string, unknown> = {};
  // own keys only: `"constructor" in {}` is true, and would hide a default filled in under that name
  for (const [k, v] of Object.entries(effective)) if (!Object.hasOwn(given, k)) setOwn(out, k, v);
  return out;
}

/**
 * Why a guarded request's params or their `_meta` are not what the protocol allows (null when they
 * are). MCP's params are an object (by name): JSON-RPC also allows them by position (an array),
 * which the guard cannot read a target from, while a lenient server reads the uri or name first
 * in the array; such a request would be decided, recorded and approved as one of "null", and
 * every other given so covered by that grant. A server's SDK drops a request whose progress
 * token is neither a string nor a number without answering it: forwarded, the call would leave
 * its intent open and its client waiting until the connection ends.
 */
export function metaProblem(params: unknown): string | null {
  if (params !== undefined && (typeof params !== "object" || params === null || Array.isArray(params)))
    return "params must be an object (by name), not given by position.";
  const meta =
    typeof params === "object" && params !== null ? (params as { _meta?: unknown })._meta : undefined;
  if (meta === undefined) return null;
  if (typeof meta !== "object" || meta === null || Array.isArray(meta))
    return "params._meta must be an object.";
  const token = (meta as { progressToken?: unknown }).progressToken;
  if (token !== undefined && typeof token !== "string" && typeof token !== "number")
    return "params._meta.progressToken must be a string or a number.";
  return null;
}

export { cutShort };

export function preview(text: string): string {
  return JSON.stringify(cutShort(text));
}

/**
 * "left out N members (a, b, …)": the members of a client's request the gateway did not send on
 * (src/gateway/protocol.ts), named as written, the first five.
 */
export function leftOutWords(dropped: string[]): string {
  const names = `${dropped.slice(0, 5).map(preview).join(", ")}${dropped.length > 5 ? ", …" : ""}`;
  return `left out ${dropped.length} ${dropped.length === 1 ? "member" : "members"} (${names})`;
}
