// Shared by the tests of the server's own requests to the client (stdio, `run --listen`, `run
// --url`): ids as a server may write them, which JSON.parse rounds (9007199254740993 becomes …992),
// respells (1e2 is 100, 1.0 is 1, -0 is 0, "\u0041" is "A") or which are long, and each such id
// beside the one JSON.parse would confuse it with, so the two must stay apart.
import { plainIdSpan } from "../../src/relay/rawSplice.js";

const LONG = `"long-${"\\u00e9".repeat(1200)}"`;

export const SERVER_IDS = [
  "9007199254740993",
  "9007199254740992",
  "1e2",
  "100",
  "1.0",
  "1",
  "-0",
  "0",
  '"\\u0041"',
  '"a\\/b"',
  LONG,
];

/** The server→client requests the tests make a server send, in turn. */
export const SERVER_METHODS = ["sampling/createMessage", "elicitation/create", "roots/list", "ping"];

/** The `i`th request a server sends, under the id text `id`; `marker` tells the answers apart. */
export function serverRequestLine(id: string, i: number): string {
  return `{"jsonrpc":"2.0","id":${id},"method":"${SERVER_METHODS[i % SERVER_METHODS.length]}","params":{"marker":"k${i}"}}`;
}

/** The top-level id of a line exactly as written (null when it cannot be told without parsing). */
export function idTextOf(line: string): string | null {
  const span = plainIdSpan(line);
  return span ? line.slice(span.start, span.end) : null;
}
