import { rawArgumentsOf, rawProgressTokenOf } from "../relay/idScan.js";
import type { Request } from "../relay/jsonrpc.js";
import { mayHoldLongInteger, type RespelledInteger, respelledIntegerIn } from "../util/writtenIntegers.js";

/**
 * The client's id of a request as JSON text, as the client wrote it: what the audit records a
 * call under. The id the gateway holds is not always that id: on stdio an id JSON cannot carry is
 * a stand-in behind a per-process secret prefix (`ClientIds`), over HTTP every id is the session's
 * own wire number (two POSTs may reuse one id). So the text is read where the request comes in
 * and goes with its message wherever the gateway takes it (held, decided, retried, forwarded).
 *
 * A symbol key: object spreads (`{ ...msg, params }`) copy it, and `JSON.stringify` never writes
 * it, so it cannot reach the server with the message.
 */
const ID_TEXT = Symbol("the client's id as JSON text");

/**
 * The request's call key (below), given where it is read and carried like its id text: a call
 * decided again after it was held or its epoch changed keeps it (its ends are written in order,
 * so its second intent is never open beside its first).
 */
const CALL_KEY = Symbol("the request's call key");

/**
 * An integer in a tools/call's arguments that the gateway would forward as another integer
 * (src/util/writtenIntegers.ts), found in the text the client wrote, where it is read.
 */
const RESPELLED = Symbol("an integer of the arguments that would be forwarded respelled");

/** A progress token (`params._meta.progressToken`) that would reach the server as another integer. */
const RESPELLED_TOKEN = Symbol("a progress token that would be forwarded respelled");

type Marked = Request & {
  [ID_TEXT]?: string;
  [CALL_KEY]?: number;
  [RESPELLED]?: RespelledInteger;
  [RESPELLED_TOKEN]?: string;
};

/**
 * Marks a tools/call `msg` just read from `text` (the line as the client wrote it) with the first
 * integer of its arguments that re-serialising would change (`9007199254740993`), if any.
 */
export function markWrittenIntegers(msg: Request, text: string): void {
  // a progress token the gateway would forward as another number: the server's progress would
  // come back under a token the client never used (every guarded request is re-serialised)
  const token = (msg.params as { _meta?: { progressToken?: unknown } } | undefined)?._meta?.progressToken;
  // Nothing else is marked: the text is not searched (a relayed ping's line, most of them).
  if (typeof token !== "number" && msg.method !== "tools/call") return;
  if (!mayHoldLongInteger(text)) return;
  if (typeof token === "number") {
    const raw = rawProgressTokenOf(text);
    if (raw !== null && respelledIntegerIn(raw, token) !== null) (msg as Marked)[RESPELLED_TOKEN] = raw;
  }
  if (msg.method !== "tools/call") return;
  const args = (msg.params as { arguments?: unknown } | undefined)?.arguments;
  if (typeof args !== "object" || args === null) return;
  const written = rawArgumentsOf(text);
  if (written === null) return;
  const found = respelledIntegerIn(written, args);
  if (found !== null) (msg as Marked)[RESPELLED] = found;
}

/**
 * Why `msg`'s progress token cannot be forwarded (null when it can): an integer the gateway would
 * write as another number (`markWrittenIntegers`).
 */
export function progressTokenProblem(msg: Request): string | null {
  const raw = (msg as Marked)[RESPELLED_TOKEN];
  if (raw === undefined) return null;
  const shown = raw.length > 40 ? `${raw.slice(0, 40)}… (${raw.length} characters)` : raw;
  return (
    `params._meta.progressToken ${shown} is a number the gateway reads as a double and would forward ` +
    "as another number (the server's progress would come under a token the client never used): use a " +
    "string, or an integer of at most 15 digits."
  );
}

/** The integer of `msg`'s arguments that would reach the server respelled (`markWrittenIntegers`). */
export function respelledIntegerOf(msg: Request): RespelledInteger | undefined {
  return (msg as Marked)[RESPELLED];
}

/**
 * How the audit names a call: the client's id text, and a key no other request read by this
 * gateway process has. The text is what a person reads; it is not unique (over HTTP two POSTs of
 * one session may carry one id, and a client may reuse an id once its call is over), so the key
 * is what joins a call's intent to its end, in the chain (`callKey`) and in `open_intents`. A
 * counter: it says nothing of the id the gateway holds (a stand-in's prefix is the process's own).
 */
export interface CallName {
  idText: string;
  /** absent only where a name had to be made up from a held id (none was kept): no key to claim */
  key?: number;
}

let lastKey = 0;

/**
 * Marks `msg` (a request just read) with its call key, and with its id's text when that is not
 * the held id's own (`text` undefined: it is).
 */
export function markRequest(msg: Request, text: string | undefined): void {
  const m = msg as Marked;
  m[CALL_KEY] = ++lastKey;
  if (text !== undefined && text !== JSON.stringify(msg.id)) m[ID_TEXT] = text;
}

/** The client's id of `msg` as JSON text: its mark, else the id as held (then the same). */
export function idTextOf(msg: Request): string {
  return (msg as Marked)[ID_TEXT] ?? JSON.stringify(msg.id);
}

/**
 * A new call under the client id text `idText`: the gateway's own request made for one of the
 * client's (a resource subscription re-opened on a new process), with a key of its own.
 */
export function newCallName(idText: string): CallName {
  return { idText, key: ++lastKey };
}

/** The audit's name for `msg`'s call (a request never marked gets its key now). */
export function callOf(msg: Request): CallName {
  const m = msg as Marked;
  m[CALL_KEY] ??= ++lastKey;
  return { idText: idTextOf(msg), key: m[CALL_KEY] };
}
