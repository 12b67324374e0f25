import { plainIdSpan } from "../relay/rawSplice.js";
import { pathText as valuePath } from "../util/valuePath.js";
import {
  mayHoldLongInteger,
  memberWrittenTwice,
  respelledIntegerLeftIn,
  respelledNumbers,
} from "../util/writtenIntegers.js";
import type { Downstream } from "./downstream.js";
import { SUBSCRIPTION_ID_META } from "./protocol.js";

/** A server's message holding a number that re-serialising would change: where, and whether it may go as written. */
export interface WrittenNumber {
  /** where the number lies in the message, for a log line or an error (`result.structuredContent.id`) */
  where: string;
  /** null: the message goes on as the server wrote it; else why it cannot (it is refused or dropped) */
  cannot: string | null;
}

/**
 * Whether a message of the server's (`text`: as it wrote it, scrubbed; `sent`: what the gateway
 * would send re-serialised) holds a number that re-serialising would change (`9007199254740993`
 * goes out …992, `1e-400` goes out `0`): null when it holds none (it goes as read, and most
 * messages are told so by one regex test). Else it goes on as written only when the gateway
 * rewrites nothing in it (`rewrites`: why it does, or null), no member is written twice in any of
 * its objects (then every parser reads what the gateway acted on as the gateway did), and its id
 * can be put back in place (`withId`: an answer or a request, whose id the gateway replaces) or,
 * a notification, it spans no lines. The one rule for answers, notifications and requests.
 */
export function writtenNumber(
  text: string,
  sent: unknown,
  rewrites: string | null,
  withId: boolean,
): WrittenNumber | null {
  if (!mayHoldLongInteger(text)) return null;
  const respelled = respelledIntegerLeftIn(text, sent);
  if (respelled === null) return null;
  const where = pathText(respelled.path);
  if (rewrites !== null) return { where, cannot: rewrites };
  const placed = withId ? plainIdSpan(text) !== null : !/[\r\n]/.test(text);
  if (placed && !memberWrittenTwice(text)) return { where, cannot: null };
  return { where, cannot: "a member is written twice in one of its objects, or it spans lines" };
}

/** Where a value lies in a message, for a log line or an error: `result.structuredContent.id`, `params.data[1]`. */
export function pathText(path: (string | number)[]): string {
  return valuePath(path, "member");
}

/**
 * Why `down` writes `msg` again itself, whatever text it is given: it names a subscription and the
 * transport writes the client's own subscription id there (HTTP). Null when it does not.
 */
export function transportRewrites(down: Downstream, msg: unknown): string | null {
  if (!down.rewritesSubscriptionIds) return null;
  const m = msg as { params?: { _meta?: unknown }; result?: { _meta?: unknown } };
  const named = (meta: unknown) =>
    typeof meta === "object" &&
    meta !== null &&
    (meta as Record<string, unknown>)[SUBSCRIPTION_ID_META] !== undefined;
  return named(m.params?._meta) || named(m.result?._meta)
    ? "it names a subscription, whose id the client's HTTP session writes back"
    : null;
}

/**
 * `value`, the gateway's own rewrite of the message `text` (parsed, then members added or taken
 * out: a handshake answer's capabilities), serialised with each number that re-serialising would
 * change written as `text` wrote it, where the rewrite left it (the same path, the same number
 * read): what the gateway changed is its own, and every other number reaches the next peer as the
 * server wrote it. Only for text with no member written twice (`writtenNumber` refuses it): a path
 * then names one token.
 */
export function writtenAgain(value: unknown, text: string): string {
  const tokens = new Map<string, string>();
  for (const n of respelledNumbers(text)) tokens.set(JSON.stringify(n.path), n.written);
  if (tokens.size === 0) return JSON.stringify(value);
  return serialised(value, tokens, []);
}

function serialised(v: unknown, tokens: ReadonlyMap<string, string>, path: (string | number)[]): string {
  if (typeof v === "number") {
    const written = tokens.get(JSON.stringify(path));
    return written !== undefined && Number(written) === v ? written : JSON.stringify(v);
  }
  if (typeof v !== "object" || v === null) return JSON.stringify(v);
  const parts: string[] = [];
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const e = v[i];
      path.push(i);
      parts.push(e === undefined || typeof e === "function" ? "null" : serialised(e, tokens, path));
      path.pop();
    }
    return `[${parts.join(",")}]`;
  }
  for (const [k, e] of Object.entries(v)) {
    if (e === undefined || typeof e === "function") continue;
    path.push(k);
    parts.push(`${JSON.stringify(k)}:${serialised(e, tokens, path)}`);
    path.pop();
  }
  return `{${parts.join(",")}}`;
}

/**
 * The numbers of a handshake answer (`text`) that the gateway reads and that re-serialising would
 * change (in `result.protocolVersion` and `result.capabilities`), each as its place and exact
 * value, in one sorted list: what the gateway compares, beside the values it parsed, with a new
 * process's answer (ClientSession.sameNegotiation, sameDiscovery). Its parsed doubles alone would
 * take `9007199254740993` and `9007199254740992` for the same number, and the client, which got
 * the first as written, would be kept on a process that says the second. Empty for nearly every
 * answer (one regex test).
 */
export function exactReadNumbers(text: string | undefined): string[] {
  if (text === undefined) return [];
  return respelledNumbers(text)
    .filter(
      (n) => n.path[0] === "result" && (n.path[1] === "capabilities" || n.path[1] === "protocolVersion"),
    )
    .map((n) => `${JSON.stringify(n.path.slice(1))}=${n.exact}`)
    .sort();
}
