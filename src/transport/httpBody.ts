import type { IncomingMessage } from "node:http";
import type { RefusedAnswer } from "../gateway/clientMessages.js";
import { refuse } from "../guard/refusals.js";
import { TopLevelIdScanner } from "../relay/idScan.js";
import { BATCH_REFUSED, classify, type Id, INVALID_REQUEST, PARSE_ERROR } from "../relay/jsonrpc.js";
import { MAX_MESSAGE_DEPTH, parsedNestsDeeperThan } from "../util/jsonDepth.js";

export interface JsonRpcMessage {
  jsonrpc: "2.0";
  id?: string | number | null;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: unknown;
}

export type BodyResult =
  | {
      ok: true;
      message: JsonRpcMessage /** the body as sent: ids are read from it byte-exact */;
      text: string;
    }
  | { ok: false; status: number; code: number; message: string; data?: unknown };

/**
 * A refused body that reads as an answer (no top-level `method`; a `result`, `error` or `jsonrpc`
 * member; an id): told with that id, so that the server's request it answers is not left waiting.
 */
export type RefusedAnswerHandler = (id: Id, problem: RefusedAnswer) => void;

/**
 * Reads one POST body, at most `maxBytes` (a longer one is refused as it arrives, never buffered
 * whole: 413), and checks it is one JSON-RPC message nested at most MAX_MESSAGE_DEPTH deep (400
 * otherwise). Batches are refused: the protocol dropped them (2025-06-18), and no SDK client
 * sends one. A refused body that reads as an answer to a request goes to `refusedAnswer` with
 * its id (read from its bytes as on stdio, `unparsedIdOf`: nothing else of it is trusted); for a
 * body whose declared length is over the limit, once its bytes have passed (after the 413).
 */
export async function readJsonBody(
  req: IncomingMessage,
  maxBytes: number,
  refusedAnswer?: RefusedAnswerHandler,
): Promise<BodyResult> {
  const tooLarge = (bytes: number): BodyResult => ({
    ok: false,
    status: 413,
    code: INVALID_REQUEST,
    message: `the request body exceeds the message size limit of ${maxBytes} bytes`,
    // the data an agent gets for the same refusal on stdio (error, reason, retry, bytes), and the limit
    data: { ...(refuse.requestTooLarge(bytes, "not forwarded").data as object), limit: maxBytes },
  });
  /** a refused body's id, when it reads as an answer: told to `refusedAnswer` */
  const answered = (scan: TopLevelIdScanner, problem: RefusedAnswer) => {
    if (!refusedAnswer || scan.id === null || scan.hasMethod || !scan.hasAnswerMember) return;
    try {
      refusedAnswer(JSON.parse(scan.id) as Id, problem);
    } catch {
      /* an id that is no JSON value answers nothing */
    }
  };
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > maxBytes) {
    // refused at once; its bytes are still read as they pass (never kept), for its id
    const scan = refusedAnswer ? new TopLevelIdScanner(true) : null;
    let passed = 0;
    req.on("data", (c: Buffer) => {
      passed += c.length;
      scan?.push(c);
    });
    req.once("end", () => {
      if (scan) answered(scan, { kind: "too-large", bytes: passed });
    });
    req.once("error", () => {});
    return tooLarge(declared);
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let over: TopLevelIdScanner | null = null;
  await new Promise<void>((resolve, reject) => {
    req.on("data", (c: Buffer) => {
      size += c.length;
      if (over === null && size > maxBytes) {
        // from here the bytes are only scanned for the id, as on stdio (LineReader)
        over = new TopLevelIdScanner(true);
        for (const kept of chunks) over.push(kept);
        chunks.length = 0;
      }
      if (over) over.push(c);
      else chunks.push(c);
    });
    req.once("end", resolve);
    req.once("error", reject);
  });
  if (over) {
    answered(over, { kind: "too-large", bytes: size });
    return tooLarge(size);
  }
  let value: unknown;
  const text = Buffer.concat(chunks).toString("utf8");
  const scanned = () => {
    const scan = new TopLevelIdScanner(true);
    scan.pushText(text);
    return scan;
  };
  try {
    value = JSON.parse(text);
  } catch {
    if (refusedAnswer) answered(scanned(), { kind: "invalid", reason: "not valid JSON" });
    return { ok: false, status: 400, code: PARSE_ERROR, message: "Parse error: the body is not valid JSON" };
  }
  if (parsedNestsDeeperThan(text, value)) {
    if (refusedAnswer) answered(scanned(), { kind: "too-deep" });
    // what the gateway does with a message walks it: a body nested thousands deep would throw there
    return {
      ok: false,
      status: 400,
      code: INVALID_REQUEST,
      message: `Invalid Request: nested deeper than ${MAX_MESSAGE_DEPTH} levels of arrays and objects`,
      // the data an agent gets for the same refusal on stdio: error, reason, retry, limit
      data: refuse.requestTooDeep(MAX_MESSAGE_DEPTH, "not forwarded").data,
    };
  }
  const problem = jsonRpcProblem(value);
  if (problem) {
    if (refusedAnswer) answered(scanned(), { kind: "invalid", reason: problem });
    // worded as stdio words the same line (ClientMessages.onMessage)
    return {
      ok: false,
      status: 400,
      code: INVALID_REQUEST,
      message: `Invalid JSON-RPC message: ${problem}.`,
    };
  }
  return { ok: true, message: value as JsonRpcMessage, text };
}

/**
 * Why a body is not one JSON-RPC message, or null when it is: what stdio refuses of a line
 * (`classify`, the one place that decides what a malformed message is), in the same words. Only a
 * batch is worded for HTTP ("one message per POST").
 */
function jsonRpcProblem(v: unknown): string | null {
  const c = classify(v);
  if (c.kind !== "invalid") return null;
  return c.reason === BATCH_REFUSED ? HTTP_BATCH_REFUSED : c.reason;
}

const HTTP_BATCH_REFUSED = "portcullis does not accept JSON-RPC batches (arrays); send one message per POST";
