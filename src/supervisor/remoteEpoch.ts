// One epoch of a server reached over Streamable HTTP (src/supervisor/remote.ts): what it is made
// of, its execution record, and what the server says of itself, which completes that record.
import type { ClientRequest } from "node:http";
import { ulid } from "ulid";
import {
  type ExecutionRecord,
  type RemoteFacts,
  remoteRecord,
  writtenNumbersUnder,
} from "../identity/index.js";
import { sameJson } from "../util/canonical.js";
import { scrubbedOr } from "../util/log.js";
import { respelledNumbers } from "../util/writtenIntegers.js";
import type { EpochReason, LinkGeneration } from "./link.js";
import type { HeaderSpec } from "./remoteHeaders.js";
import { type Chain, isObject } from "./remoteWire.js";

/** 2026-07-28: where a result says which server answered. */
const SERVER_INFO_META = "io.modelcontextprotocol/serverInfo";

/**
 * One epoch of a server reached over Streamable HTTP: one upstream session, on connections that
 * presented one certificate chain, answered by a server that described itself one way. Minted
 * here only, never on the server's word: a new session (the server forgot ours, the connection
 * died, a new initialize), a different certificate chain on a new connection, or a different
 * serverInfo each make a new one.
 */
export interface RemoteGeneration extends LinkGeneration {
  reason: EpochReason;
  facts: RemoteFacts;
  /** the Mcp-Session-Id the server gave at initialize (kept in memory only) */
  sessionId: string | null;
  /** requests under way for this epoch: destroyed when it goes down */
  requests: Set<ClientRequest>;
  /**
   * The POSTs of requests under way, by their id: a request the gateway gives up on (it sends
   * `notifications/cancelled` for it) has its POST closed (remoteSession.ts, giveUp).
   */
  posts: Map<unknown, ClientRequest>;
  /**
   * The requests posted in this session and not answered yet, by their (wire) id: an answer is
   * matched here, on whichever stream it comes, and taken once; one to an id not here (never
   * sent, or answered already) is dropped (remoteSession.ts, deliver). `answered` runs when its
   * answer comes: the POST's own stream is then done with.
   */
  asked: Map<unknown, Asked>;
  /** whether the server was said to leave an answered request's stream open (once an epoch) */
  warnedLeftOpen?: boolean;
  /** the server-to-client stream (GET), once opened */
  stream: ClientRequest | null;
  /** requests whose headers are being resolved: they keep their order */
  queue: Promise<void>;
  /**
   * The epoch's initialize was answered: a later answer to it is no answer (the gateway took the
   * first), and is not read for what the server says of itself (remoteSession.ts, deliver).
   */
  initializeAnswered: boolean;
  /** the id of the epoch's initialize once answered: a later answer under it is said to be one */
  initializeId?: unknown;
  /** requests the server answered for a session it no longer knows (see LinkGeneration) */
  notRun: Map<unknown, number>;
  /**
   * Messages queued behind the epoch's initialize and not yet sent: when a front answers that
   * initialize for a server it cannot reach, those requests are answered server_unavailable
   * rather than held until the server is back (remoteSession.ts).
   */
  waiting: Set<Queued>;
  /**
   * The server speaks the older HTTP+SSE transport (MCP 2024-11-05): messages are POSTed to the
   * endpoint its stream named (same origin as the URL), and every answer comes on that stream,
   * which is the session (remoteSession.ts, olderTransport). Null: Streamable HTTP.
   */
  older: { endpoint: URL } | null;
  /** over the older transport, the epoch's initialize until its answer comes on the stream */
  olderInit: { m: { id?: unknown; method?: unknown }; answered: () => void } | null;
}

/** A request posted and not answered yet (RemoteGeneration.asked). */
export interface Asked {
  m: { id?: unknown; method?: unknown };
  answered: () => void;
}

/** A message in an epoch's queue; `dropped`: answered without being sent. */
export interface Queued {
  m: { id?: unknown; method?: unknown };
  dropped: boolean;
}

/** What an epoch's record names besides the facts learned on the wire. */
export interface EpochSource {
  label: string;
  configDigest: string;
  url: URL;
  headers: readonly HeaderSpec[];
  /** the values released to the server (its header credentials), taken out of what is kept and shown */
  released?: ShownValues;
}

/**
 * What the server says may hold a header credential it was sent (src/vault/scrub.ts,
 * ReleasedValues): taken out of what the gateway keeps and shows of it.
 */
export interface ShownValues {
  readonly size: number;
  scrubValue(v: unknown): unknown;
  /** a host name, in any case: the URL parser lower-cases the one it reads */
  scrubHost(host: string): string;
}

/** A new epoch (a new ulid), reached on connections that presented `chain`; nothing said yet. */
export function newGeneration(o: EpochSource, reason: EpochReason, chain: Chain): RemoteGeneration {
  const facts: RemoteFacts = {
    url: o.url.href,
    certificateChainSha256: chain?.digest ?? null,
    certificate: chain?.certificate ?? null,
    serverInfo: null,
    protocolVersion: null,
    capabilities: null,
    session: null,
    headerNames: o.headers.map((h) => h.name).sort(),
  };
  const epoch = ulid();
  return {
    epoch,
    reason,
    facts,
    record: recordOf(o, epoch, new Date().toISOString(), facts),
    settled: null,
    alive: true,
    sessionId: null,
    requests: new Set(),
    posts: new Map(),
    asked: new Map(),
    stream: null,
    queue: Promise.resolve(),
    initializeAnswered: false,
    notRun: new Map(),
    waiting: new Set(),
    older: null,
    olderInit: null,
  };
}

/**
 * What the server says of itself (an initialize result; in the 2026-07-28 era, each
 * server/discover result) goes into the epoch's record. Said differently within one epoch (a
 * server that changes its serverInfo): false, and the caller ends the epoch without delivering
 * the answer.
 */
export function noteSelf(
  o: EpochSource,
  gen: RemoteGeneration,
  result: Record<string, unknown>,
  initialize: boolean,
  text: string,
): boolean {
  // legacy: the initialize result's serverInfo; 2026-07-28: server/discover's `_meta` carries it
  const meta = isObject(result._meta) ? result._meta : null;
  const fromMeta = result.serverInfo === undefined || result.serverInfo === null;
  const said = fromMeta ? meta?.[SERVER_INFO_META] : result.serverInfo;
  const serverInfo = isObject(said) ? said : null;
  // numbers JSON.parse read as others (`9007199254740993` as …992): kept exactly beside the
  // parsed values, so that what the server said is recorded, compared and shown as it said it
  const exact = respelledNumbers(text);
  const infoNumbers =
    serverInfo === null
      ? []
      : exactUnder(
          exact,
          fromMeta ? ["result", "_meta", SERVER_INFO_META] : ["result", "serverInfo"],
          "serverInfo",
        );
  if (
    gen.facts.serverInfo !== null &&
    (!sameJson(gen.facts.serverInfo, serverInfo) ||
      !sameJson(writtenNumbersUnder(gen.facts, "serverInfo"), infoNumbers))
  )
    return false;
  if (initialize) {
    const capabilities = isObject(result.capabilities) ? result.capabilities : null;
    const capabilityNumbers =
      capabilities === null ? [] : exactUnder(exact, ["result", "capabilities"], "capabilities");
    gen.facts = withWrittenNumbers(
      {
        ...gen.facts,
        serverInfo,
        protocolVersion: typeof result.protocolVersion === "string" ? result.protocolVersion : null,
        capabilities,
      },
      [...infoNumbers, ...capabilityNumbers],
    );
  } else if (gen.facts.serverInfo === null && serverInfo !== null) {
    gen.facts = withWrittenNumbers({ ...gen.facts, serverInfo }, [
      ...writtenNumbersUnder(gen.facts, "capabilities"),
      ...infoNumbers,
    ]);
  } else return true;
  gen.record = recordOf(o, gen.epoch, gen.record.startedAt, gen.facts);
  gen.settled = true;
  return true;
}

/**
 * The numbers of `exact` (respelledNumbers of the answer's text) under the path `from`, each as a
 * `writtenNumbers` entry under the record's member `as`: `PATH=EXACT`.
 */
function exactUnder(
  exact: readonly { path: (string | number)[]; exact: string }[],
  from: readonly string[],
  as: string,
): string[] {
  return exact
    .filter((n) => n.path.length > from.length && from.every((k, i) => n.path[i] === k))
    .map((n) => `${JSON.stringify([as, ...n.path.slice(from.length)])}=${n.exact}`);
}

/** `facts` with `numbers` as its writtenNumbers, sorted; without the member when there is none. */
function withWrittenNumbers(facts: RemoteFacts, numbers: string[]): RemoteFacts {
  const { writtenNumbers: _was, ...rest } = facts;
  return numbers.length > 0 ? { ...rest, writtenNumbers: [...numbers].sort() } : rest;
}

/**
 * The record keeps what the server said of itself with the values released to it taken out: a
 * server that puts its header credential in its serverInfo (or capabilities, or certificate) would
 * otherwise have it kept in the store and the audit and shown by `status`. The epoch's own facts,
 * which the requests read (the protocol version they send back), stay as the server said them.
 */
function recordOf(o: EpochSource, epoch: string, startedAt: string, facts: RemoteFacts): ExecutionRecord {
  const kept = o.released && o.released.size > 0 ? scrubbedFacts(o.released, facts) : facts;
  return remoteRecord({ serverLabel: o.label, configDigest: o.configDigest, epoch, startedAt }, kept);
}

/**
 * `facts` scrubbed; should that throw (a string whose markers would take it past what a scrub may
 * write), each string on its own, NOT_SCRUBBED in place of one that cannot be: never kept as the
 * server said it, and the epoch still starts.
 */
function scrubbedFacts(released: ShownValues, facts: RemoteFacts): RemoteFacts {
  try {
    return released.scrubValue(facts) as RemoteFacts;
  } catch {
    const text = (t: string) => scrubbedOr((s) => released.scrubValue(s) as string, t);
    const walk = (v: unknown): unknown => {
      if (typeof v === "string") return text(v);
      if (Array.isArray(v)) return v.map(walk);
      if (typeof v !== "object" || v === null) return released.scrubValue(v);
      // fromEntries defines each key: a "__proto__" one stays a key
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [text(k), walk(x)]));
    };
    return walk(facts) as RemoteFacts;
  }
}
