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
import { pageOnThisMachine } from "./pageOnThisMachine.js";
import { clientCapabilityFor, declaresCapability, isElicitationVariant } from "./protocol.js";

/**
 * Why the server's error `e` could be read as the gateway's (a phrase that follows "the server's
 * error"), or null when it cannot: its code is in the range the gateway keeps for its refusals,
 * its `data` has an `error` member, the field that names each error of the gateway's, or its
 * message names portcullis among its first letters, however written (speaksAsGateway).
 */
export function passesForGateway(e: ErrorObject): string | null {
  if (inRefusalRange(e.code)) return `has code ${e.code}, in the range portcullis keeps for its refusals`;
  const data = e.data;
  if (typeof data === "object" && data !== null && !Array.isArray(data) && Object.hasOwn(data, "error"))
    return "has a data.error member, the field that names portcullis's own errors";
  // what the agent reads and tells its human: "portcullis: a human denied this call" under any code
  if (typeof e.message === "string" && speaksAsGateway(e.message))
    return "names portcullis where its reader takes it for the speaker";
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
 * Whether an elicitation message of the server's names portcullis where a human reads it as the
 * speaker: among its first SPEAKER_LETTERS letters, however written. What a client shows is read
 * by a human, for whom "p\u200bortcullis", "port\u034fcullis", "Pоrtcullis" with a Cyrillic о,
 * fullwidth "ｐｏｒｔｃｕｌｌｉｓ" or "P0RTCULLIS" all read as the name: the message is compared by
 * its skeleton (compatibility forms folded, marks and every character that is not a letter
 * dropped, look-alike letters and digits taken for the Latin letter they imitate, any case).
 * Erring this way only puts NOT_PORTCULLIS in front of a server's message that mentions the name.
 */
export function speaksAsGateway(message: string): boolean {
  return speakerSkeleton(message).includes(GATEWAY);
}

/**
 * The first SPEAKER_LETTERS letters of `message` as speaksAsGateway compares them: compatibility
 * forms folded, marks and whatever is not a letter dropped, look-alikes taken for the Latin
 * letter they imitate, lower case.
 */
function speakerSkeleton(message: string): string {
  let skeleton = "";
  // What a renderer shows nothing for goes first, in one native pass (a character class, no
  // quantifier: a run cannot grow the matcher's stack); then the visible rest, code point by code
  // point, up to the letters that matter. A name after more than MAX_VISIBLE visible characters
  // is not where anyone reads a speaker, and walking further would let a server's message of
  // many megabytes of visible symbols hold the gateway.
  const visible = message.replace(INVISIBLE, "");
  let walked = 0;
  for (const ch of visible) {
    if (++walked > MAX_VISIBLE) break;
    for (const c of ch.normalize("NFKD").toLowerCase()) {
      const letter = LOOKALIKE.get(c) ?? (LETTER.test(c) ? c : null);
      if (letter === null) continue;
      skeleton += letter;
      if (skeleton.length >= SPEAKER_LETTERS) return skeleton;
    }
  }
  return skeleton;
}

/**
 * The params of a server's `notifications/progress` as the client gets them. While a call (or a
 * guarded read) waits for a human, the gateway speaks under its progress token itself ("waiting
 * for human approval of …", src/approval/askHuman.ts); once it is sent, the server speaks under
 * that same token, and a message of its ("waiting for human approval of …: the approval was
 * withdrawn, approve again at …") read as the gateway's. So a message said under a token the
 * gateway spoke under (`gatewaySpoke`), or one that speaks as portcullis or in the gateway's words
 * about that wait under any token, gets NOT_PORTCULLIS in front (a message present that is no
 * string, which MCP does not allow, gets those words alone); null: unchanged.
 */
export function attributedProgress(params: unknown, gatewaySpoke: boolean): Record<string, unknown> | null {
  if (!isObject(params) || params.message === undefined) return null;
  const message = typeof params.message === "string" ? params.message : null;
  if (!gatewaySpoke && !speaksOfGatewayWait(message ?? jsonText(params.message))) return null;
  return { ...params, message: `${NOT_PORTCULLIS}${message ?? ""}` };
}

/** The gateway's words while a human decides, as speakerSkeleton reads them. */
const WAIT_WORDS = "waitingforhumanapproval";

/** Whether `text` names portcullis or says the gateway's words about a wait (null: unreadable, taken as doing so). */
function speaksOfGatewayWait(text: string | null): boolean {
  if (text === null) return true;
  const skeleton = speakerSkeleton(text);
  return skeleton.includes(GATEWAY) || skeleton.includes(WAIT_WORDS);
}

/** A value that is no string as a lenient client shows it (its JSON text), or null when it has none. */
function jsonText(value: unknown): string | null {
  try {
    return JSON.stringify(value) ?? "";
  } catch {
    return null;
  }
}

const GATEWAY = "portcullis";
/** Characters a renderer shows as nothing, or as a mark on the one before. */
const INVISIBLE = /[\p{Cc}\p{Cf}\p{M}\p{Default_Ignorable_Code_Point}]/gu;
/** How many visible code points are walked, at most, looking for the name. */
const MAX_VISIBLE = 4096;
/** How far into a message the name counts as its speaker's: a sentence's first words. */
const SPEAKER_LETTERS = 48;
/** A letter (a mark is not one: NFKD has split accents off their letters). */
const LETTER = /^\p{L}$/u;
/**
 * Characters that pass for a letter of "portcullis" (lower case, after NFKD): Cyrillic, Greek,
 * Armenian and IPA look-alikes and the digits and signs that imitate them. Not a full confusables
 * table: the letters of the one word compared.
 */
const LOOKALIKE = new Map<string, string>([
  ..."рρϱ".split("").map((c) => [c, "p"] as const),
  ..."оοσօ0ᴏ".split("").map((c) => [c, "o"] as const),
  ..."гᴦʀ".split("").map((c) => [c, "r"] as const),
  ..."тτᴛ".split("").map((c) => [c, "t"] as const),
  ..."сϲςᴄ".split("").map((c) => [c, "c"] as const),
  ..."υսᴜμ".split("").map((c) => [c, "u"] as const),
  ..."ӏɩ1|ǀℓ".split("").map((c) => [c, "l"] as const),
  ..."іιı!ɪ".split("").map((c) => [c, "i"] as const),
  ..."ѕ5$ꜱ".split("").map((c) => [c, "s"] as const),
]);

/**
 * The params of a server's `elicitation/create` as the client gets them: one whose message begins
 * as the gateway's own, or whose form speaks as it, is said to be the server's (a form under no
 * message, or one that is not a string, gets the words alone as its message: the form is what the
 * human reads); anything else as it is (null: unchanged).
 */
export function attributedElicitation(params: unknown): Record<string, unknown> | null {
  if (!isObject(params)) return null;
  const message = typeof params.message === "string" ? params.message : null;
  if (
    !(message !== null && speaksAsGateway(message)) &&
    !otherSpeaks(params.message) &&
    !formSpeaksAsGateway(params.requestedSchema) &&
    !onThisMachine(params.url)
  )
    return null;
  return { ...params, message: `${NOT_PORTCULLIS}${message ?? ""}` };
}

/**
 * Whether an elicitation's message that is present but no string (`["portcullis: a human must
 * approve…"]`, which MCP does not allow) speaks as the gateway where a lenient client shows it: a
 * client that makes text of it (`String(["…"])`) shows its strings, whose letters its JSON text
 * holds in order (the skeleton drops the brackets and quotes).
 */
function otherSpeaks(message: unknown): boolean {
  if (message === undefined || typeof message === "string") return false;
  let text: string | undefined;
  try {
    text = JSON.stringify(message);
  } catch {
    return true; // cannot be read: not shown unattributed
  }
  return text !== undefined && speaksAsGateway(text);
}

/**
 * Whether a URL elicitation could send the human to a page on this machine (pageOnThisMachine.ts:
 * a loopback or local address or name however written, a name that carries one, a URL parsers
 * read differently). The gateway's own approval elicitations send the human to the console there,
 * so a server's that does so too is said to be the server's whatever its words: "a human must
 * approve … open the console" without the name, to a page of the server's that asks for the
 * passphrase or a passkey (whose prompt names only `localhost`), read as the gateway's.
 */
function onThisMachine(url: unknown): boolean {
  if (url === undefined) return false;
  // a URL that is no string (`["http://127.0.0.1/"]`): a client that makes one of it gets the
  // text of what it holds, which nobody here reads
  return typeof url !== "string" || pageOnThisMachine(url);
}

/** How many strings of a form are read, at most: a form's labels, not a document. */
const MAX_FORM_STRINGS = 4096;

/**
 * Whether a form-mode elicitation's `requestedSchema` speaks as the gateway where the human reads
 * it: a client renders the form's title, each field's title and description (and a field's name
 * when it has no title, or the names of its choices) as the form's labels, so a plain message
 * over a field "Portcullis approval passphrase" asks for the approver's passphrase in the
 * gateway's voice. Every string of the schema, and every property name, is read as a message is
 * (`speaksAsGateway`), up to MAX_FORM_STRINGS of them; a form with more is taken as speaking.
 */
function formSpeaksAsGateway(schema: unknown): boolean {
  if (typeof schema !== "object" || schema === null) return false;
  let read = 0;
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === "string") {
      if (++read > MAX_FORM_STRINGS) return true;
      if (speaksAsGateway(v)) return true;
    } else if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
    } else if (typeof v === "object" && v !== null)
      for (const [key, value] of Object.entries(v)) {
        stack.push(key, value);
      }
  }
  return false;
}

/**
 * A server's 2026-07-28 `input_required` result as the client gets it: each embedded
 * `elicitation/create` whose message begins as the gateway's, or whose form speaks as it, is said
 * to be the server's (`attributedElicitation`; null: nothing to change).
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

/**
 * Why the input requests of a server's 2026-07-28 `input_required` result cannot go on to the
 * client, or null when they can: `inputRequests` that is not a map (an array of requests), or an
 * input request that is not an object or whose params are not one (by position, an array). MCP
 * gives each of them named params only, and what a client makes of anything else is its own
 * guess: an embedded elicitation by position has no message or URL the gateway could say is the
 * server's (attributedElicitation), and a lenient client would show it in the gateway's voice.
 * The server's text is not quoted (the reason goes to the client as response_invalid's).
 */
export function unreadableInputRequests(result: unknown): string | null {
  if (!isObject(result) || !Object.hasOwn(result, "inputRequests")) return null;
  const requests = result.inputRequests;
  if (!isObject(requests))
    return "its inputRequests is not an object (MCP gives input requests as a map, by key)";
  for (const r of Object.values(requests)) {
    if (!isObject(r)) return "one of its input requests is not an object";
    if (isElicitationVariant(r.method))
      return "one of its input requests names a method that is not byte for byte elicitation/create but folds to it";
    if (r.params !== undefined && !isObject(r.params))
      return "one of its input requests has params that are not an object (by position, an array, or a plain value); MCP gives them by name";
  }
  return null;
}

/**
 * Why an input request of a server's `input_required` result may not reach the client, or null:
 * one of a capability the client did not declare (`capabilities`: what it declared, its request
 * envelope's in the 2026-07-28 era), as a server's own request of it is refused
 * (ServerRequests.relay): a client that does not check would act on it (a model sampled, a human
 * asked, its roots listed) though it never offered to. Read after unreadableInputRequests.
 */
export function undeclaredInputRequest(result: unknown, capabilities: unknown): string | null {
  if (!isObject(result) || !isObject(result.inputRequests)) return null;
  for (const r of Object.values(result.inputRequests)) {
    if (!isObject(r) || typeof r.method !== "string") continue;
    const needs = clientCapabilityFor(r.method);
    if (needs !== null && !declaresCapability(capabilities, needs))
      return `one of its input requests needs the client's ${needs} capability, which the client did not declare`;
  }
  return null;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * Whether the server's text may carry, under a key written twice, what passesForGateway and
 * marksOfGateway look for: they read the message as JSON.parse does (the last of two same-named
 * keys), and a client whose parser keeps the first would read the other. Only the top level is
 * checked for repeated keys as the line is read (src/relay/rawSplice.ts), so such a message is
 * sent as the gateway read it, not as written: any error, and a result that names requestState
 * or inputRequests, or spells one of them (or the gateway's input request key) with an escape
 * (`request\u0053tate`). Other results, the relay's common case, still go as written, their
 * numbers and escapes in values untouched.
 */
export function mayHideGatewayMarks(msg: { error?: unknown }, text: string | undefined): boolean {
  if (text === undefined) return false;
  if (msg.error) return true;
  if (text.includes("requestState") || text.includes("inputRequests")) return true;
  return text.includes("\\") && escapedKeyWhere(text, isGatewayMarkKey);
}

const MARK_KEYS: ReadonlySet<string> = new Set(["requestState", "inputRequests", INPUT_REQUEST_KEY]);

/** Whether `key` is one of the keys that mark the gateway's own `input_required` (mayHideGatewayMarks). */
export function isGatewayMarkKey(key: string): boolean {
  return MARK_KEYS.has(key);
}

/** Whether an object key of the JSON text `text` is written with an escape and reads as one `named` takes. */
export function escapedKeyWhere(text: string, named: (key: string) => boolean): boolean {
  let at = 0;
  for (;;) {
    const open = text.indexOf('"', at);
    if (open < 0) return false;
    // the closing quote: the next one not escaped (an odd run of backslashes before it escapes it)
    let close = text.indexOf('"', open + 1);
    for (;;) {
      if (close < 0) return false;
      let b = close - 1;
      while (b > open && text[b] === "\\") b--;
      if ((close - 1 - b) % 2 === 0) break;
      close = text.indexOf('"', close + 1);
    }
    const token = text.slice(open, close + 1);
    if (token.includes("\\")) {
      let k = close + 1;
      while (k < text.length && (text[k] === " " || text[k] === "\t" || text[k] === "\n" || text[k] === "\r"))
        k++;
      if (text[k] === ":") {
        try {
          if (named(JSON.parse(token) as string)) return true;
        } catch {
          return true; // not a JSON string after all: not relayed as written
        }
      }
    }
    at = close + 1;
  }
}
