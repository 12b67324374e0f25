/**
 * The gateway's own `_meta` keys, and a server's words under them. The gateway tells the client
 * things in `_meta` under keys that begin GATEWAY_META_PREFIX (`portcullis/refusedSubscriptions`
 * on a listen's acknowledgement: the uris it refused, with its refusals). A server may write
 * `_meta` on every result, notification and request of its own, and one that writes the gateway's
 * key there speaks in the gateway's place ("refused by portcullis" about a subscription no human
 * refused). What a server writes under such a key never reaches the client: it is taken out of
 * the `_meta` of the message's params or result, the rest of which goes on.
 */
import { escapedKeyWhere, isGatewayMarkKey } from "./serverWords.js";

/** What every `_meta` key of the gateway's begins with. */
export const GATEWAY_META_PREFIX = "portcullis/";

/**
 * Whether `key` is one of the gateway's, in any case: a client that looks keys up without regard
 * to case (as some do for headers) would read `Portcullis/…` as the gateway's too.
 */
export function isGatewayMetaKey(key: string): boolean {
  return key.slice(0, GATEWAY_META_PREFIX.length).toLowerCase() === GATEWAY_META_PREFIX;
}

/**
 * `part` (a server message's params or result) with every gateway key taken out of its `_meta`,
 * and how many were; null when it has none (nothing to take out: `part` goes on as it is).
 */
export function withoutGatewayMeta(part: unknown): { part: Record<string, unknown>; taken: number } | null {
  if (!isObject(part) || !isObject(part._meta)) return null;
  const keys = Object.keys(part._meta);
  const taken = keys.filter(isGatewayMetaKey);
  if (taken.length === 0) return null;
  const meta: Record<string, unknown> = {};
  for (const k of keys) if (!isGatewayMetaKey(k)) meta[k] = part._meta[k];
  return { part: { ...part, _meta: meta }, taken: taken.length };
}

/**
 * The member of a relayed list's result whose items each have a `_meta` of their own (MCP gives a
 * resource, a resource template and a prompt one, as it gives a tool: tools/list is served from
 * the snapshot instead, guardedRequests.ts `servedTools`).
 */
const LISTED_ITEMS: ReadonlyMap<string, string> = new Map([
  ["resources/list", "resources"],
  ["resources/templates/list", "resourceTemplates"],
  ["prompts/list", "prompts"],
]);

/**
 * The result of the server's answer to `method` with every gateway key taken out of its `_meta`
 * and, for a relayed list, out of each listed item's `_meta` (a resource listed with
 * `"portcullis/approved": true` speaks in the gateway's place as a tool would), and how many were;
 * null when it has none. Other results are walked no deeper than their own `_meta`.
 */
export function resultWithoutGatewayMeta(
  method: string,
  result: unknown,
): { part: Record<string, unknown>; taken: number } | null {
  const own = withoutGatewayMeta(result);
  const member = LISTED_ITEMS.get(method);
  const part = own?.part ?? (isObject(result) ? result : null);
  if (member === undefined || part === null || !Array.isArray(part[member])) return own;
  let taken = own?.taken ?? 0;
  const items = (part[member] as unknown[]).map((item) => {
    const unmarked = withoutGatewayMeta(item);
    if (unmarked === null) return item;
    taken += unmarked.taken;
    return unmarked.part;
  });
  return taken === (own?.taken ?? 0) ? own : { part: { ...part, [member]: items }, taken };
}

/**
 * Whether the server's text may carry a gateway key that the message as read does not show: under
 * a `_meta` written twice (JSON.parse keeps the last, a client's parser may keep the first), or
 * spelt with an escape (`portcullis\u002f…`). Such a message goes on as the gateway read it (and
 * took its gateway keys out of), not as written. One scan of the line; a message that names no
 * `portcullis/` and has no escaped key reading as one (the relay's common case) goes as written.
 */
export function mayHideGatewayMeta(text: string | undefined): boolean {
  if (text === undefined) return false;
  if (MENTION.test(text)) return true;
  // only `\uXXXX` and `\/` spell a letter or the slash of the prefix: a line whose only escapes
  // are `\n` or `\"` (most of those with any) is not scanned key by key
  return (text.includes("\\u") || text.includes("\\/")) && escapedKeyWhere(text, isGatewayMetaKey);
}

const MENTION = /portcullis\//i;

/**
 * mayHideGatewayMarks (serverWords.ts) or mayHideGatewayMeta of one answer, with its keys scanned
 * once for both sets: the scan key by key is what costs on a long line with escapes (a 1 MB answer
 * whose URLs are written `\/`, as PHP writes them, took it twice, some 4 ms more).
 */
export function mayHideGatewayWords(msg: { error?: unknown }, text: string | undefined): boolean {
  if (text === undefined) return false;
  if (msg.error) return true;
  if (text.includes("requestState") || text.includes("inputRequests") || MENTION.test(text)) return true;
  return (
    text.includes("\\") && escapedKeyWhere(text, (key) => isGatewayMarkKey(key) || isGatewayMetaKey(key))
  );
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
