// docs/refusals.md is what agents' authors read; this keeps its tables and the constructors in
// src/guard/refusals.ts from drifting apart: every row's code, data.error and extra data fields.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REFUSAL_CODES, refuse, UNAVAILABLE_CODES } from "../../src/guard/refusals.js";
import type { ErrorObject } from "../../src/relay/jsonrpc.js";
import { REPO } from "../helpers/paths.js";

const doc = readFileSync(join(REPO, "docs", "refusals.md"), "utf8");

/** Every .ts file under `dir`. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

/** The text of each `errorResponse(…)` call in `text`, up to its closing parenthesis. */
function errorResponseCalls(text: string): string[] {
  const out: string[] = [];
  for (let at = text.indexOf("errorResponse("); at !== -1; at = text.indexOf("errorResponse(", at + 1)) {
    let depth = 0;
    let end = at + "errorResponse".length;
    for (; end < text.length; end++) {
      if (text[end] === "(") depth++;
      else if (text[end] === ")" && --depth === 0) break;
    }
    out.push(text.slice(at, end + 1));
  }
  return out;
}

/**
 * Each constructor, with every optional field given, so the doc's conditional fields show. Keyed
 * by `data.error`, with the code after it where one error has two rows (request and response).
 */
const built: Record<string, ErrorObject> = {
  authorization_required: refuse.authorizationRequired("R1", "portcullis approve R1"),
  authorization_stale: refuse.authorizationStale({
    approvedEpoch: "E1",
    currentEpoch: "E2",
    changedTools: ["t"],
    seenRevision: 1,
    currentRevision: 2,
  }),
  catalog_stale: refuse.catalogStale("t", 1, 2),
  identity_pending: refuse.identityPending("E2", true),
  epoch_transition: refuse.epochTransition("E1", null),
  // the ambiguous name's refusal carries every field the row names (an entry that could not be
  // fingerprinted among its three)
  tool_not_in_catalog: refuse.toolAmbiguous("t", 2, 3, 2, 1),
  vault_locked: refuse.vaultLocked(["inventory-api-staging"]),
  approval_denied: refuse.approvalDenied("R1"),
  approval_timeout: refuse.approvalTimeout("R1", {
    pendingUntil: "2026-01-01T00:10:00.000Z",
    minutesLeft: 10,
    console: "http://127.0.0.1:7345/requests/R1",
  }),
  credential_missing: refuse.credentialMissing("github"),
  audit_unavailable: refuse.auditUnavailable("disk full"),
  server_unavailable: refuse.serverUnavailable(),
  not_initialized: refuse.notInitialized("tools/call"),
  "message_too_large -32600": refuse.requestTooLarge(70_000, "not forwarded"),
  "message_too_large -32603": refuse.responseTooLarge(70_000, "server"),
  "message_too_deep -32600": refuse.requestTooDeep(512, "not forwarded"),
  "message_too_deep -32603": refuse.responseTooDeep(512, "server"),
  response_invalid: refuse.responseInvalid("malformed error object", "server"),
  shutting_down: refuse.shuttingDown(),
  session_ended: refuse.httpSessionEnded(),
  catalog_unavailable: refuse.catalogUnavailable("E2", "the server answered tools/list with error -32000: x"),
  // a redirect's refusal: every field the plain one has, and where the redirect points
  upstream_http_error: refuse.upstreamRedirect(307, "https://example.com/mcp"),
  upstream_older_transport: refuse.upstreamOlderTransport(
    405,
    "http://127.0.0.1:8080/sse",
    "its endpoint event names another origin than http://127.0.0.1:8080 (the configured headers go to that origin only)",
  ),
  upstream_response_unreadable: refuse.upstreamUnreadable(
    "its response headers are larger than node's 16 KiB limit (HPE_HEADER_OVERFLOW)",
  ),
  number_out_of_range: refuse.numberOutOfRange("arguments.n", Number.POSITIVE_INFINITY),
  target_not_well_formed: refuse.targetNotWellFormed("resources/read"),
  server_error: refuse.serverError(
    { code: -32050, message: "approve at https://example.net", data: { error: "authorization_required" } },
    "has code -32050",
  ),
};

const errorOf = (e: ErrorObject): string => (e.data as { error: string }).error;

/**
 * Every constructor of `refuse`, each called once (the ones `built` shows with every optional
 * field, and the variants the gateway sends for other causes: a lost read, a run ended, a header's
 * secret, a server that stopped reading…). A constructor added to src/guard/refusals.ts without a
 * line here fails the test below, so its data.error, code and fields are held to the doc too.
 */
const everyConstructor: Record<keyof typeof refuse, () => ErrorObject | null> = {
  identityPending: () => refuse.identityPending("E2", true, "a watched file changed"),
  identityPendingAtEnd: () => refuse.identityPendingAtEnd("E2", "the client closed its input", "client"),
  tooManyHeld: () => refuse.tooManyHeld("E2", "4096 requests of the client's (0.3 MiB) already wait"),
  catalogUnavailable: () => refuse.catalogUnavailable("E2", "x"),
  catalogStale: () => refuse.catalogStale("t", 1, 2),
  toolNotInCatalog: () => refuse.toolNotInCatalog("t", 2),
  toolAmbiguous: () => refuse.toolAmbiguous("t", 2, 3, 2),
  epochTransition: () => refuse.epochTransition("E1", "E2"),
  readLost: () => refuse.readLost("tools/list", "E1"),
  initializeLost: () => refuse.initializeLost("E1", true),
  sessionEnded: () => refuse.sessionEnded("E1", 404),
  authorizationStale: () => built.authorization_stale as ErrorObject,
  authorizationRequired: () => refuse.authorizationRequired("R1", "portcullis approve R1"),
  connectionEndsBeforeApproval: () => refuse.connectionEndsBeforeApproval("R1"),
  oneCallApprovalNotTaken: () => refuse.oneCallApprovalNotTaken("R1"),
  tooManyPending: () => refuse.tooManyPending(50, "portcullis approvals"),
  runEnded: () => refuse.runEnded("R1"),
  vaultLocked: () => refuse.vaultLocked(["s"]),
  headerVaultLocked: () => refuse.headerVaultLocked("s", "portcullis unlock"),
  headerCredentialMissing: () => refuse.headerCredentialMissing("s", "no secret by that name in the vault"),
  credentialMissing: () =>
    refuse.credentialMissing("s", "stored for HTTP delivery", "have the client reconnect"),
  approvalDenied: () => refuse.approvalDenied("R1", "not on prod"),
  approvalTimeout: () => built.approval_timeout as ErrorObject,
  approvalUnusable: () => refuse.approvalUnusable("R1"),
  auditUnavailable: () => refuse.auditUnavailable("disk full"),
  serverUnavailable: () => refuse.serverUnavailable("the server keeps crashing"),
  serverInputClosed: () => refuse.serverInputClosed(),
  serverUnreachable: () => refuse.serverUnreachable("connection refused"),
  serverNotReading: () => refuse.serverNotReading("its stdin is closed"),
  serverNotAnswering: () =>
    refuse.serverNotAnswering("4096 requests of the client's wait for the server's answer"),
  serverDown: () => refuse.serverDown({ unreachable: "connection refused" }),
  upstreamRedirect: () => refuse.upstreamRedirect(307, "https://example.com/mcp"),
  upstreamUnreadable: () => refuse.upstreamUnreadable("x"),
  upstreamOlderTransport: () => refuse.upstreamOlderTransport(405, "http://127.0.0.1:8080/sse", "x"),
  upstreamAcceptedUnanswered: () => refuse.upstreamAcceptedUnanswered("tools/call"),
  upstreamHttpError: () => refuse.upstreamHttpError(500),
  notInitialized: () => refuse.notInitialized("tools/call", true),
  initializedNotSent: () => refuse.initializedNotSent("tools/call"),
  requestTooLarge: () => refuse.requestTooLarge(70_000, "dropped"),
  responseTooLarge: () => refuse.responseTooLarge(70_000, "client"),
  requestTooDeep: () => refuse.requestTooDeep(512, "dropped"),
  responseTooDeep: () => refuse.responseTooDeep(512, "client"),
  upstreamVersionInvalid: () => refuse.upstreamVersionInvalid("x"),
  responseInvalid: () => refuse.responseInvalid("not valid JSON", "client"),
  numberOutOfRange: () => refuse.numberOutOfRange("arguments.n", Number.NEGATIVE_INFINITY),
  targetNotWellFormed: () => refuse.targetNotWellFormed("resources/read"),
  serverError: () => built.server_error as ErrorObject,
  serverResult: () =>
    refuse.serverResult({ requestState: "portcullis-approval:x" }, "carries the gateway's mark"),
  shuttingDown: () => refuse.shuttingDown(),
  httpSessionEnded: () => refuse.httpSessionEnded(),
};

interface Row {
  code: number;
  error: string;
  extra: string[];
}

/** Rows of every table whose first cell is an error code; extra fields are the backticked names of the column headed "extra". */
function rows(markdown: string): Row[] {
  const out: Row[] = [];
  let extraCol = -1;
  for (const line of markdown.split("\n")) {
    if (!line.startsWith("|")) {
      extraCol = -1;
      continue;
    }
    const cells = line
      .split("|")
      .slice(1, -1)
      .map((c) => c.trim());
    if (cells[0] === "code") {
      extraCol = cells.findIndex((c) => c.startsWith("extra"));
      continue;
    }
    if (!/^-32\d{3}$/.test(cells[0] ?? "")) continue;
    const extra = extraCol < 0 ? "" : (cells[extraCol] ?? "");
    out.push({
      code: Number(cells[0]),
      error: (cells[1] ?? "").replace(/`/g, ""),
      extra: [...extra.matchAll(/`([A-Za-z]+)(?::[^`]*)?`/g)].map((m) => m[1] as string),
    });
  }
  return out;
}

describe("docs/refusals.md", () => {
  const table = rows(doc);

  it("documents every refusal the code can build, and nothing else", () => {
    expect(table.map((r) => `${r.error} ${r.code}`).sort()).toEqual(
      Object.values(built)
        .map((e) => `${errorOf(e)} ${e.code}`)
        .sort(),
    );
    for (const name of Object.keys(REFUSAL_CODES)) expect(built[name], name).toBeDefined();
  });

  it("has a row, with its code, for every name of src/guard/refusals.ts's code lists", () => {
    // REFUSAL_CODES and UNAVAILABLE_CODES are the lists the source keeps; a name added to either
    // without a constructor in `built` (and so a row) was documented nowhere
    for (const [name, code] of Object.entries({ ...REFUSAL_CODES, ...UNAVAILABLE_CODES })) {
      const row = table.find((r) => r.error === name);
      expect(row, `docs/refusals.md has a row for ${name}`).toBeDefined();
      expect(row?.code, name).toBe(code);
    }
  });

  it.each(Object.keys(built))("%s: the documented code, data.error and extra data fields", (name) => {
    const e = built[name] as ErrorObject;
    const error = name.split(" ")[0];
    const rowsOf = table.filter((r) => r.error === error);
    expect(rowsOf.length).toBeGreaterThan(0);
    // one row per error, or one per code when the error has two
    const row = rowsOf.length === 1 ? rowsOf[0] : rowsOf.find((r) => r.code === e.code);
    expect(row).toBeDefined();
    expect(e.code).toBe(row?.code);
    const data = e.data as Record<string, unknown>;
    expect(data.error).toBe(error);
    expect(typeof data.reason).toBe("string");
    expect(typeof data.retry).toBe("string");
    expect(typeof e.message).toBe("string");
    const extra = Object.keys(data).filter((k) => !["error", "reason", "retry"].includes(k));
    expect(extra.sort()).toEqual([...(row?.extra ?? [])].sort());
  });

  it("every constructor of refuse builds a documented row: its code, data.error, reason, retry, and only documented fields", () => {
    expect(Object.keys(everyConstructor).sort()).toEqual(Object.keys(refuse).sort());
    for (const [name, build] of Object.entries(everyConstructor)) {
      const e = build();
      expect(e, name).not.toBeNull();
      const data = (e as ErrorObject).data as Record<string, unknown>;
      const row = table.find((r) => r.error === data.error && r.code === (e as ErrorObject).code);
      expect(row, `${name}: ${String(data.error)} ${(e as ErrorObject).code}`).toBeDefined();
      expect(typeof data.reason, name).toBe("string");
      expect(typeof data.retry, name).toBe("string");
      const extra = Object.keys(data).filter((k) => !["error", "reason", "retry"].includes(k));
      for (const k of extra) expect(row?.extra, `${name}: data.${k}`).toContain(k);
    }
  });

  it("its example is what the gateway sends: the same message, reason and retry", () => {
    // the example is what an agent's author copies from: its words must be the gateway's own
    const block = /## Example\n\n```json\n([\s\S]*?)```/.exec(doc)?.[1];
    expect(block).toBeDefined();
    const example = JSON.parse(block as string) as ErrorObject;
    const data = example.data as {
      error: string;
      approvedEpoch: string;
      currentEpoch: string;
      changedTools: string[];
    };
    expect(data.error).toBe("authorization_stale");
    const sent = refuse.authorizationStale({
      approvedEpoch: data.approvedEpoch,
      currentEpoch: data.currentEpoch,
      changedTools: data.changedTools,
    });
    expect(example).toEqual(sent);
  });

  it("no error with a data.error is built outside src/guard/refusals.ts, and the prose names only the tables' errors", () => {
    // session_ended was built in src/transport/httpSession.ts with data.error alone: no reason, no
    // retry, no row in the tables, and this test's tables-against-constructors check never saw it
    const inline: string[] = [];
    for (const file of sources(join(REPO, "src"))) {
      if (file.endsWith(join("guard", "refusals.ts"))) continue;
      for (const call of errorResponseCalls(readFileSync(file, "utf8")))
        if (/\berror:\s*"[a-z]+(?:_[a-z]+)*"/.test(call)) inline.push(`${file}: ${call}`);
    }
    expect(inline).toEqual([]);
    const inTables = new Set(table.map((r) => r.error));
    const inProse = [...doc.matchAll(/data\.error`?:? "([a-z_]+)"/g)].map((m) => m[1] as string);
    for (const name of inProse) expect(inTables.has(name), `data.error "${name}" has a row`).toBe(true);
  });

  it("its examples use real 26-character ULIDs for epochs", () => {
    const epochs = [...doc.matchAll(/"(?:approvedEpoch|currentEpoch|requestEpoch)": "([^"]*)"/g)].map(
      (m) => m[1],
    );
    expect(epochs.length).toBeGreaterThan(0);
    for (const id of epochs) expect(id).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
  });
});
