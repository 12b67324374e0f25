/**
 * JSON-RPC 2.0 message shapes as the relay sees them. The relay never trusts a
 * peer's message: `classify` turns any parsed value into exactly one kind, and
 * everything that is not a well-formed request, notification or response is
 * `invalid` with a reason.
 */
import { MAX_MESSAGE_DEPTH, parsedNestsDeeperThan } from "../util/jsonDepth.js";
import { TopLevelIdScanner } from "./idScan.js";

export type Id = string | number;

export interface Request {
  jsonrpc: "2.0";
  id: Id;
  method: string;
  params?: Record<string, unknown>;
}
export interface Notification {
  jsonrpc: "2.0";
  method: string;
  params?: Record<string, unknown>;
}
export interface ErrorObject {
  code: number;
  message: string;
  data?: unknown;
}
export interface Response {
  jsonrpc: "2.0";
  id: Id | null;
  result?: unknown;
  error?: ErrorObject;
}

export type Classified =
  | { kind: "request"; msg: Request }
  | { kind: "notification"; msg: Notification }
  | { kind: "response"; msg: Response }
  | {
      kind: "invalid";
      reason: string;
      id: Id | null;
      /** nested deeper than MAX_MESSAGE_DEPTH (src/util/jsonDepth.ts); `hasMethod`: a request or notification */
      tooDeep?: { hasMethod: boolean };
      /**
       * What the malformed message with an id was meant to be, read from its shape only (a
       * `method`: a request; `result` or `error`, or a "2.0" message without a method: a response),
       * so that whoever waits on that id can be answered. Absent without an id, or when nothing
       * says either (`{"id":3,"note":"debug"}` printed on stdout is no answer to request 3).
       */
      meant?: "request" | "response";
      /** not JSON at all: nothing of it was read (its id, if any: `unparsedIdOf`) */
      unparsed?: true;
      /** a batch (a JSON array): the ids of the requests in it, each answered with the refusal */
      batch?: Id[];
      /** for each of `batch`, the index of its request in the array (where its id's text is read) */
      batchAt?: number[];
    };

/** Why a JSON array is refused, worded to hold whatever protocol revision the peers negotiated. */
export const BATCH_REFUSED =
  "portcullis does not accept JSON-RPC batches (arrays); send one message per line";

/**
 * The one check of a JSON-RPC id, for every transport: a string or a finite number. `1e400`
 * parses to Infinity (and `-1e400` to -Infinity), which is no id: written back it would be
 * `null`, and the answer would name no request.
 */
export function isId(v: unknown): v is Id {
  return typeof v === "string" || (typeof v === "number" && Number.isFinite(v));
}

function isParams(v: unknown): boolean {
  return v === undefined || (typeof v === "object" && v !== null);
}

/** At most this many requests of a batch are answered, each under its own id (the rest: none). */
const MAX_BATCH_IDS = 1000;

export function classify(value: unknown): Classified {
  if (typeof value !== "object" || value === null) {
    return { kind: "invalid", reason: "not a JSON object", id: null };
  }
  if (Array.isArray(value)) {
    // True in every era: 2025-03-26 allowed batches, later revisions removed them, and
    // portcullis never took them (one message, one decision, one record).
    // JSON-RPC answers a batch's requests one by one, by id: each is refused under its own. Each
    // id once, and at most MAX_BATCH_IDS of them: a 21-byte element gets a 168-byte refusal, and a
    // line near the message limit was answered with more than one string can hold (a crash).
    // A number beyond 2^53 is not merged with another of its value here: JSON.parse rounds two
    // ids into one (9007199254740993 and …992), which the client's texts tell apart (ClientIds).
    const seen = new Set<string>();
    const batch: Id[] = [];
    const batchAt: number[] = [];
    const elements = value as unknown[];
    for (let i = 0; i < elements.length; i++) {
      const r = elements[i] as Record<string, unknown> | null;
      if (typeof r !== "object" || r === null || typeof r.method !== "string" || !isId(r.id)) continue;
      if (typeof r.id === "string" || Math.abs(r.id) <= Number.MAX_SAFE_INTEGER) {
        const key = `${typeof r.id}:${String(r.id)}`;
        if (seen.has(key)) continue;
        seen.add(key);
      }
      batch.push(r.id);
      batchAt.push(i);
      if (batch.length >= MAX_BATCH_IDS) break;
    }
    return { kind: "invalid", reason: BATCH_REFUSED, id: null, batch, batchAt };
  }
  const m = value as Record<string, unknown>;
  const id = isId(m.id) ? m.id : null;
  if (m.jsonrpc !== "2.0") return malformed('missing "jsonrpc": "2.0"', id, m);
  if (typeof m.method === "string") {
    // a request (or notification) that is an answer too: which one it is is anyone's guess, as for
    // result and error together; relayed, a client that reads `result` first would take it for the
    // answer to its own request of the same number, one the gateway neither saw nor recorded
    if ("result" in m || "error" in m)
      return malformed("a message with both a method and a result or error", id, m);
    if (!isParams(m.params)) return malformed("params must be an object", id, m);
    if ("id" in m) {
      if (!isId(m.id))
        return { kind: "invalid", reason: "request id must be a string or a number", id: null };
      return { kind: "request", msg: m as unknown as Request };
    }
    return { kind: "notification", msg: m as unknown as Notification };
  }
  if ("result" in m || "error" in m) {
    if (!("id" in m) || !(isId(m.id) || m.id === null)) {
      return { kind: "invalid", reason: "response without a valid id", id: null };
    }
    if ("error" in m) {
      // both members: which one is the answer is anyone's guess, and relayed, the client
      // would read one and the audit another
      if ("result" in m) return malformed("a response with both result and error", id, m);
      const e = m.error as Record<string, unknown> | null;
      if (
        typeof e !== "object" ||
        e === null ||
        typeof e.code !== "number" ||
        typeof e.message !== "string"
      ) {
        return malformed("malformed error object", id, m);
      }
    }
    return { kind: "response", msg: m as unknown as Response };
  }
  return malformed("neither a request, a notification nor a response", id, m);
}

/** An invalid message, with what it was meant to be when it has an id (see `meant`). Off the hot path. */
function malformed(reason: string, id: Id | null, m: Record<string, unknown>): Classified {
  if (id === null) return { kind: "invalid", reason, id };
  const meant =
    typeof m.method === "string"
      ? "request"
      : "result" in m || "error" in m || (m.jsonrpc === "2.0" && !("method" in m))
        ? "response"
        : undefined;
  return meant ? { kind: "invalid", reason, id, meant } : { kind: "invalid", reason, id };
}

/**
 * One line as a message. A value nested deeper than MAX_MESSAGE_DEPTH is `invalid` with
 * `tooDeep` and, when its top level has one, its id: so that its requester can be answered.
 */
export function parseLine(line: string): Classified {
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch {
    return { kind: "invalid", reason: NOT_JSON, id: null, unparsed: true };
  }
  if (parsedNestsDeeperThan(line, value)) {
    const m = (Array.isArray(value) ? {} : value) as Record<string, unknown>;
    return {
      kind: "invalid",
      reason: `nested deeper than ${MAX_MESSAGE_DEPTH} levels`,
      id: isId(m.id) ? m.id : null,
      tooDeep: { hasMethod: typeof m.method === "string" },
    };
  }
  return classify(value);
}

export const NOT_JSON = "not valid JSON";

/**
 * The top-level id of a line that is not JSON (`parseLine` said `unparsed`), with what it was
 * meant to be, so that whoever waits on that id can be answered: a server's answer holding NaN
 * or Infinity (Python's json.dumps writes them by default) or a raw control character in a
 * string would otherwise leave its caller waiting for ever. Read by scanning the text as
 * `TopLevelIdScanner` does for a line too large to parse; nothing else of such a line is
 * trusted. `meant` as in `malformed`: a top-level "method" makes it a request; "result",
 * "error" or "jsonrpc" a response; neither (an object that only has an id) is no message, null.
 */
export function unparsedIdOf(line: string): { id: Id; rawId: string; meant: "request" | "response" } | null {
  const scan = new TopLevelIdScanner(true);
  scan.pushText(line);
  const rawId = scan.id;
  if (rawId === null) return null;
  const meant = scan.hasMethod ? "request" : scan.hasAnswerMember ? "response" : null;
  if (meant === null) return null;
  return { id: JSON.parse(rawId) as Id, rawId, meant };
}

export const PARSE_ERROR = -32700;
export const INVALID_REQUEST = -32600;
export const METHOD_NOT_FOUND = -32601;
export const INVALID_PARAMS = -32602;
export const INTERNAL_ERROR = -32603;

export function errorResponse(id: Id | null, code: number, message: string, data?: unknown): Response {
  const error: ErrorObject = { code, message };
  if (data !== undefined) error.data = data;
  return { jsonrpc: "2.0", id, error };
}
