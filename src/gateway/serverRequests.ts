import { rawRequestId } from "../relay/clientIds.js";
import { IdMap, writtenIdKey } from "../relay/ids.js";
import {
  type ErrorObject,
  errorResponse,
  type Id,
  INTERNAL_ERROR,
  INVALID_PARAMS,
  INVALID_REQUEST,
  METHOD_NOT_FOUND,
  type Notification,
  type Request,
  type Response,
} from "../relay/jsonrpc.js";
import { plainIdSpan, serializeWithId, spliceId, writtenIdOf } from "../relay/rawSplice.js";
import type { LinkGeneration as Generation, ServerLink } from "../supervisor/link.js";
import type { Logger } from "../util/log.js";
import { SparingWarnings } from "../util/sparingWarnings.js";
import { transportRewrites, writtenNumber } from "./asWritten.js";
import type { Downstream } from "./downstream.js";
import { GATEWAY_META_PREFIX, withoutGatewayMeta } from "./gatewayMeta.js";
import { clientCapabilityFor, declaresCapability, isElicitationVariant } from "./protocol.js";
import { attributedElicitation } from "./serverWords.js";
import { cutShort, preview } from "./text.js";
import { UnreadInput } from "./unreadInput.js";

/** How many of the server's requests may wait for the client's answers at once. */
export const MAX_AT_CLIENT = 4096;

/**
 * A request of the server's, sent on to the client under the gateway's own id. Its answer goes
 * back under the id as the server wrote it (`written`), and `key` finds it by that id.
 */
interface ServerRequest {
  serverId: Id;
  written: string;
  key: string;
  gen: Generation;
}

export interface ServerRequestsPorts {
  link: ServerLink;
  downstream: Downstream;
  log: Logger;
  /** the generation that answers now: null before the first epoch */
  current(): Generation | null;
  /** the capabilities the client declared (ClientSession.clientCapabilities): null before any */
  clientCapabilities(): unknown;
}

/**
 * The server's own requests (sampling, elicitation, roots…) at the client, under the gateway's
 * ids: the client's answer goes back to the process that asked, while it still runs, under the
 * id that process wrote.
 */
export class ServerRequests {
  private readonly atClient = new IdMap<ServerRequest>();
  /** the limit was reached and the log said so (said again after it was left) */
  private toldFull = false;

  /** answers a server that reads none of its input would only leave in the gateway's memory */
  private readonly unread: UnreadInput;

  /** warnings a server can make as often as it sends a request: each kind at most once a minute */
  private readonly sparing: SparingWarnings;

  constructor(private readonly p: ServerRequestsPorts) {
    this.unread = new UnreadInput(p.log);
    this.sparing = new SparingWarnings((line) => p.log.warn(line));
  }

  /** `text`: the line as the server wrote it, where the id's own text is read (`writtenIdOf`). */
  relay(msg: Request, gen: Generation, text: string): void {
    if (!this.isCurrent(gen)) {
      // A process whose epoch is over still writing (its grace after its stdin closed, a watcher's
      // new worker not identified yet): no answer could go back to it (`answered`), and the client
      // was already told that its open requests are cancelled (`endGeneration`). Not relayed: the
      // human is never asked anything on behalf of code the gateway no longer vouches for.
      this.p.log.warn(
        `dropped the server's ${preview(msg.method)} request: the server process of epoch=${gen.epoch} that sent it is over`,
      );
      return;
    }
    const written = writtenIdOf(text, msg.id);
    const needs = clientCapabilityFor(msg.method);
    if (needs !== null && !declaresCapability(this.p.clientCapabilities(), needs)) {
      // MCP: a server must not send requests for capabilities the client did not declare. Relayed,
      // the client would answer -32601 itself at best; one that does not check would act on it (a
      // model sampled, a human asked, its roots listed) though it never offered to. Answered as
      // the SDK's own client answers a method it has no handler for, never relayed.
      this.p.log.warn(
        `refused the server's ${preview(msg.method)} request: the client did not declare the ${needs} capability`,
      );
      const e = `Method not found: ${preview(msg.method)} (the client did not declare the ${needs} capability, so it is not sent requests that need it).`;
      this.reply(errorResponse(msg.id, METHOD_NOT_FOUND, e), written);
      return;
    }
    if (Array.isArray(msg.params)) {
      // By position: JSON-RPC 2.0 allows it, MCP does not (every MCP request, the server's
      // sampling/createMessage, elicitation/create, roots/list, ping and tasks/* included, takes
      // its params by name, an object). What a client makes of an array is its own guess (a lenient
      // one maps it onto the names in order), which the gateway cannot read as the client will: an
      // elicitation's message and URL could not be said to be the server's (attributedElicitation),
      // a sampling request's prompt or a roots/list's _meta not told apart. Never relayed.
      const method = preview(msg.method);
      this.p.log.warn(`refused the server's ${method} request: its params are by position (an array)`);
      const why =
        msg.method === "elicitation/create"
          ? "; portcullis reads an elicitation's message and URL before a human does, which it cannot by position"
          : "";
      const e = `Invalid params: ${method} takes its params by name (an object), as every MCP request does; portcullis does not relay a request whose params are by position (an array)${why}.`;
      this.reply(errorResponse(msg.id, INVALID_PARAMS, e), written);
      return;
    }
    if (isElicitationVariant(msg.method)) {
      // Not byte-for-byte elicitation/create, but a client that folds method names (as a lenient
      // server might: clientMessages.ts refuses such names the other way) would take it for one,
      // and show its message and URL, which the gateway reads only under the exact name, unread.
      this.p.log.warn(
        `refused the server's ${preview(msg.method)} request: not byte for byte elicitation/create, too close to it`,
      );
      const e = `Method not found: ${preview(msg.method)} (not byte for byte elicitation/create; portcullis reads an elicitation before a human does, under that name only).`;
      this.reply(errorResponse(msg.id, METHOD_NOT_FOUND, e), written);
      return;
    }
    const key = writtenIdKey(msg.id, written);
    if (this.inUse(key, gen)) {
      // Two requests of one process under one id: the client's answer could reach only one of
      // them, and a cancellation would name both. The second is answered, never relayed.
      this.p.log.warn(
        `refused a ${cutShort(msg.method)} request of the server: its id ${cutShort(written)} is already in use`,
      );
      const e = `Invalid request: id ${written} is already in use by a request of yours in flight.`;
      this.reply(errorResponse(msg.id, INVALID_REQUEST, e), written);
      return;
    }
    if (this.atClient.size >= MAX_AT_CLIENT) {
      // A server that asks without end while the client answers nothing (or slowly) would grow
      // the gateway's memory by each request kept for its answer: past the limit it is told no.
      if (!this.toldFull)
        this.p.log.warn(`refused the server's requests: ${MAX_AT_CLIENT} wait for the client`);
      this.toldFull = true;
      const e = `Too many requests of yours wait for the client's answer (${MAX_AT_CLIENT}): this one was not sent.`;
      this.reply(errorResponse(msg.id, INTERNAL_ERROR, e), written);
      return;
    }
    this.toldFull = false;
    const wire = this.atClient.add({ serverId: msg.id, written, key, gen }, key);
    // an elicitation whose message begins as the gateway's own ("portcullis: a human must
    // approve…") is said to be the server's: its URL is the server's, not the console's
    const attributed = msg.method === "elicitation/create" ? attributedElicitation(msg.params) : null;
    if (attributed !== null)
      this.p.log.warn(
        "the server's elicitation/create speaks as portcullis: the client is told it is the server's",
      );
    // what the server wrote under the gateway's own _meta keys is the gateway's to say: taken out
    const unmarked = withoutGatewayMeta(attributed ?? msg.params);
    if (unmarked !== null)
      this.sparing.say(
        "gateway-meta",
        `took ${unmarked.taken} _meta key(s) beginning "${GATEWAY_META_PREFIX}" out of the server's ${preview(msg.method)} request: those keys are portcullis's own words, never the server's`,
      );
    const params = unmarked?.part ?? attributed;
    const sent = { ...msg, id: wire, ...(params !== null ? { params } : {}) };
    // A number that re-serialising would change (`9007199254740993`, `1e-400`): the request goes
    // to the client as the server wrote it, under the gateway's id, when nothing rewrites it
    // (`writtenNumber`, the rule answers and notifications follow); else the server is told no and
    // the client never sees it with another number. (One regex test of the line in the common case.)
    const down = this.p.downstream;
    if (down.sendText !== undefined) {
      const rewrites = params !== null ? "the gateway rewrites the request" : transportRewrites(down, msg);
      const number = writtenNumber(text, sent, rewrites, true);
      if (number !== null) {
        const span = number.cannot === null ? plainIdSpan(text) : null;
        if (span !== null) {
          down.sendText(spliceId(text, span, String(wire)));
          return;
        }
        this.atClient.delete(wire, key);
        const reason = `a number in it that the gateway would pass on as another (at ${number.where}) cannot be passed on as written: ${number.cannot}`;
        this.p.log.warn(`refused a ${preview(msg.method)} request of the server: ${reason}`);
        this.reply(
          errorResponse(msg.id, INTERNAL_ERROR, `This request was not sent to the client: ${reason}.`),
          written,
        );
        return;
      }
    }
    down.send(sent);
  }

  /**
   * Whether a request of `gen` still at the client carries `key`. One of a process that went
   * away no longer counts (its successor numbers its requests afresh): its id is released, and
   * the client's late answer to it is still dropped by its wire id (`answered`).
   */
  private inUse(key: string, gen: Generation): boolean {
    const wire = this.atClient.wireFor(key);
    if (wire === undefined) return false;
    if (this.atClient.get(wire)?.gen === gen) return true;
    this.atClient.release(wire, key);
    return false;
  }

  /** The client's answer to one of them, passed on under the server's id. */
  answered(msg: Response): void {
    const entry = this.atClient.get(msg.id);
    if (!entry) {
      this.p.log.warn(
        `dropped a response from the client with an unknown id ${cutShort(JSON.stringify(msg.id))}`,
      );
      return;
    }
    this.atClient.delete(msg.id as number, entry.key);
    if (!this.isCurrent(entry.gen)) {
      this.p.log.debug("dropped a client response meant for a server process that went away");
      return;
    }
    this.reply({ ...msg, id: entry.serverId }, entry.written);
  }

  /**
   * The client's answer to the server's request `wire` was dropped (too large, too deep): the
   * server gets `e` in its place, under its own id, while the process that asked still runs.
   */
  answerInstead(wire: Id, e: ErrorObject): void {
    const entry = typeof wire === "number" ? this.atClient.get(wire) : undefined;
    if (!entry || typeof wire !== "number") return;
    this.atClient.delete(wire, entry.key);
    if (this.isCurrent(entry.gen))
      this.reply(errorResponse(entry.serverId, e.code, e.message, e.data), entry.written);
  }

  /**
   * An answer to a request of the server's, under its id as the server wrote it (`written`):
   * JSON.parse would round 9007199254740993 or respell 1e2, and the server matches by its own id.
   */
  reply(msg: Response, written: string): void {
    const link = this.p.link;
    // (its request is over on this side either way: nothing waits for this answer but the server)
    if (this.unread.dropped(link, "an answer to a request of the server's")) return;
    if (link.sendText && written !== JSON.stringify(msg.id)) link.sendText(serializeWithId(msg, written));
    else link.send(msg);
  }

  /**
   * The server process of `gen` cancelled one of its requests (`text`: the notification as it
   * wrote it): the notification as the client gets it, under the gateway's id, or null when none
   * of that process's is open under that id (another process's request is not its to cancel).
   */
  cancelled(msg: Notification, text: string, gen: Generation): Notification | null {
    const serverReq = (msg.params as { requestId?: Id } | undefined)?.requestId;
    const key = serverReq === undefined ? undefined : cancelledKey(serverReq, text);
    const wire = key === undefined ? undefined : this.atClient.wireFor(key);
    if (wire === undefined || this.atClient.get(wire)?.gen !== gen) return null;
    this.atClient.delete(wire, key);
    return { ...msg, params: { ...msg.params, requestId: wire } };
  }

  /** `gen` went away: the client is told that each request it still owes that process is cancelled. */
  endGeneration(gen: Generation): void {
    for (const [wire, d] of this.atClient.entries()) {
      if (d.gen !== gen) continue;
      this.atClient.delete(wire, d.key);
      this.p.downstream.send({
        jsonrpc: "2.0",
        method: "notifications/cancelled",
        params: { requestId: wire, reason: "the server process that sent this request went away" },
      });
    }
  }

  private isCurrent(gen: Generation): boolean {
    return gen === this.p.current() && gen.alive;
  }
}

/**
 * The key of the server's request a cancellation from the server names: a number by the text it
 * is written with in the notification, when that text is of the parsed value (see `writtenIdKey`).
 */
function cancelledKey(requestId: Id, text: string): string {
  if (typeof requestId !== "number") return writtenIdKey(requestId, "");
  const raw = rawRequestId(text);
  const written = raw !== null && safeParse(raw) === requestId ? raw : JSON.stringify(requestId);
  return writtenIdKey(requestId, written);
}

function safeParse(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
