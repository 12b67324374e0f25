import type { Request } from "../relay/jsonrpc.js";

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

type Marked = Request & { [ID_TEXT]?: string };

/** Marks `msg` (a request just read) with its id's text, when that is not the held id's own. */
export function markIdText(msg: Request, text: string): void {
  if (text !== JSON.stringify(msg.id)) (msg as Marked)[ID_TEXT] = text;
}

/** The client's id of `msg` as JSON text: its mark, else the id as held (then the same). */
export function idTextOf(msg: Request): string {
  return (msg as Marked)[ID_TEXT] ?? JSON.stringify(msg.id);
}
