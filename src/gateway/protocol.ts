import type { ReadFacts } from "../guard/guard.js";
import type { Request } from "../relay/jsonrpc.js";
import { canonicalJson, nonFiniteAt } from "../util/canonical.js";

/** The two MCP eras the gateway speaks on both sides. */
export type Era = "legacy" | "modern";

/** 2026-07-28: per-request protocol version in `_meta`. */
export const PROTOCOL_VERSION_META = "io.modelcontextprotocol/protocolVersion";
/** 2026-07-28: the client's capabilities, in every request's envelope. */
export const CLIENT_CAPABILITIES_META = "io.modelcontextprotocol/clientCapabilities";
/** 2026-07-28: the listen request's id, stamped on every notification of its stream. */
export const SUBSCRIPTION_ID_META = "io.modelcontextprotocol/subscriptionId";

/** The client's modern `_meta` envelope (protocol version, client info, capabilities), reused on the gateway's own requests. */
export function pickModernMeta(msg: Request): Record<string, unknown> | null {
  const meta = (msg.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
  if (!meta || typeof meta[PROTOCOL_VERSION_META] !== "string") return null;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(meta)) if (k.startsWith("io.modelcontextprotocol/")) out[k] = v;
  delete out[SUBSCRIPTION_ID_META];
  return out;
}

export function withMeta(
  params: Record<string, unknown>,
  meta: Record<string, unknown>,
): Record<string, unknown> {
  const own = (params._meta as Record<string, unknown> | undefined) ?? {};
  return { ...params, _meta: { ...meta, ...own } };
}

export function hasTools(capabilities: unknown): boolean {
  return typeof capabilities === "object" && capabilities !== null && "tools" in capabilities;
}

/**
 * The gateway tells the client when the list changes (epochs, re-lists), whatever the server
 * supports. Only a `tools` capability that is an object says so: one the server wrote as anything
 * else (`"yes"`, `[1, 2]`, `7`) goes on as written, never spread into an object of its characters.
 */
export function advertiseListChanged(result: unknown): unknown {
  const r = result as { capabilities?: { tools?: Record<string, unknown> } };
  const tools = r?.capabilities?.tools;
  if (typeof tools !== "object" || tools === null || Array.isArray(tools)) return result;
  return { ...r, capabilities: { ...r.capabilities, tools: { ...tools, listChanged: true } } };
}

/** 2026-07-28: where the tasks extension is declared among a server's `capabilities.extensions`. */
const TASKS_EXTENSION = "io.modelcontextprotocol/tasks";

/**
 * The gateway does not offer tasks (2025-11-25 task-augmented requests): a tools/call made a
 * task is answered at once with a task handle, and its real result comes later through
 * tasks/result, past the call's intent and result records and the epoch they name. So the
 * server's `tasks` capability (and a 2026-07-28 tasks extension) is taken out of what the
 * client is told; the client then makes plain calls.
 */
export function withoutTasks(result: unknown): unknown {
  const r = result as { capabilities?: { tasks?: unknown; extensions?: Record<string, unknown> } };
  const caps = r?.capabilities;
  if (typeof caps !== "object" || caps === null) return result;
  const extensions = caps.extensions;
  const hasExtension = typeof extensions === "object" && extensions !== null && TASKS_EXTENSION in extensions;
  if (!("tasks" in caps) && !hasExtension) return result;
  const { tasks: _tasks, ...kept } = caps;
  if (hasExtension) {
    const { [TASKS_EXTENSION]: _ext, ...others } = extensions as Record<string, unknown>;
    (kept as { extensions?: unknown }).extensions = others;
  }
  return { ...r, capabilities: kept };
}

/**
 * A tool as the client is shown it: without `execution.taskSupport` (the gateway offers no
 * tasks, see withoutTasks). The catalog and its fingerprints keep what the server said.
 */
export function toolWithoutTasks<T extends Record<string, unknown>>(tool: T): T {
  const execution = tool.execution as Record<string, unknown> | undefined;
  if (typeof execution !== "object" || execution === null || !("taskSupport" in execution)) return tool;
  const { taskSupport: _support, ...rest } = execution;
  const { execution: _execution, ...others } = tool;
  return (Object.keys(rest).length > 0 ? { ...others, execution: rest } : others) as unknown as T;
}

/**
 * The members of a tools/call's params that go to the server besides `name` and `arguments`:
 * `_meta` (the progress token, the 2026-07-28 envelope) and a 2026-07-28 retry's answers to the
 * server's own input request (`inputResponses`, `requestState`: the gateway's own are taken out
 * before). Nothing else: `task` would make the server answer with a handle (2025-11-25: a receiver
 * that does not declare task support for a request type must process it normally; the gateway
 * declares none to the client), and a member no revision defines (`input`, `args`, a second
 * `arguments` under another spelling) is no argument the human approved or the audit recorded,
 * while a lenient server may read it as one.
 */
const CALL_PARAMS_PASSED = ["_meta", "inputResponses", "requestState"] as const;

/**
 * A guarded request as it goes to the server: `jsonrpc`, `id`, `method` and `params` (given, or
 * the message's own), nothing else of the message. A member beside them (`arguments`, `Params`)
 * is in no decision and no record, and a lenient server may read the request from it.
 * `dropped` names what was left out.
 */
export function plainRequest(
  msg: Request,
  params: unknown = msg.params,
): { msg: Request; dropped: string[] } {
  const dropped = Object.keys(msg).filter((key) => !PLAIN_REQUEST_MEMBERS.has(key));
  const out = { jsonrpc: "2.0", id: msg.id, method: msg.method } as Request;
  if (params !== undefined) out.params = params as Request["params"];
  // the gateway's own marks go with it (symbol keys: the client's id as written, the call key,
  // src/gateway/clientIdText.ts): JSON never writes them, and the audit names the call by them
  for (const mark of Object.getOwnPropertySymbols(msg))
    (out as unknown as Record<symbol, unknown>)[mark] = (msg as unknown as Record<symbol, unknown>)[mark];
  return { msg: out, dropped };
}

const PLAIN_REQUEST_MEMBERS: ReadonlySet<string> = new Set(["jsonrpc", "id", "method", "params"]);

/**
 * The members each guarded read's params has, besides those of CALL_PARAMS_PASSED: its target
 * (the uri, the prompt's name, the completion's ref) and what the protocol sends with it. A
 * session grant covers a read of its method and target whatever else its params hold; a member no
 * revision defines (`URI`, `uris`, `path`) is not the target the human approved, and a lenient
 * server may read its target from it.
 */
const READ_PARAMS: Readonly<Record<string, readonly string[]>> = {
  "resources/read": ["uri"],
  "resources/subscribe": ["uri"],
  "prompts/get": ["name", "arguments"],
  "completion/complete": ["ref", "argument", "context"],
};

/**
 * A guarded read as it is decided, recorded and sent: its params without the members its method
 * does not have (`dropped` names them). A read of another method, or whose params are no object,
 * is returned as it is.
 */
export function readWithKnownParams(given: Request): { msg: Request; dropped: string[] } {
  const { msg, dropped: beside } = plainRequest(given);
  const known = READ_PARAMS[msg.method];
  if (!known || !isPlainObject(msg.params)) return { msg, dropped: beside };
  const all = msg.params as Record<string, unknown>;
  const keep = (key: string) =>
    known.includes(key) || (CALL_PARAMS_PASSED as readonly string[]).includes(key);
  const params: Record<string, unknown> = {};
  for (const key of Object.keys(all)) if (keep(key)) params[key] = all[key];
  const out = withoutRelatedTask(params, [...beside, ...Object.keys(all).filter((key) => !keep(key))]);
  if (out.dropped.length === 0) return { msg, dropped: [] };
  return { msg: { ...msg, params: out.params }, dropped: out.dropped };
}

/**
 * tools/call params as they go to the server: its name, exactly the arguments that were
 * validated, recorded and approved (`effective`), and the members above; `dropped` names the
 * members left out (`task` among them).
 */
export function callParamsForServer(
  params: Record<string, unknown>,
  effective: unknown,
): { params: Record<string, unknown>; dropped: string[] } {
  const out: Record<string, unknown> = { name: params.name, arguments: effective };
  for (const key of CALL_PARAMS_PASSED) if (Object.hasOwn(params, key)) out[key] = params[key];
  const dropped = Object.keys(params).filter(
    (key) =>
      key !== "name" && key !== "arguments" && !(CALL_PARAMS_PASSED as readonly string[]).includes(key),
  );
  return withoutRelatedTask(out, dropped);
}

/** The 2025-11-25 `_meta` key that ties a request to a task of the receiver's. */
export const RELATED_TASK_META = "io.modelcontextprotocol/related-task";

/**
 * `params` without RELATED_TASK_META in its `_meta` (named in `dropped` when it was there). The
 * gateway offers no tasks, so no request of the client's belongs to one; sent with it, a server
 * with a task message queue (the SDK's, as server-everything runs it) runs the request and queues
 * its answer for that task instead of sending it: a call ran, its outcome never came back, its
 * record stayed open, and the egress release window of its grant with it.
 */
function withoutRelatedTask(
  params: Record<string, unknown>,
  dropped: string[],
): { params: Record<string, unknown>; dropped: string[] } {
  const meta = params._meta;
  if (!isPlainObject(meta) || !Object.hasOwn(meta, RELATED_TASK_META)) return { params, dropped };
  const { [RELATED_TASK_META]: _task, ...rest } = meta;
  return { params: { ...params, _meta: rest }, dropped: [...dropped, `_meta.${RELATED_TASK_META}`] };
}

/**
 * The 2025-11-25 task methods a requestor sends to the receiver that runs its tasks. The gateway
 * offers the client no tasks (withoutTasks, withoutTaskParam), so none of these can name a task
 * of the client's through it; relayed, they would reach a server that made tasks some other way
 * (a relayed request it took as task-augmented, one it runs for another client) and hand out
 * results no intent or result record of this gateway covers. Refused, never forwarded; so is a
 * name that folds to one of them (as for the guarded methods below). The server's requests of
 * these methods to the client (about tasks the client runs for it) are not the client's: relayed.
 */
const TASK_METHODS = new Set(["tasks/get", "tasks/result", "tasks/list", "tasks/cancel"]);

/** Whether the client's request of `method` is a task method the gateway refuses, or folds to one. */
export function isTaskMethod(method: string): boolean {
  return TASK_METHODS.has(method) || TASK_METHODS.has(foldedOf(method));
}

/**
 * The capability a client declares (legacy: its initialize's `capabilities`; 2026-07-28: its
 * request envelope's clientCapabilities) before a server may send it a request of each method:
 * the specification's "a server MUST NOT send requests for capabilities the client did not
 * declare". The server's task requests (about task-augmented requests the client runs for it)
 * need the client's `tasks`. A name that folds to one of them is taken as it (a lenient client
 * might). `ping` and anything else: none.
 */
const CLIENT_CAPABILITY_OF: ReadonlyMap<string, string> = new Map([
  ["sampling/createMessage", "sampling"],
  ["roots/list", "roots"],
  ["elicitation/create", "elicitation"],
  ...[...TASK_METHODS].map((m) => [m, "tasks"] as const),
]);

/** The client capability a server's request of `method` needs (CLIENT_CAPABILITY_OF), or null. */
export function clientCapabilityFor(method: string): string | null {
  return CLIENT_CAPABILITY_OF.get(method) ?? CLIENT_CAPABILITY_OF.get(foldedOf(method)) ?? null;
}

/** Whether `capabilities` (what the client declared) declare `name`: an object under that key. */
export function declaresCapability(capabilities: unknown, name: string): boolean {
  if (typeof capabilities !== "object" || capabilities === null || Array.isArray(capabilities)) return false;
  if (!Object.hasOwn(capabilities, name)) return false;
  const v = (capabilities as Record<string, unknown>)[name];
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/** The client's notifications the gateway acts on: one spelled otherwise must not pass for them. */
const OWN_NOTIFICATIONS = new Set(["notifications/initialized", "notifications/cancelled"]);

/**
 * Whether a client's notification may be relayed to the server: a method under `notifications/`
 * (every notification of the protocol is), and not another spelling of one the gateway acts on
 * itself. A JSON-RPC server runs a notification's method as it would a request's, only without
 * an answer: a `tools/call` (or any guarded method, in any spelling) sent without an id would run
 * at a lenient server with no decision and no record; a `notifications/Cancelled` would cancel
 * there what the client's ids cannot name (the gateway's own requests).
 */
export function isRelayableNotification(method: string): boolean {
  if (!method.startsWith("notifications/")) return false;
  return OWN_NOTIFICATIONS.has(method) || !OWN_NOTIFICATIONS.has(foldedOf(method));
}

/** Methods every call of which the gateway decides or records: never to be reached by a look-alike. */
const GUARDED_METHODS = new Set([
  "tools/call",
  "tools/list",
  "resources/read",
  "resources/subscribe",
  "prompts/get",
  "completion/complete",
  "initialize",
  // decided when it asks for resource subscriptions (a look-alike would skip that)
  "subscriptions/listen",
]);

/**
 * The `resourceSubscriptions` of a subscriptions/listen (2026-07-28): the uris it asks to be told
 * of changes to, each decided as a resources/subscribe of it would be. Undefined when it asks for
 * none (absent, or an empty list: nothing to decide); anything else (not a list of strings) is
 * returned as is, for the gateway to refuse.
 */
export function listenResourceUris(msg: Request): unknown {
  const n = (isPlainObject(msg.params) ? msg.params.notifications : undefined) as
    | { resourceSubscriptions?: unknown }
    | undefined;
  const uris = isPlainObject(n) ? n.resourceSubscriptions : undefined;
  if (uris === undefined || (Array.isArray(uris) && uris.length === 0)) return undefined;
  return uris;
}

/**
 * The members the 2026-07-28 schema gives a subscriptions/listen's params (LISTEN_PARAMS) and its
 * `notifications` filter: the list_changed flags (booleans) and `resourceSubscriptions`, the uris
 * the guard decides. Any other member (`resourceSubscription`, a top-level `resourceSubscriptions`,
 * `uris` …) is no filter the protocol has, so nothing of it is decided; a lenient server that
 * takes uris from one would subscribe to resources no human approved.
 */
const LISTEN_PARAMS: ReadonlySet<string> = new Set(["_meta", "notifications"]);
const LISTEN_FILTER_FLAGS: ReadonlySet<string> = new Set([
  "toolsListChanged",
  "promptsListChanged",
  "resourcesListChanged",
]);

/**
 * A client's subscriptions/listen as it is decided and sent: jsonrpc, id, method and params only,
 * its params with only `_meta` (less the related-task key) and `notifications`, that filter with
 * only its boolean flags and `resourceSubscriptions` (kept as written: the guard decides it, or
 * refuses what is no list of uris); a `notifications` that is no object is left out whole.
 * `dropped` names what was left out. A listen whose params are no object keeps them as written
 * (none: relayed; anything else: refused by the guard, its uris cannot be read).
 */
export function listenWithKnownParams(msg: Request): { msg: Request; dropped: string[] } {
  if (!isPlainObject(msg.params)) return plainRequest(msg);
  const given = msg.params as Record<string, unknown>;
  const dropped: string[] = [];
  const params: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(given)) {
    if (!LISTEN_PARAMS.has(key)) dropped.push(key);
    else if (key !== "notifications") params[key] = value;
    else if (!isPlainObject(value)) dropped.push(key);
    else {
      const filter: Record<string, unknown> = {};
      for (const [name, v] of Object.entries(value)) {
        if (name === "resourceSubscriptions" || (LISTEN_FILTER_FLAGS.has(name) && typeof v === "boolean"))
          filter[name] = v;
        else dropped.push(`notifications.${name}`);
      }
      params.notifications = filter;
    }
  }
  const meta = withoutRelatedTask(params, dropped);
  const plain = plainRequest(msg, meta.params);
  return { msg: plain.msg, dropped: [...plain.dropped, ...meta.dropped] };
}

/** The 2026-07-28 listen filter keys for the lists the gateway does not list itself, with their notifications. */
const OTHER_LIST_FILTERS = [
  ["promptsListChanged", "notifications/prompts/list_changed"],
  ["resourcesListChanged", "notifications/resources/list_changed"],
] as const;

/**
 * The list_changed notifications of prompts and resources a server's acknowledgement of the
 * subscriptions/listen `listen` honours (its `notifications`, the filter the server agreed to) that
 * the listen asked for too: a type the server claims and the client never asked for is not one
 * (the client MUST NOT be sent types it did not ask for).
 */
export function honouredListChanges(ackParams: unknown, listen: Request): string[] {
  const honoured = isPlainObject(ackParams) ? ackParams.notifications : undefined;
  const asked = isPlainObject(listen.params) ? listen.params.notifications : undefined;
  if (!isPlainObject(honoured) || !isPlainObject(asked)) return [];
  return OTHER_LIST_FILTERS.filter(([key]) => honoured[key] === true && asked[key] === true).map(
    ([, method]) => method,
  );
}

/**
 * The gateway's own `_meta` key on a 2026-07-28 `notifications/subscriptions/acknowledged`: the
 * resource uris of the client's subscriptions/listen the guard refused, each with its refusal
 * (`{uri, error: {code, message, data}}`, the error the client would get for a resources/subscribe
 * of it). The listen went to the server without them, so the acknowledgement's honoured filter
 * lacks them too; this says why. A server's own value under the key is never relayed.
 */
export const REFUSED_SUBSCRIPTIONS_META = "portcullis/refusedSubscriptions";

/**
 * `msg`, a subscriptions/listen, as it goes to the server once the guard decided its resource
 * uris: its `resourceSubscriptions` with only the uris `allowed` (the key left out when none
 * remain), so that a uri refused, or never decided, cannot reach the server; null when what
 * remains asks for nothing (no uri, and no other notification type set to true), so that there
 * is no subscription left to open.
 */
export function listenWith(msg: Request, allowed: ReadonlySet<string>): Request | null {
  const params = (isPlainObject(msg.params) ? msg.params : {}) as Record<string, unknown>;
  const filter = (isPlainObject(params.notifications) ? params.notifications : {}) as Record<string, unknown>;
  const { resourceSubscriptions: uris, ...others } = filter;
  const kept = Array.isArray(uris) ? uris.filter((u) => allowed.has(u as string)) : [];
  if (kept.length === 0 && !Object.values(others).some((v) => v === true)) return null;
  const notifications = kept.length > 0 ? { ...others, resourceSubscriptions: kept } : others;
  return plainRequest(msg, withoutRelatedTask({ ...params, notifications }, []).params).msg;
}

/**
 * The params of a server's `notifications/subscriptions/acknowledged` as the client gets them:
 * whatever the server wrote under REFUSED_SUBSCRIPTIONS_META taken out (those words are the
 * gateway's), and, when the guard refused uris of the listen (`refused`), those uris taken out of
 * the honoured `resourceSubscriptions` (the server never got them: one that lists them anyway does
 * not make them honoured) and named under that key with their refusals.
 */
export function acknowledgedParams(
  params: Record<string, unknown> | undefined,
  refused: readonly { uri: string; error: unknown }[] | undefined,
): Record<string, unknown> {
  const given = isPlainObject(params) ? params : {};
  const { [REFUSED_SUBSCRIPTIONS_META]: _theirs, ...meta } = isPlainObject(given._meta) ? given._meta : {};
  if (!refused?.length) return { ...given, _meta: meta };
  const out: Record<string, unknown> = {
    ...given,
    _meta: { ...meta, [REFUSED_SUBSCRIPTIONS_META]: refused },
  };
  const honoured = isPlainObject(given.notifications) ? given.notifications : null;
  if (honoured && Array.isArray(honoured.resourceSubscriptions)) {
    const gone = new Set(refused.map((r) => r.uri));
    const kept = honoured.resourceSubscriptions.filter((u) => !gone.has(u as string));
    const { resourceSubscriptions: _all, ...others } = honoured;
    out.notifications = kept.length > 0 ? { ...others, resourceSubscriptions: kept } : others;
  }
  return out;
}

/** Whether the gateway decides or records every call of `method` (exactly as written). */
export function isGuardedMethod(method: string): boolean {
  return GUARDED_METHODS.has(method);
}

/**
 * True for a method name that is not byte-for-byte a guarded method but folds to one (case,
 * surrounding or inner whitespace, a trailing slash, other unicode forms): a lenient server
 * might dispatch it as that method, so the gateway refuses it instead of forwarding.
 */
export function isGuardedMethodVariant(method: string): boolean {
  if (GUARDED_METHODS.has(method)) return false;
  return GUARDED_METHODS.has(foldedOf(method));
}

/**
 * True for a method name that is not byte-for-byte `elicitation/create` but folds to it
 * (`Elicitation/Create`, `"elicitation/create "`, a zero-width space inside): the gateway reads a
 * server's elicitation before a human does (serverWords.ts, attributedElicitation) under that
 * exact name only, and a client that folds method names would show one so named unread.
 */
export function isElicitationVariant(method: unknown): boolean {
  return (
    typeof method === "string" && method !== "elicitation/create" && foldedOf(method) === "elicitation/create"
  );
}

/**
 * `method` folded (below). Asked for every request that is not guarded (ping and the like): the
 * folded text per method text is kept, for short names and a few at most (a peer sending many
 * names only empties the cache).
 */
function foldedOf(method: string): string {
  if (method.length > 128) return folded(method);
  let known = foldedCache.get(method);
  if (known === undefined) {
    known = folded(method);
    if (foldedCache.size >= 256) foldedCache.clear();
    foldedCache.set(method, known);
  }
  return known;
}

const foldedCache = new Map<string, string>();

/**
 * A method name as a lenient server might read it: compatibility forms, accents, case, whitespace,
 * invisible characters and slashes folded.
 * The client's method is as long as a message allows (64 MiB); a run is matched `\s\s*`, not
 * `\s+`, and trailing slashes are cut by a loop: compiled unoptimized (a long-lived process that
 * has compiled much regular-expression code), `\s+` keeps a backtracking entry per character and
 * threw RangeError on a method of `tools/call` and 8 MiB of blanks, which took the gateway down;
 * and `\/+$` is tried from every slash to the end, in any process, so 4 MiB of slashes and a
 * letter kept the gateway busy for hours (test/gateway/unoptimized-regex.test.ts).
 */
function folded(method: string): string {
  // NFKD and the marks dropped: accents (`tools/cáll`) as a slug or an ASCII fold takes them off;
  // upper case, then lower: the special case mappings a case-insensitive compare applies
  // (`tools/lıst` with a dotless ı, `ſ`) fold as they do there; every character a renderer
  // ignores (controls, format characters, the Default_Ignorable code points: the combining
  // grapheme joiner, variation selectors, Hangul fillers) dropped.
  const s = method
    .normalize("NFKD")
    .toUpperCase()
    .toLowerCase()
    .replace(/\s\s*/g, "")
    .replace(/[\p{Cc}\p{Cf}\p{M}\p{Default_Ignorable_Code_Point}]/gu, "");
  let end = s.length;
  while (end > 0 && s[end - 1] === "/") end--;
  return s.slice(0, end).replace(/\/\/*/g, "/");
}

/**
 * What a recorded read is approved for: its method and target (the uri of resources/read and
 * resources/subscribe, the prompt name of prompts/get, the ref of completion/complete). A target
 * of another shape (absent, not a string) is named by its canonical JSON (targetName).
 */
export function readFacts(msg: Request): ReadFacts {
  const params = (isPlainObject(msg.params) ? msg.params : {}) as Record<string, unknown>;
  let target: unknown;
  if (msg.method === "prompts/get") target = params.name;
  else if (msg.method === "completion/complete") {
    const ref = params.ref as { type?: unknown; name?: unknown; uri?: unknown } | undefined;
    if (ref?.type === "ref/prompt" && typeof ref.name === "string") target = `prompt ${ref.name}`;
    else if (ref?.type === "ref/resource" && typeof ref.uri === "string") target = `resource ${ref.uri}`;
    else target = { ref: ref ?? null };
  } else target = params.uri;
  const { _meta: _ignored, ...shown } = params;
  return {
    method: msg.method,
    target: typeof target === "string" ? target : targetName(target),
    params: shown,
  };
}

/**
 * A target that is no string, by its canonical JSON. One holding a number beyond the range of JSON
 * numbers has none; the guard refuses such a read before anything approves it, and this name
 * only says so in its refusal's record and the log.
 */
function targetName(target: unknown): string {
  if (nonFiniteAt(target) !== null) return "(a value holding a number beyond the range of JSON numbers)";
  return canonicalJson(target ?? null);
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
