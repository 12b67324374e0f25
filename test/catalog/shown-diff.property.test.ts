// A review's stored catalog diff as it is shown (src/catalog/shownDiff.ts, and storedDiff in
// src/approval/render.ts that reads it back from the store). The promises:
//   - docs/security.md, "The review's catalog diff": "The store can be rewritten by any process of
//     the user, so the diff is not trusted ... every piece is redacted on its own again ... and a
//     `diff` of any other shape is ignored (the review is then shown from its text, redacted
//     whole)"; storedDiff's comment: "so no rewriting makes the review show a secret the text
//     pass would have hidden";
//   - shownDiff's comment: "each tool name, path, change and value is redacted alone (redactText;
//     values also by their keys, as redactSchemaDefaults already did for the defaults of
//     secret-like properties)".
// fast-check builds stored diffs of any JSON shape (well-shaped ones, the same with one member
// broken, arbitrary JSON) and checks, through publicRequest (`approvals --json`, the console's
// card) and renderReview (`approvals --verbose`):
//   - neither throws;
//   - the diff is shown (kept under `diff`, rendered from it) iff it has the shape of a CatalogDiff
//     (src/catalog/types.ts), written here from the types, not taken from the reader;
//   - a secret that the text pass (the rendering redacted whole) hides is not shown;
//   - a value under a secret-like key (a member of a before/after value, or the value of the
//     property a change's path names) is not shown.
//
// Counterexamples it found, fixed since: a change's `before: {"password":"hunter2"}` (under any
// path) showed `hunter2` in `approvals --json` and `--verbose`; `after: "hunter2"` under path
// `inputSchema.properties.password`, and `detail: 'password: default "hunter2"'`, showed it too;
// a diff of another shape was not rendered but still carried under `diff` by `approvals --json`.
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { publicRequest, renderReview } from "../../src/approval/render.js";
import type { ApprovalRequest } from "../../src/approval/requests.js";
import { renderDiff } from "../../src/catalog/index.js";
import { isSecretName, redactText } from "../../src/util/redact.js";

const SECRET_KEYS = ["password", "api_key", "apiKey", "token", "client_secret", "accessToken", "secret"];
const PLAIN_KEYS = ["region", "limit", "name", "mode", "passwordLength", "tokenizer"];
/** Secrets that redactText alone does not recognise (words, not random-looking strings). */
const SECRETS = ["hunter2", "opensesame", "letmein99", "correcthorse", "trustno1x"];

/** In the stored text, after a secret-like name: the text pass hides it. */
const STORED_SECRET = "swordfish77";

const KINDS = ["added", "removed", "modified"] as const;
const CLASSES = ["expands", "narrows", "cosmetic"] as const;

// ---- the shape, from src/catalog/types.ts ----

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const optString = (v: unknown) => v === undefined || typeof v === "string";
const optStrings = (v: unknown) =>
  v === undefined || (Array.isArray(v) && v.every((x) => typeof x === "string"));

function isCatalogDiff(d: unknown): boolean {
  if (
    !isObj(d) ||
    !Array.isArray(d.entries) ||
    !Array.isArray(d.renameCandidates) ||
    typeof d.expands !== "boolean"
  )
    return false;
  const changeOk = (c: unknown) =>
    isObj(c) &&
    typeof c.path === "string" &&
    typeof c.change === "string" &&
    (CLASSES as readonly unknown[]).includes(c.classification) &&
    optStrings(c.sensitive) &&
    optStrings(c.newEffects) &&
    optString(c.detail);
  const entryOk = (e: unknown) =>
    isObj(e) &&
    (KINDS as readonly unknown[]).includes(e.kind) &&
    (CLASSES as readonly unknown[]).includes(e.classification) &&
    typeof e.tool === "string" &&
    optString(e.renameCandidate) &&
    Array.isArray(e.changes) &&
    e.changes.every(changeOk);
  const renameOk = (r: unknown) =>
    isObj(r) && typeof r.from === "string" && typeof r.to === "string" && typeof r.similarity === "string";
  return d.entries.every(entryOk) && d.renameCandidates.every(renameOk);
}

// ---- stored diffs ----

const secret = fc.constantFrom(...SECRETS);
const secretKey = fc.constantFrom(...SECRET_KEYS);
const plainKey = fc.constantFrom(...PLAIN_KEYS);

/** A before/after value: plain JSON, a secret under a secret-like key, or nested so. */
const value: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  v: fc.oneof(
    { arbitrary: fc.jsonValue({ maxDepth: 1 }), weight: 2 },
    { arbitrary: fc.dictionary(secretKey, secret, { minKeys: 1, maxKeys: 2 }), weight: 2 },
    { arbitrary: fc.dictionary(plainKey, tie("v"), { maxKeys: 2 }), weight: 1 },
    { arbitrary: fc.array(tie("v"), { maxLength: 2 }), weight: 1 },
  ),
})).v;

const change = fc
  .record({
    name: fc.oneof(secretKey, plainKey),
    what: fc.constantFrom(
      "default changed",
      "property added",
      "enum widened",
      "examples changed",
      "const changed",
    ),
    classification: fc.constantFrom(...CLASSES),
    before: fc.option(fc.oneof(value, secret), { nil: undefined }),
    after: fc.option(fc.oneof(value, secret), { nil: undefined }),
    detail: fc.option(
      fc
        .tuple(secret, fc.constantFrom(": default ", ": examples ", " default "))
        .map(([s, sep]) => [sep, s] as const),
      { nil: undefined },
    ),
    sensitive: fc.option(fc.array(fc.constantFrom("secret-like name", "a URL"), { maxLength: 2 }), {
      nil: undefined,
    }),
  })
  .map((c) => {
    // a secret stands alone only as the value of a secret-like property (its default, say)
    const named = SECRET_KEYS.includes(c.name);
    if (!named) {
      if (SECRETS.includes(c.before as string)) c.before = "plain";
      if (SECRETS.includes(c.after as string)) c.after = "plain";
      c.detail = undefined;
    }
    const out: Record<string, unknown> = {
      path: `inputSchema.properties.${c.name}`,
      change: c.what,
      classification: c.classification,
    };
    if (c.before !== undefined) out.before = c.before;
    if (c.after !== undefined) out.after = c.after;
    if (c.detail !== undefined) out.detail = `${c.name}${c.detail[0]}${JSON.stringify(c.detail[1])}`;
    if (c.sensitive !== undefined) out.sensitive = c.sensitive;
    return out;
  });

const wellShaped = fc
  .record({
    entries: fc.array(
      fc.record({
        kind: fc.constantFrom(...KINDS),
        tool: fc.constantFrom("deploy", "search", "get_token"),
        classification: fc.constantFrom(...CLASSES),
        changes: fc.array(change, { maxLength: 3 }),
      }),
      { maxLength: 2 },
    ),
    renameCandidates: fc.array(
      fc.record({ from: fc.string(), to: fc.string(), similarity: fc.constant("0.9") }),
      {
        maxLength: 1,
      },
    ),
    expands: fc.boolean(),
  })
  .map((d) => d as Record<string, unknown>);

/** A well-shaped diff with one member somewhere removed or given a value of another type. */
const broken = fc
  .tuple(wellShaped, fc.nat(), fc.constantFrom(undefined, null, 1, "x", [], {}, true))
  .map(([d, pick, bad]) => {
    const copy = structuredClone(d);
    const spots: [Record<string, unknown>, string][] = [
      [copy, "entries"],
      [copy, "renameCandidates"],
      [copy, "expands"],
    ];
    for (const e of copy.entries as Record<string, unknown>[]) {
      for (const k of ["kind", "tool", "classification", "changes"]) spots.push([e, k]);
      for (const c of e.changes as Record<string, unknown>[])
        for (const k of ["path", "change", "classification", "sensitive", "detail"]) spots.push([c, k]);
    }
    const [at, key] = spots[pick % spots.length]!;
    if (bad === undefined) delete at[key];
    else at[key] = bad;
    return copy as unknown;
  });

const anyDiff = fc.oneof(
  { arbitrary: wellShaped as fc.Arbitrary<unknown>, weight: 3 },
  { arbitrary: broken, weight: 2 },
  { arbitrary: fc.jsonValue({ maxDepth: 3 }), weight: 1 },
);

function request(diff: unknown, sinceDiff: unknown, rendered: string): ApprovalRequest {
  return {
    request: "01JQ7R4S4S0QJ7GZP1S2XB6V3M",
    agentRun: "run-1",
    serverLabel: "srv",
    executionEpoch: "e2",
    catalogRevision: 2,
    tool: "deploy",
    fingerprint: "sha256:00",
    definition: null,
    credentialScope: [],
    mode: "session",
    createdAt: "2026-01-01T00:00:00Z",
    expiresAt: "2026-01-01T00:10:00Z",
    state: "pending",
    decidedAt: null,
    decidedBy: null,
    decisionFor: null,
    reason: null,
    grant: null,
    argumentsDigest: null,
    decisionSignature: null,
    review: {
      request: "01JQ7R4S4S0QJ7GZP1S2XB6V3M",
      createdAt: "2026-01-01T00:00:00Z",
      expiresAt: "2026-01-01T00:10:00Z",
      agentRun: { run: "run-1", startedAt: "2026-01-01T00:00:00Z", chainDigest: "sha256:00", chain: [] },
      serverLabel: "srv",
      epoch: { current: "e2", lastApproved: "e1", changedParts: null, summary: "same", record: null },
      catalog: {
        revision: 2,
        lastApprovedRevision: 1,
        classification: "expands",
        rendered,
        diff: diff as never,
      },
      tool: {
        name: "deploy",
        fingerprint: "sha256:00",
        mode: "session",
        rendered: "deploy",
        sinceLastGrant: {
          grant: "g1",
          revision: 0,
          fingerprint: "sha256:01",
          classification: "expands",
          rendered,
          diff: sinceDiff as never,
        },
      },
      credentialScope: [],
      arguments: [],
    },
  };
}

/** What the human and the agent are shown of a request: its JSON and its text. */
function shown(req: ApprovalRequest): { json: string; text: string; pub: ApprovalRequest } {
  const pub = publicRequest(req);
  return { json: JSON.stringify(pub), text: renderReview(req), pub };
}

describe("a stored diff as it is shown", () => {
  it("the tables are what this test means them to be", () => {
    for (const k of SECRET_KEYS) expect(isSecretName(k), k).toBe(true);
    for (const s of SECRETS) expect(redactText(`the value ${s}`), s).toContain(s);
    expect(redactText(`STORED TEXT api_key=${STORED_SECRET}`)).not.toContain(STORED_SECRET);
  });

  it("never throws, and is shown from the diff iff the diff has a CatalogDiff's shape", () => {
    fc.assert(
      fc.property(anyDiff, (d) => {
        const rendered = `STORED TEXT api_key=${STORED_SECRET}`;
        const { pub, text } = shown(request(d, d, rendered));
        // shown from the diff: rendered from it, not the stored text
        const fromDiff = !pub.review.catalog.rendered.startsWith("STORED TEXT");
        expect(fromDiff, JSON.stringify(d)).toBe(isCatalogDiff(d));
        expect(text.includes("STORED TEXT"), JSON.stringify(d)).toBe(!isCatalogDiff(d));
        // not shown from the diff: the stored text, redacted whole
        expect(JSON.stringify(pub)).not.toContain(STORED_SECRET);
        expect(text).not.toContain(STORED_SECRET);
      }),
      { numRuns: 400 },
    );
  });

  it("shows no secret the text pass would have hidden", () => {
    fc.assert(
      fc.property(wellShaped, (d) => {
        const textPass = redactText(renderDiff(d as never));
        const { json, text } = shown(request(d, d, "x"));
        for (const s of SECRETS)
          if (!textPass.includes(s)) {
            expect(json.includes(s), `${s} in approvals --json for ${JSON.stringify(d)}`).toBe(false);
            expect(text.includes(s), `${s} in approvals --verbose for ${JSON.stringify(d)}`).toBe(false);
          }
      }),
      { numRuns: 300 },
    );
  });

  it("shows no value under a secret-like key: a member of a value, or the property a change names", () => {
    fc.assert(
      fc.property(wellShaped, (d) => {
        const { json, text } = shown(request(d, d, "x"));
        // every secret in the diff stands under a secret-like key (a member, or the named
        // property's default/example) or in a detail about such a property: none may show
        for (const s of SECRETS) {
          const held = JSON.stringify(d).includes(s);
          if (!held) continue;
          expect(json.includes(s), `${s} in approvals --json for ${JSON.stringify(d)}`).toBe(false);
          expect(text.includes(s), `${s} in approvals --verbose for ${JSON.stringify(d)}`).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });

  it("a diff of another shape is ignored: none of its secrets shows either (approvals --json included)", () => {
    fc.assert(
      fc.property(broken, (d) => {
        fc.pre(!isCatalogDiff(d));
        const { json, text } = shown(request(d, d, "x"));
        for (const s of SECRETS) {
          if (!JSON.stringify(d).includes(s)) continue;
          expect(json.includes(s), `${s} in approvals --json for ${JSON.stringify(d)}`).toBe(false);
          expect(text.includes(s), `${s} in approvals --verbose for ${JSON.stringify(d)}`).toBe(false);
        }
      }),
      { numRuns: 300 },
    );
  });
});
