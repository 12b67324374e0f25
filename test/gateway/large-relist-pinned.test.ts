// The `catalog_revised` records of a large re-list, pinned byte for byte. A catalog of 600 tools
// of many shapes (secret-named properties with defaults and examples, definitions a secret takes
// by `$ref`, strings under secret-like keys, combinators, annotations, renames, added, removed
// and unchanged tools, `__proto__` and integer-like keys, input schemas the validator refuses),
// more narrowed input schemas than the validator's bound of checks per diff (200), is served and
// then replaced. Each record's JSON (its epoch and time aside, which differ per run) is hashed and
// compared with the digest the gateway wrote before session forty-two made the re-list cheaper
// (commit fbb23439): the catalog fingerprint, every tool's fingerprint, the field-level diff with
// its classifications and redactions, and the redacted inventory must all stay as they were.
// A change that means to alter what is recorded must say so here, with the new digest. No timing
// is asserted (bench/relist-large.mjs measures a 10,000-tool re-list). Real gateway, real catalog
// fixture, audit log read back with the test keyring.
import { createHash } from "node:crypto";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import type { WireMessage } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const TOOLS = 600;
const name = (i: number, prefix = "t") => `${prefix}${String(i).padStart(4, "0")}`;

/** An own `__proto__` key, as JSON.parse makes one. */
const withProto = (o: Record<string, unknown>, v: unknown): Record<string, unknown> => {
  Object.defineProperty(o, "__proto__", { value: v, enumerable: true, writable: true, configurable: true });
  return o;
};

/** Tool `i` of the catalog before (`after` false) or after the re-list; undefined: not listed. */
function tool(i: number, after: boolean): ToolDef | undefined {
  const n = name(i);
  const strings = (count: number, narrow: boolean) =>
    Object.fromEntries(
      Array.from({ length: count }, (_, k) => [
        `p${k}`,
        narrow ? { type: "string", maxLength: 10 } : { type: "string" },
      ]),
    );
  switch (i % 10) {
    case 0: // narrowed: a maxLength on each property
      return {
        name: n,
        description: `Tool ${i}.`,
        inputSchema: { type: "object", properties: strings(6, after) },
      };
    case 1: // a secret-named property's default and examples change; the schema narrows
      return {
        name: n,
        inputSchema: {
          type: "object",
          properties: {
            apiToken: { type: "string", default: after ? "tok-new" : "tok-old", examples: ["ex-a", "ex-b"] },
            region: { type: "string", enum: after ? ["eu", "us"] : ["eu", "us", "ap"], default: "eu" },
            "10": { type: "integer", ...(after ? { maximum: 5 } : {}) },
            "2": { type: "boolean" },
          },
          required: after ? ["region"] : [],
        },
      };
    case 2: // a definition a secret-like property takes by $ref, narrowed; a new nested property
      return {
        name: n,
        inputSchema: {
          type: "object",
          properties: {
            password: { $ref: "#/$defs/pw" },
            ...(after ? { apiKey2: { $ref: "#/$defs/key2" } } : {}),
            options: {
              type: "object",
              properties: {
                depth: { type: "integer", minimum: 0, ...(after ? { maximum: 9 } : {}) },
                ...(after ? { clientSecret: { type: "string", default: "s3cr3t", examples: ["x"] } } : {}),
              },
            },
          },
          $defs: {
            pw: { type: "string", default: "hunter2", ...(after ? { minLength: 8 } : {}) },
            // a definition added whole, a secret's by $ref: its default is shown redacted
            ...(after ? { key2: { type: "string", default: "zzz-def2" } } : {}),
          },
        },
      };
    case 3: // a combinator widened, a description naming a new effect, strings under secret keys
      return {
        name: n,
        description: after ? `Reads and deletes files (${i}).` : `Reads files (${i}).`,
        inputSchema: {
          type: "object",
          properties: {
            target: { anyOf: after ? [{ type: "string" }, { type: "integer" }] : [{ type: "string" }] },
          },
          examples: [{ token: "abc", target: "x" }],
        },
        _meta: { "x/note": after ? "v2" : "v1", secretKey: "meta-secret" },
      };
    case 4: // annotations and title: hints only
      return {
        name: n,
        title: after ? `Tool ${i}, renamed` : `Tool ${i}`,
        annotations: { readOnlyHint: !after, openWorldHint: after, title: `T${i}` },
        inputSchema: { type: "object", properties: strings(2, after) },
      };
    case 5: // output schema added; icons changed; narrowed
      return {
        name: n,
        inputSchema: { type: "object", properties: strings(3, after) },
        ...(after ? { outputSchema: { type: "object", properties: { ok: { type: "boolean" } } } } : {}),
        icons: [{ src: `https://icons.example/${after ? "b" : "a"}.png` }],
      };
    case 6: // renamed (a removed tool and an added one with the same input schema)
      return {
        name: after ? name(i, "new_") : name(i, "old_"),
        inputSchema: {
          type: "object",
          properties: { query: { type: "string" }, limit: { type: "integer" } },
        },
      };
    case 7: // removed, or added with secret-named defaults
      if (i % 20 === 7)
        return after
          ? undefined
          : { name: n, inputSchema: { type: "object", properties: strings(1, false) } };
      return after
        ? {
            name: n,
            description: "Sends mail.",
            inputSchema: {
              type: "object",
              properties: {
                passphrase: { type: "string", default: "pp", examples: ["pp2"] },
                to: { type: "string" },
              },
            },
          }
        : undefined;
    case 8: // __proto__ as a property name, narrowed
      return {
        name: n,
        inputSchema: {
          type: "object",
          properties: withProto(
            { plain: { type: "number", ...(after ? { minimum: 0 } : {}) } },
            {
              type: "string",
              ...(after ? { pattern: "^[a-z]+$" } : {}),
            },
          ),
        },
      };
    default: // schemas the validator refuses before, not after; or unchanged
      if (i % 20 === 9)
        return {
          name: n,
          inputSchema: {
            type: "object",
            properties: {
              // refused by the validator before (not a schema), compiled after
              n: after ? { type: "string", minLength: 0, maxLength: 3 } : { type: "string", minLength: -1 },
            },
          },
        };
      return {
        name: n,
        description: "Unchanged.",
        inputSchema: { type: "object", properties: strings(4, false) },
      };
  }
}

const catalog = (after: boolean): ToolDef[] =>
  Array.from({ length: TOOLS }, (_, i) => tool(i, after)).filter((t): t is ToolDef => t !== undefined);

/** The record's JSON as the gateway wrote it, with what differs per run (epoch, time) fixed. */
function pinnedText(e: Record<string, unknown>): string {
  const fixed: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(e))
    fixed[k] = k === "epoch" || k === "at" || k === "ts" ? "(per run)" : v;
  return JSON.stringify(fixed);
}
const digest = (s: string) => createHash("sha256").update(s).digest("hex");

describe(`the catalog_revised records of a ${TOOLS}-tool re-list`, () => {
  it("are the ones the gateway wrote before the re-list was made cheaper, byte for byte", async () => {
    const cat = makeCatalog(catalog(false), { pageSize: 100 });
    cleanup.push(() => cat.cleanup());
    const gw = rawGateway({
      args: ["--label", "pinned", "--approval", "none", "--", ...fixtureCommand("catalog")],
      env: cat.env,
    });
    cleanup.push(() => gw.close());
    await gw.initialize();
    await gw.request("tools/list", {}, 60_000);
    cat.write(catalog(true));
    await gw.next((m: WireMessage) => m.method === "notifications/tools/list_changed", 120_000);
    const second = await gw.request("tools/list", {}, 60_000);
    expect((second.result as { tools: unknown[] }).tools).toHaveLength(catalog(true).length);

    const revised = (await auditEvents(gw.stateDir)).filter((e) => e.type === "catalog_revised");
    expect(revised.map((e) => [e.revision, e.previousRevision])).toEqual([
      [1, null],
      [2, 1],
    ]);
    const texts = revised.map(pinnedText);
    // a few landmarks first, so that a mismatch says more than a digest does
    const diff = revised[1]?.diff as { entries: { tool: string; kind: string; classification: string }[] };
    expect(diff.entries.filter((e) => e.kind === "modified")).toHaveLength(450);
    expect(texts[1]).not.toContain("hunter2");
    expect(texts[1]).not.toContain("s3cr3t");
    expect(texts[1]).not.toContain("tok-new");
    expect(texts[1]).not.toContain("meta-secret");
    expect(texts[1]).not.toContain("zzz-def2");
    const count = (what: string) => (texts[1]?.split(what).length ?? 1) - 1;
    // past the validator's bound, and within it a schema it refused before and compiles now
    expect(count("was not checked by portcullis's validator")).toBe(130);
    expect(count("was refused by portcullis before (every call refused) and is checked now")).toBe(18);
    expect(count("renamed? from")).toBe(60);
    expect(texts.map((t) => t.length)).toEqual([109430, 667566]);
    expect(texts.map(digest)).toEqual([
      "4c342ce5251eab134ccad7db335f7cadd45f3a3a9c62c2c767b5d868d1f1dd6d",
      "32503e2043d9cb18b60884c3108c011bb56bc810c897cc5f13d523143f11af52",
    ]);
  }, 120_000);
});
