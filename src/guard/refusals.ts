import { type ErrorObject, INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST } from "../relay/jsonrpc.js";
import { type AfterCrash, PAUSE_CAUSES } from "../supervisor/crashLoop.js";
import { cutText } from "../util/cut.js";

/**
 * Every refusal the gateway sends to a client, in one place. Each tells the agent
 * what to do next: `message` is one plain sentence; `data` always carries
 * `error`, `reason` and `retry`. Codes and fields are documented in
 * docs/refusals.md.
 */
export const REFUSAL_CODES = {
  authorization_required: -32050,
  authorization_stale: -32051,
  catalog_stale: -32052,
  identity_pending: -32053,
  epoch_transition: -32054,
  tool_not_in_catalog: -32055,
  vault_locked: -32056,
  approval_denied: -32057,
  approval_timeout: -32058,
  credential_missing: -32059,
} as const;

/**
 * The codes the gateway keeps for its refusals: the whole range -32050..-32059, those in use and
 * those a later version adds. A client may read any error with such a code as the gateway's
 * decision about its request, so no server's error reaches it with one (`serverError`).
 */
export const REFUSAL_RANGE = { first: -32059, last: -32050 } as const;

/** Whether `code` is in the range the gateway keeps for its refusals. */
export function inRefusalRange(code: number): boolean {
  return code >= REFUSAL_RANGE.first && code <= REFUSAL_RANGE.last;
}

/** Not decisions about a call, so outside the -3205x range: the JSON-RPC internal error code. */
export const UNAVAILABLE_CODES = {
  server_error: -32603,
  audit_unavailable: -32603,
  server_unavailable: -32603,
  shutting_down: -32603,
  upstream_http_error: -32603,
  upstream_response_unreadable: -32603,
  upstream_older_transport: -32603,
  catalog_unavailable: -32603,
  session_ended: -32603,
} as const;

/**
 * A message over the size limit, dropped unread: the standard JSON-RPC codes, -32600 for a
 * request (answered with its own id), -32603 for a response (its requester gets the error).
 */
export const TOO_LARGE_CODES = { request: INVALID_REQUEST, response: INTERNAL_ERROR } as const;

/** What an agent is told to do with an answer of the server's passed on as such (server_error). */
const SERVER_ERROR_RETRY =
  "read data.server as the server's own answer to this request: it is no refusal of portcullis's, and asks for no approval";

const RAISE_LIMIT = "raise --max-message-bytes or maxMessageBytes to allow it";

/** What an agent is told while supervision is paused, by the kind of pause (its reason's first words). */
const PAUSED_WORDS: [cause: string, message: string, retry: string][] = [
  [
    PAUSE_CAUSES.changing,
    "The server's files keep changing as it starts, so portcullis stopped restarting it; it starts it again at the next change of its files.",
    "ask a human to stop the server writing the files portcullis watches (or watch fewer), then save or rebuild it; once it runs again, list tools again and retry",
  ],
  [
    PAUSE_CAUSES.unstartable,
    "The server cannot be started; portcullis tries again when its files change.",
    "ask a human to fix the server and save or rebuild it; once it runs again, list tools again and retry",
  ],
  [
    PAUSE_CAUSES.crashing,
    "The server keeps crashing; portcullis starts it again when its files change.",
    "ask a human to fix the server and save or rebuild it; once it runs again, list tools again and retry",
  ],
];

/**
 * The refusal while supervision is paused (`paused`: why), worded by the fixed words of CrashLoop
 * it begins with: a server whose files keep changing as it starts never crashed, and is not told
 * it did. A pause of another kind gets words true of every pause.
 */
function pausedRefusal(paused: string): ErrorObject {
  const [, message, retry] = PAUSED_WORDS.find(([cause]) => paused.startsWith(cause)) ?? [
    "",
    "No server runs until its files change; portcullis starts it again then.",
    "ask a human to fix the server and save or rebuild it; once it runs again, list tools again and retry",
  ];
  return refusal("server_unavailable", message, paused, retry);
}

export type RefusalName = keyof typeof REFUSAL_CODES;

function refusal(
  error: RefusalName | keyof typeof UNAVAILABLE_CODES,
  message: string,
  reason: string,
  retry: string,
  extra: Record<string, unknown> = {},
): ErrorObject {
  const code =
    error in REFUSAL_CODES
      ? REFUSAL_CODES[error as RefusalName]
      : UNAVAILABLE_CODES[error as keyof typeof UNAVAILABLE_CODES];
  return withCode(code, error, message, reason, retry, extra);
}

function withCode(
  code: number,
  error: string,
  message: string,
  reason: string,
  retry: string,
  extra: Record<string, unknown> = {},
): ErrorObject {
  return { code, message, data: { error, reason, retry, ...extra } };
}

/** catalog_stale's message and reason for each way a tool differs from the client's last list. */
const STALE_WORDS = {
  added: {
    message: (tool: string) =>
      `The tool "${tool}" was added to the tool catalog since this client last listed it.`,
    reason: "not in the tools/list this client last received",
  },
  removed: {
    message: (tool: string) =>
      `The tool "${tool}" was removed from the tool catalog since this client last listed it.`,
    reason: "removed from the catalog since this client last listed",
  },
  changed: {
    message: (tool: string) => `The tool "${tool}" changed since this client last listed the tool catalog.`,
    reason: "its definition changed since this client last listed",
  },
} as const;

/**
 * Who ended a connection that a request was refused at the end of: the client (it closed its
 * input), the gateway (a signal, or its own end), or the client's session (an HTTP session
 * deleted, idle past its timeout, or whose server could not be started: `why` says which).
 */
export type EndedBy = "gateway" | "client" | "session";

const END_WORDS: Record<EndedBy, string> = {
  client:
    "The client closed its input before this request could be sent to the new server process; nothing was sent to the server.",
  gateway:
    "The gateway ended the connection before this request could be decided; nothing was sent to the server.",
  session: "The client's session ended before this request could be decided; nothing was sent to the server.",
};

export const refuse = {
  /**
   * The epoch's catalog was not known in time. `changed`: an epoch came before this one (a
   * restart, a replacement); the first epoch of a connection changed nothing.
   */
  identityPending: (currentEpoch: string | null, changed: boolean, why?: string | null) =>
    why
      ? refusal(
          "identity_pending",
          "The code behind the server's execution epoch is not known right now; nothing was sent to it.",
          why,
          "wait a moment, then list tools again and retry",
          { currentEpoch },
        )
      : refusal(
          "identity_pending",
          changed
            ? "The server's new execution epoch is not verified yet; its tool catalog is still being fetched."
            : "The server is not verified yet; its tool catalog is still being fetched.",
          changed
            ? "server execution epoch changed and its catalog is not known yet"
            : "the server's catalog is not known yet",
          "wait a moment, then list tools again and retry",
          { currentEpoch },
        ),

  /**
   * A request not held, because as many as the gateway holds for the catalog already wait
   * (`why` says how many, and their size): nothing was sent, safe to send again.
   */
  tooManyHeld: (currentEpoch: string | null, why: string) =>
    refusal(
      "identity_pending",
      "The server is not verified yet: its tool catalog is still being fetched, and as many requests as portcullis holds for it already wait; this one was not held, and nothing was sent.",
      why,
      "wait a moment, then list tools again and retry",
      { currentEpoch },
    ),

  /**
   * A request held (the epoch not verified, or its code not known for sure), or waiting for a new
   * process's replayed handshake, when the connection ended (`why`: the end's reason, e.g. the
   * server changed under onChange disconnect; `by` "client": the client closed its input, and no
   * new server process is brought into a session nobody speaks in any more). Nothing was sent:
   * safe to send again, on the new connection.
   */
  identityPendingAtEnd: (currentEpoch: string | null, why: string, by: EndedBy = "gateway") =>
    refusal("identity_pending", END_WORDS[by], why, "reconnect, list tools again, then retry", {
      currentEpoch,
    }),

  /**
   * The epoch's catalog could not be fetched (`catalogError`: why, as the gateway saw it; a
   * server's error message in it is cut short): its first fetch, or a re-list after the server's
   * list_changed (the revision served before is then not served either, the server said it is
   * outdated). A later list or call tries the fetch again, and so does the gateway on its own,
   * telling the client list_changed once the catalog is served.
   */
  catalogUnavailable: (currentEpoch: string | null, catalogError: string) =>
    refusal(
      "catalog_unavailable",
      "The server's tool catalog could not be fetched, so its tools can be neither listed nor called.",
      "the server's tools/list failed",
      "ask a human to fix the server (see catalogError); a later tools/list or call (from a second on) fetches the catalog again, and the gateway retries on its own and sends list_changed once it is served",
      { currentEpoch, catalogError },
    ),

  /**
   * `change`: how the client's last list and the current catalog differ for this tool: it is new
   * since (absent from the list), gone since (absent from the catalog), or defined otherwise.
   */
  catalogStale: (
    tool: string,
    seenRevision: number | null,
    currentRevision: number,
    change: "added" | "removed" | "changed" = "changed",
  ) =>
    refusal(
      "catalog_stale",
      STALE_WORDS[change].message(tool),
      STALE_WORDS[change].reason,
      "list tools again (tools/list), then rebuild the call from the current schema; " +
        "if the host never re-lists, a human can reconnect this server in the host",
      { tool, seenRevision, currentRevision },
    ),

  toolNotInCatalog: (tool: string, currentRevision: number) =>
    refusal(
      "tool_not_in_catalog",
      `The tool "${tool}" is not in the server's current tool catalog.`,
      "tool not in current catalog",
      "list tools again and use a tool from the current catalog",
      { tool, currentRevision },
    ),

  /**
   * A name the server lists more than once with definitions that differ (by fingerprint): not
   * served, so not in the catalog either, and refused as such, saying why. Which definition a
   * server runs is its own business; the human would approve (and the agent see) one while the
   * server may act on another, so no call goes out until the server lists the tool once.
   */
  toolAmbiguous: (
    tool: string,
    currentRevision: number,
    listed: number,
    definitions: number,
    /** entries of the name that cannot be fingerprinted (a number such as 1e400 in them): never served beside another */
    unfingerprintable = 0,
  ) =>
    refusal(
      "tool_not_in_catalog",
      unfingerprintable > 0
        ? `The server lists the tool "${tool}" ${listed} times, ${unfingerprintable} of them with a definition portcullis cannot fingerprint (a number beyond the double range, such as 1e400, or nesting too deep), so portcullis does not serve it: nobody can tell which definition the server would run.`
        : `The server lists the tool "${tool}" ${listed} times with ${definitions} different definitions, so portcullis does not serve it: nobody can tell which definition the server would run.`,
      "tool listed more than once with different definitions",
      `ask a human to fix the server so that it lists "${tool}" once (or its copies identically)${unfingerprintable > 0 ? ", with a definition portcullis can fingerprint" : ""}; it is served again once the server lists it so, and the change asks for approval again; meanwhile use another tool from the current catalog`,
      { tool, currentRevision, listed, definitions, ...(unfingerprintable > 0 ? { unfingerprintable } : {}) },
    ),

  epochTransition: (requestEpoch: string, currentEpoch: string | null) =>
    refusal(
      "epoch_transition",
      "The server process that received this call went away before answering; the call was not retried.",
      "server execution epoch changed while the call was in flight",
      "check whether the call took effect before repeating it; list tools again first",
      { requestEpoch, currentEpoch, retried: false },
    ),

  /**
   * A request that changes nothing (server/discover, ping, a list), held by a process that went
   * away before answering it: not retried (the client hears of the epoch change), but unlike a
   * call's there is nothing to check before sending it again.
   */
  readLost: (method: string, requestEpoch: string) =>
    refusal(
      "epoch_transition",
      `The server process that received this ${method} went away before answering; it was not retried.`,
      `server execution epoch changed while ${method} was in flight`,
      `send ${method} again: it changes nothing, and goes to the next server process`,
      { requestEpoch, currentEpoch: null, retried: false },
    ),

  /**
   * The client's initialize, held by a process (or a remote server's session) that went away
   * before answering it. The first one: nothing was negotiated, so the gateway has no handshake to
   * bring the next process to, and the client's own initialize, sent again, is that process's
   * handshake. One sent again after a handshake (`negotiated`): the next process is brought to
   * the handshake a server answered, and the client's initialize, sent again, goes to it after.
   * Either way the client is told to send it again, not the wording of a call (check whether it
   * took effect): an initialize did nothing a client could check.
   */
  initializeLost: (requestEpoch: string, negotiated = false) =>
    refusal(
      "epoch_transition",
      negotiated
        ? "The server went away before answering initialize (its process, or a remote server's session, ended: a new execution epoch begins); it was not retried, and what an earlier initialize negotiated stays the session's."
        : "The server went away before answering initialize (its process, or a remote server's session, ended: a new execution epoch begins); nothing was negotiated and it was not retried.",
      "server execution epoch changed while initialize was in flight",
      "send initialize again (it goes to the next server process, and waits for it if none is up yet), then notifications/initialized",
      { requestEpoch, currentEpoch: null, retried: false },
    ),

  /**
   * A server reached by URL answered a call with the status of a session it no longer knows (404,
   * or a 400 saying so): it did not run the call. The session is over, so is the epoch.
   */
  sessionEnded: (requestEpoch: string, status: number) =>
    refusal(
      "epoch_transition",
      "The remote server no longer knew the session this call was sent on, so it did not run the call; portcullis opens a new session (a new execution epoch) and did not retry it.",
      `the upstream session ended (HTTP ${status}); the call was not run`,
      "list tools again, then send the call again (it was not run; it may need a new approval)",
      { requestEpoch, currentEpoch: null, retried: false },
    ),

  authorizationStale: (fields: {
    approvedEpoch: string;
    currentEpoch: string;
    changedTools: string[];
    seenRevision?: number | null;
    currentRevision?: number;
    reason?: string;
  }) => {
    const { reason, ...rest } = fields;
    return refusal(
      "authorization_stale",
      reason === "tool authority expanded"
        ? "The tool changed in a way that expands its authority since this run was approved."
        : "Server execution epoch changed since this run was approved.",
      reason ?? "server execution epoch changed",
      "refresh tool metadata and request authorization",
      rest,
    );
  },

  authorizationRequired: (approvalRequest: string, howToApprove: string) =>
    refusal(
      "authorization_required",
      "This call needs a human approval that has not been given.",
      "no grant covers this call",
      "ask a human to approve the request, then retry",
      { approvalRequest, howToApprove },
    ),

  /**
   * A call still waiting for a human when its connection ends (the client closed its input, a
   * signal, the gateway ending it): the request closes with the run, so neither approving it nor
   * retrying on this connection can help; a call made again after reconnecting asks anew.
   */
  connectionEndsBeforeApproval: (approvalRequest: string) =>
    refusal(
      "authorization_required",
      "This call needs a human approval, and the connection ends before one was given.",
      "the connection ends: its approval request closes with the agent run",
      "reconnect, then retry: the call asks a human again",
      {
        approvalRequest,
        howToApprove:
          "reconnect and call again: this request closes with the ended run and cannot be approved",
      },
    ),

  /**
   * A call a human approved for one call, whose gateway was still taking that one-call grant (the
   * store locked by another process) when its connection ended: the call is not sent, and the
   * grant, left untaken, ends with the run; a call made again after reconnecting asks anew.
   */
  oneCallApprovalNotTaken: (approvalRequest: string) =>
    refusal(
      "authorization_required",
      "A human approved this call, but the connection ends before portcullis could take the one-call approval for it (another process kept the store locked), so the call was not sent.",
      "the connection ends: the one-call approval was not taken for this call",
      "reconnect, then retry: the call asks a human again",
      {
        approvalRequest,
        howToApprove:
          "reconnect and call again: this one-call approval belongs to the ended run and cannot be used by another",
      },
    ),

  /**
   * The run has `max` approval requests waiting for a human already: no new one is made until
   * some are decided or expire (`howToApprove`: the command that lists them).
   */
  tooManyPending: (max: number, howToApprove: string) =>
    refusal(
      "authorization_required",
      `This call needs a human approval, and ${max} approval requests of this agent run already wait for a human; no new one is made until some are decided or expire.`,
      `${max} approval requests of this run pending`,
      "ask a human to decide the pending requests, then retry",
      { howToApprove },
    ),

  /** The gateway's agent run was ended by another process: no approval can reach this gateway. */
  /** `approvalRequest` null: the gateway knew the run ended before making a request */
  runEnded: (approvalRequest: string | null) =>
    refusal(
      "authorization_required",
      "This call needs a human approval, and none can reach this gateway: its agent run was ended by another process.",
      "agent run ended",
      "ask a human to restart the agent host (a new agent run), then retry",
      {
        ...(approvalRequest === null ? {} : { approvalRequest }),
        howToApprove: "restart the agent host: the ended run can no longer be approved",
      },
    ),

  /** `retry`: the next step when an unlock alone is not enough (environment credentials) */
  vaultLocked: (scopes: string[], retry = "ask a human to run 'portcullis unlock', then retry") =>
    refusal("vault_locked", "This tool needs credentials and the vault is locked.", "vault locked", retry, {
      scopes,
    }),

  /**
   * A server reached by URL whose connection needs a header secret the vault cannot release now
   * (locked): no tool is involved, the client's initialize is refused too. `unlock`: the command.
   */
  headerVaultLocked: (scope: string, unlock: string) =>
    refusal(
      "vault_locked",
      `The connection to this server needs the credential "${scope}" (a header) and the vault is locked.`,
      "vault locked",
      `ask a human to run ${unlock}, then retry`,
      { scopes: [scope] },
    ),

  /** The same, when the vault holds no secret it may send to this server's host. */
  headerCredentialMissing: (scope: string, why: string) =>
    refusal(
      "credential_missing",
      `The connection to this server needs the credential "${scope}" (a header), which the vault cannot release: ${why}.`,
      why,
      "ask a human to store the secret as the reason says, then retry",
      { scope },
    ),

  /** `retry`: the exact fix when the vault holds the secret but not as the configuration asks */
  credentialMissing: (scope: string, why = "no secret by that name in the vault", retry?: string) =>
    refusal(
      "credential_missing",
      `This tool needs the credential "${scope}", which the vault cannot release: ${why}.`,
      why,
      retry ?? `ask a human to run 'portcullis vault set ${scope}' and 'portcullis unlock', then retry`,
      { scope },
    ),

  approvalDenied: (approvalRequest: string, why?: string) =>
    refusal(
      "approval_denied",
      "A human denied this call.",
      why ? `denied: ${why}` : "denied by a human",
      "do not retry this call; ask the human what to do instead",
      { approvalRequest },
    ),

  /**
   * The call's hold ended before a human decided. The request itself stays pending until
   * `pendingUntil` (null: it has expired); `console` is its page in the running console.
   */
  approvalTimeout: (
    approvalRequest: string,
    pending: { pendingUntil: string | null; minutesLeft: number; console?: string | null } = {
      pendingUntil: null,
      minutesLeft: 0,
    },
    /** ` --state-dir DIR` when the gateway's state directory is not the default (stateDirFlagFor) */
    stateDirFlag = "",
  ) => {
    // The command last, after a colon and in no quotes of the sentence's own: it pastes as a
    // whole, whatever quoting an unusual state directory's path needs (stateDirFlagFor).
    const where = `${pending.console ? ` at ${pending.console} or` : ""} in a terminal with: portcullis approve ${approvalRequest}${stateDirFlag}`;
    return refusal(
      "approval_timeout",
      pending.pendingUntil
        ? "Nobody has approved this call yet; its approval request stays pending."
        : "Nobody approved this call in time; its approval request expired.",
      pending.pendingUntil ? "approval still pending when the call's wait ended" : "approval request expired",
      pending.pendingUntil
        ? `the request stays pending for ${pending.minutesLeft} more minute${pending.minutesLeft === 1 ? "" : "s"}: ask a human to approve it, then retry this same call; once approved it proceeds at once. The human approves it${where}`
        : "retry the call to ask a human again (a new approval request)",
      {
        approvalRequest,
        pendingUntil: pending.pendingUntil,
        ...(pending.console ? { console: pending.console } : {}),
      },
    );
  },

  /**
   * The call's hold ended and its approval request was decided, but with no decision this call
   * could use (one that did not verify): not an expiry, and a retry asks a human again.
   */
  approvalUnusable: (approvalRequest: string) =>
    refusal(
      "approval_timeout",
      "No decision this call could use arrived in time: the one recorded on its approval request did not verify.",
      "approval request decided, but the decision did not verify",
      "retry the call to ask a human again (a new approval request)",
      { approvalRequest, pendingUntil: null },
    ),

  auditUnavailable: (reason: string) =>
    refusal(
      "audit_unavailable",
      "The audit log could not record this call, so it was not forwarded.",
      reason,
      "ask a human to check the audit log",
    ),

  /**
   * No server process is alive. `paused`: why supervision waits for a change of the server's
   * files (a crash loop, a server whose files keep changing as it starts, one that cannot be
   * started): waiting a moment does not help then, and the message says which it is.
   */
  serverUnavailable: (paused?: string | null) =>
    paused
      ? pausedRefusal(paused)
      : refusal(
          "server_unavailable",
          "The server is not running right now; retry in a moment.",
          "no live server process",
          "wait a moment and retry",
        ),

  /**
   * The launched server's process still runs, but its input pipe is closed (it closed its stdin,
   * or the pipe broke): nothing can be sent to it, and this request was not. The supervisor gives
   * such a process a moment to exit, then stops it as after a crash; `next` says what that crash
   * does (CrashLoop.afterNextCrash): the server is started again, or, the crash-loop limit
   * reached, supervision pauses until the server's files change, or ends with the gateway. Not
   * "not running": the process is there, it just cannot take input. It said "starts the server
   * again" at the limit too, where nothing would start it.
   */
  serverInputClosed: (next: AfterCrash = { does: "respawn" }) => {
    const closed =
      "The server process is running, but its input pipe is closed, so this request could not be sent to it";
    const reason = "the server process's stdin is closed while the process still runs";
    if (next.does === "respawn")
      return refusal(
        "server_unavailable",
        `${closed}; portcullis stops that process and starts the server again, as after a crash.`,
        reason,
        "wait a moment and retry (a subscriptions/listen: open it again); if it keeps happening, ask a human to check why the server closes its input",
      );
    // this stop counted with the crashes before it: the count that reaches the limit
    const stops = next.crashes + 1;
    const loop = `${stops} stop${stops === 1 ? "" : "s"} within ${next.windowSeconds} s, the crash-loop limit`;
    if (next.does === "pause")
      return refusal(
        "server_unavailable",
        `${closed}; portcullis stops that process, as after a crash, and since that makes ${loop}, it does not start the server again until its files change.`,
        `${reason}; stopping it makes ${loop}: supervision pauses until the server's files change`,
        "ask a human to check why the server closes its input, fix it and rebuild it (portcullis starts it again at the next change of its files); then list tools again and retry",
      );
    return refusal(
      "server_unavailable",
      `${closed}; portcullis stops that process, as after a crash, and since that makes ${loop}, supervision ends and this gateway with it: nothing starts the server again.`,
      `${reason}; stopping it makes ${loop}: supervision ends`,
      "ask a human to check why the server closes its input and fix it, then restart the MCP client",
    );
  },

  /**
   * A server reached by URL cannot be reached now (`why`: the URL and the error, as the link
   * last saw it); the link keeps trying and opens a new session, a new epoch, once it answers.
   */
  serverUnreachable: (why: string) =>
    refusal(
      "server_unavailable",
      "The remote server cannot be reached right now; portcullis keeps trying and opens a new session when it answers.",
      why,
      "wait a moment, then list tools again and retry; if it lasts, ask a human to check the remote server",
    ),

  /**
   * The launched server reads none of its input (`why`: how much waits for it): a request is not
   * queued behind what it does not read.
   */
  serverNotReading: (why: string) =>
    refusal(
      "server_unavailable",
      "The server is not reading the requests sent to it; this one was not sent.",
      why,
      "wait a moment and retry; if it lasts, ask a human to check the server (it may be stuck) and restart it",
    ),

  /**
   * server_unavailable for a request past the bound of the client's requests at one server
   * unanswered (`why` says how many wait): the server reads them but answers none, so each new
   * one would only hold more of the gateway's memory.
   */
  serverNotAnswering: (why: string) =>
    refusal(
      "server_unavailable",
      "The server has not answered the requests already sent to it; this one was not sent.",
      why,
      "wait for the requests already sent to end (or cancel them) and retry; if they never end, ask a human to check the server (it may be stuck) and restart it",
    ),

  /**
   * server_unavailable for a link that serves no server now: supervision paused (no server runs
   * until its files change), or a remote server that cannot be reached; null when neither.
   */
  serverDown: (link: { paused?: string | null; unreachable?: string | null }): ErrorObject | null =>
    link.paused
      ? pausedRefusal(link.paused)
      : link.unreachable
        ? refuse.serverUnreachable(link.unreachable)
        : null,

  /**
   * A server reached by URL answered a request with a redirect (`location`: where to, without
   * query; null when it did not say). Not followed: see remoteSession.ts.
   */
  upstreamRedirect: (status: number, location: string | null) =>
    refusal(
      "upstream_http_error",
      `The remote server redirects its URL elsewhere (HTTP ${status}${location ? ` to ${location}` : ""}); portcullis does not follow redirects, so the request was not sent there.`,
      `HTTP ${status} redirect from the remote server`,
      "ask a human to update the server's configured URL to its new location (and check it is the same server)",
      { status, location },
    ),

  /**
   * A server reached by URL answered in a way that cannot be used (`why`: its headers over
   * node's limit, a character no header may hold, a session id that cannot be sent back): the
   * request gets this, the epoch stays, and nothing is retried, since the same request would get
   * the same answer. Nothing the server wrote is quoted but a header's name.
   */
  upstreamUnreadable: (why: string) =>
    refusal(
      "upstream_response_unreadable",
      `The remote server's answer could not be used: ${why}.`,
      "unusable HTTP answer from the remote server",
      "ask a human to fix the remote server (sending the request again gets the same answer)",
    ),

  /**
   * A server reached by URL speaks the older HTTP+SSE transport (MCP 2024-11-05), and its stream
   * named an endpoint that is not used (`why`: another origin than the URL's, user credentials,
   * not a URL). Nothing the server's stream said is quoted.
   */
  upstreamOlderTransport: (status: number, url: string, why: string) =>
    refusal(
      "upstream_older_transport",
      `The remote server at ${url} speaks the older HTTP+SSE transport (MCP 2024-11-05), and portcullis will not use it: ${why}.`,
      "the remote server's older HTTP+SSE endpoint is refused",
      "ask a human to check the server (its message endpoint must be on the configured URL's own origin), or to configure its Streamable HTTP URL if it has one; sending again will not help",
      { status },
    ),

  /**
   * A request's POST answered 202 Accepted (MCP keeps that for notifications and answers) with no
   * server-to-client stream open to answer it later: the server may have run it.
   */
  upstreamAcceptedUnanswered: (method: string) =>
    refusal(
      "upstream_http_error",
      `The remote server answered ${method} with HTTP 202 Accepted and no response, and has no stream open to send one later; whether it acted on it is unknown.`,
      "HTTP 202 from the remote server for a request (MCP: a request is answered with JSON or an SSE stream)",
      "check whether it took effect before sending it again, and ask a human to check the remote server",
      { status: 202 },
    ),

  /** A server reached by URL answered a request with an HTTP status and no JSON-RPC response. */
  upstreamHttpError: (status: number) =>
    refusal(
      "upstream_http_error",
      `The remote server answered HTTP ${status} without a JSON-RPC response.`,
      `HTTP ${status} from the remote server`,
      "retry later, or ask a human to check the remote server",
      { status },
    ),

  /**
   * A request over the message size limit (the client's to the server, or the server's to the
   * client), answered with its own id. `fate` says what became of it, as the message tells.
   */
  /**
   * A legacy-era client asked for tools or a guarded read before sending `initialize`: nothing
   * is fetched or decided before the handshake, so waiting would not help (MCP: a client sends
   * nothing but pings before the server answered its initialize).
   */
  notInitialized: (method: string, lost = false) =>
    lost
      ? // the client did send initialize, but no server answered it (its process went away holding
        // it, and the client was answered epoch_transition): "no initialize yet" would be wrong
        withCode(
          INVALID_REQUEST,
          "not_initialized",
          `The client's initialize was lost to an epoch change (the server went away before answering it, and it was answered epoch_transition), so nothing was negotiated; the client must send initialize again (and notifications/initialized) before ${method}; this request was not handled.`,
          "the client's initialize was lost with its server process (answered epoch_transition) and it has not sent initialize again",
          "send initialize again, wait for its answer, send notifications/initialized, then send the request again",
        )
      : withCode(
          INVALID_REQUEST,
          "not_initialized",
          `The client must send initialize (and notifications/initialized) before ${method}; this request was not handled.`,
          "no initialize from this client yet",
          "send initialize, wait for its answer, send notifications/initialized, then send the request again",
        ),

  /**
   * A legacy client's request held past the hold timeout after its initialize was answered, when
   * it never sent notifications/initialized: the gateway fetches the catalog only after it (MCP: a
   * server's side asks nothing before), so "still being fetched" would send it waiting again.
   */
  initializedNotSent: (method: string) =>
    withCode(
      INVALID_REQUEST,
      "not_initialized",
      `The client has not sent notifications/initialized since its initialize was answered, and the server's tool catalog is fetched only after it; ${method} was held until the hold timeout and not handled.`,
      "no notifications/initialized from this client after its initialize was answered",
      "send notifications/initialized, then send the request again",
    ),

  requestTooLarge: (bytes: number, fate: "not forwarded" | "dropped") =>
    withCode(
      TOO_LARGE_CODES.request,
      "message_too_large",
      fate === "not forwarded"
        ? `Request of ${bytes} bytes exceeds the message size limit (${RAISE_LIMIT}); it was not forwarded.`
        : `Request of ${bytes} bytes exceeds the message size limit; it was dropped (${RAISE_LIMIT}).`,
      "request over the message size limit",
      "send a smaller request, or ask a human to raise the limit (--max-message-bytes or maxMessageBytes)",
      { bytes },
    ),

  /**
   * A response over the message size limit, dropped: its requester gets this instead (the
   * client for the server's response, the server for the client's answer).
   */
  responseTooLarge: (bytes: number, from: "server" | "client") =>
    withCode(
      TOO_LARGE_CODES.response,
      "message_too_large",
      from === "server"
        ? `The server's response of ${bytes} bytes exceeds the message size limit; it was dropped (${RAISE_LIMIT}).`
        : `The client's answer of ${bytes} bytes exceeds the message size limit (${RAISE_LIMIT}).`,
      "response over the message size limit",
      "ask for less at a time, or ask a human to raise the limit (--max-message-bytes or maxMessageBytes)",
      { bytes },
    ),

  /**
   * A request nested deeper than MAX_MESSAGE_DEPTH, dropped: answered with its own id (the
   * client's never forwarded; the server's answered to the server). Codes as for the size limit.
   */
  requestTooDeep: (limit: number, fate: "not forwarded" | "dropped") =>
    withCode(
      TOO_LARGE_CODES.request,
      "message_too_deep",
      `Request nested deeper than ${limit} levels of arrays and objects; it was ${fate}.`,
      "request nested deeper than the gateway reads",
      `send the data flatter (at most ${limit} levels), e.g. as a JSON string`,
      { limit },
    ),

  /**
   * A response nested deeper than MAX_MESSAGE_DEPTH, dropped: its requester gets this instead
   * (the client for the server's response, the server for the client's answer).
   */
  responseTooDeep: (limit: number, from: "server" | "client") =>
    withCode(
      TOO_LARGE_CODES.response,
      "message_too_deep",
      from === "server"
        ? `The server's response is nested deeper than ${limit} levels of arrays and objects; it was dropped.`
        : `The client's answer is nested deeper than ${limit} levels of arrays and objects; it was dropped.`,
      "response nested deeper than the gateway reads",
      from === "server"
        ? "ask for less nested data; the server's output has to change for this call to succeed"
        : "answer with flatter data",
      { limit },
    ),

  /**
   * A server reached by URL answered initialize with a protocolVersion the gateway cannot send
   * back (it goes in the MCP-Protocol-Version header of every later request): the answer is
   * dropped, and its requester gets this. `why` says what is wrong; the value is not quoted.
   */
  upstreamVersionInvalid: (why: string) =>
    withCode(
      INTERNAL_ERROR,
      "response_invalid",
      `The remote server answered initialize with a protocolVersion that is not a version (${why}); the answer was dropped.`,
      `protocolVersion ${why}`,
      "ask a human to check the remote server; it has to answer initialize with a protocol version",
    ),

  /**
   * A response that is not valid JSON-RPC (`reason`: what is wrong with it, as the gateway read
   * it), dropped: its requester gets this instead under its own id (the client for the server's
   * response, the server for the client's answer). Nothing of the response's own text is quoted.
   */
  responseInvalid: (reason: string, from: "server" | "client") =>
    withCode(
      INTERNAL_ERROR,
      "response_invalid",
      from === "server"
        ? `The server's response is not valid JSON-RPC (${reason}); it was dropped.`
        : `The client's answer is not valid JSON-RPC (${reason}); it was dropped.`,
      reason,
      from === "server"
        ? "check whether the request took effect before repeating it; the server has to be fixed to answer it"
        : "answer with a well-formed JSON-RPC response",
    ),

  /**
   * A guarded read whose params hold a number beyond the range of JSON numbers (`1e400` reads as
   * Infinity) at `field`: it has no canonical form, so it can be neither approved nor recorded,
   * and is not forwarded. Invalid params, as JSON-RPC names them. (A tools/call with such
   * arguments gets the invalid-arguments result instead, as any argument that does not validate.)
   */
  numberOutOfRange: (field: string, value: number) =>
    withCode(
      INVALID_PARAMS,
      "number_out_of_range",
      `${field === "" ? "The request's params are" : `The request's params.${field} is`} a number beyond the range of JSON numbers (it reads as ${value}), which the gateway can neither check nor record; the request was not forwarded.`,
      "a number beyond the range of JSON numbers",
      "send the number within range, or as a string",
      { field },
    ),

  /**
   * A guarded read whose target (the resource uri, the prompt's name, the completion's reference)
   * holds a lone UTF-16 surrogate: legal JSON text, but no Unicode string. The store keeps a read's
   * approval request by its target as UTF-8 text, where such a target becomes U+FFFD (and two of
   * them one target), so it could be neither approved as written nor told apart from another: it
   * is refused before either, and not forwarded.
   */
  targetNotWellFormed: (method: string) =>
    withCode(
      INVALID_PARAMS,
      "target_not_well_formed",
      `The ${method} request's target holds a lone UTF-16 surrogate (it is not well-formed Unicode), which the gateway can neither approve nor record as written; the request was not forwarded.`,
      "a lone surrogate in the request's target",
      "send the target as well-formed Unicode",
    ),

  /**
   * The server answered a request of the client's with an error that could be read as one of the
   * gateway's own (`why`): a code in the refusal range, or `data` with an `error` member, which
   * names the gateway's errors in and out of that range. A server's words never decide what the
   * agent or its human take the gateway to have said (an `authorization_required` whose
   * `howToApprove` points at a page of the server's), so its error is passed on whole, under
   * `data.server`, inside this one of the gateway's that says whose it is. The code stays the
   * server's when it is outside the range (a -32602 is still invalid params), else -32603.
   */
  serverError: (server: ErrorObject, why: string) =>
    withCode(
      inRefusalRange(server.code) ? UNAVAILABLE_CODES.server_error : server.code,
      "server_error",
      `The server answered with an error of its own, not portcullis's: ${JSON.stringify(cutText(server.message, 200))} (passed on in data.server; portcullis did not refuse this request).`,
      `the server's error ${why}, so it is passed on under data.server`,
      SERVER_ERROR_RETRY,
      {
        server: {
          code: server.code,
          message: server.message,
          ...("data" in server ? { data: server.data } : {}),
        },
      },
    ),

  /**
   * The server answered a request of the client's with a result that carries the marks of the
   * gateway's own (`why`): an `input_required` under the key or `requestState` the gateway's
   * approval requests use, which would send the human to a page of the server's as if to approve
   * the call. Not a result the client may act on: the same error, the result under data.server.
   */
  serverResult: (result: unknown, why: string) =>
    withCode(
      UNAVAILABLE_CODES.server_error,
      "server_error",
      "The server answered with a result that imitates an approval request of portcullis's; it is the server's, passed on in data.server, and approves nothing.",
      `the server's result ${why}, so it is passed on under data.server`,
      SERVER_ERROR_RETRY,
      { server: { result } },
    ),

  /**
   * A request of a `run --listen` client still open when its HTTP session ended (the client's
   * DELETE, the idle timeout, the gateway's shutdown): answered, never left hanging, and shaped as
   * every other refusal so that an agent finds its reason and what to do.
   */
  httpSessionEnded: () =>
    refusal(
      "session_ended",
      "The HTTP session ended before this request was answered.",
      "the HTTP session ended (the client deleted it, it was idle past the timeout, or the gateway is shutting down)",
      "check whether the request took effect before sending it again in a new session (initialize first)",
    ),

  /** The client closed its input and this request was not answered before the server is shut down. */
  shuttingDown: () =>
    refusal(
      "shutting_down",
      "The client closed its input and the server is shutting down; this request was not answered in time.",
      "client closed its input; server shutting down",
      "check whether the request took effect before sending it again on a new connection",
    ),
};
