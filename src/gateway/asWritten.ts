import { plainIdSpan } from "../relay/rawSplice.js";
import { pathText as valuePath } from "../util/valuePath.js";
import { mayHoldLongInteger, memberWrittenTwice, respelledIntegerLeftIn } from "../util/writtenIntegers.js";
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
