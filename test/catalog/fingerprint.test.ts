import { createHash } from "node:crypto";
import canonicalize from "canonicalize";
import { describe, expect, it } from "vitest";
import {
  canonicalJson,
  diffCatalogs,
  renderCatalog,
  renderDiff,
  snapshotOf,
  type Tool,
  toolFingerprint,
} from "../../src/catalog/index.js";
import { canonicalString } from "../../src/util/canonical.js";
import { type Editable, edit, postComment, readIssue, repoSearch } from "./fixtures.js";

const sha = (s: string) => `sha256:${createHash("sha256").update(s, "utf8").digest("hex")}`;

describe("canonical JSON", () => {
  it("is RFC 8785: sorted keys by UTF-16 code units, no whitespace, ES number form", () => {
    // examples from RFC 8785 §3.2.3 (key order) and number serialization
    const v = {
      "\u20ac": "Euro Sign",
      "\r": "Carriage Return",
      "\ufb33": "Hebrew",
      "1": "One",
      "\ud83d\ude00": "Emoji",
      "\u0080": "Control",
    };
    expect(canonicalJson(v)).toBe(
      '{"\\r":"Carriage Return","1":"One","\u0080":"Control","\u20ac":"Euro Sign","\ud83d\ude00":"Emoji","\ufb33":"Hebrew"}',
    );
    expect(canonicalJson({ n: [1e21, 1e-7, -0, Number("333333333.33333329"), 4.5, 0.002] })).toBe(
      '{"n":[1e+21,1e-7,0,333333333.3333333,4.5,0.002]}',
    );
    expect(canonicalJson({ b: [true, null, 'a\u0001\n"\\'], a: {} })).toBe(
      '{"a":{},"b":[true,null,"a\\u0001\\n\\"\\\\"]}',
    );
  });

  it("integer-like keys sort as strings, not in JS enumeration order", () => {
    expect(canonicalJson({ "9": 1, "10": 2, a: 3 })).toBe('{"10":2,"9":1,"a":3}');
    expect(canonicalString({ "9": 1, "10": 2, a: 3 })).toBe('{"10":2,"9":1,"a":3}');
  });

  it("escapes a lone surrogate instead of throwing, and keeps distinct strings distinct", () => {
    expect(() => canonicalize({ s: "\ud800" })).toThrow();
    expect(canonicalJson({ s: "\ud800" })).toBe('{"s":"\\ud800"}');
    expect(canonicalJson({ s: "\ud800" })).not.toBe(canonicalJson({ s: "\ud801" }));
    expect(canonicalJson({ s: "\ud800" })).not.toBe(canonicalJson({ s: "\ufffd" }));
  });

  it("refuses what JSON cannot hold", () => {
    expect(() => canonicalJson({ n: Number.NaN })).toThrow();
    expect(() => canonicalString({ n: Number.POSITIVE_INFINITY })).toThrow();
    const cyc: Record<string, unknown> = {};
    cyc.self = cyc;
    expect(() => canonicalString(cyc)).toThrow(/circular/);
  });
});

describe("fingerprints", () => {
  it("a tool fingerprint is sha256 over the canonical form of the whole tool", () => {
    expect(toolFingerprint(readIssue)).toBe(sha(canonicalize(readIssue) as string));
    expect(toolFingerprint(readIssue)).toMatch(/^sha256:[0-9a-f]{64}$/);
  });

  it("every field counts, including annotations, _meta, icons and execution", () => {
    const base = toolFingerprint(readIssue);
    for (const f of [
      (t: Editable) => (t.annotations.readOnlyHint = false),
      (t: Editable) => (t._meta = { v: 1 }),
      (t: Editable) => (t.icons = []),
      (t: Editable) => (t.execution = { taskSupport: "forbidden" }),
      (t: Editable) => (t.description += " "),
    ]) {
      expect(toolFingerprint(edit(readIssue, f))).not.toBe(base);
    }
  });

  it("the catalog fingerprint covers the sorted per-tool fingerprints: server order does not matter", () => {
    const a = snapshotOf([readIssue, repoSearch, postComment], 1);
    const b = snapshotOf([postComment, readIssue, repoSearch], 1);
    expect(a.fingerprint).toBe(b.fingerprint);
    const fps = [readIssue, repoSearch, postComment].map(toolFingerprint).sort();
    expect(a.fingerprint).toBe(sha(canonicalize(fps) as string));
    expect(a.tools.map((t) => t.name)).toEqual(["read_issue", "repo_search", "post_comment"]);
    expect(b.tools.map((t) => t.name)).toEqual(["post_comment", "read_issue", "repo_search"]);
    expect(snapshotOf([readIssue, repoSearch], 1).fingerprint).not.toBe(a.fingerprint);
  });
});

describe("snapshots", () => {
  it("records coverage: pages, entries, completeness", () => {
    const page1 = [readIssue];
    const page2 = [repoSearch];
    const page3 = [postComment];
    const s = snapshotOf([...page1, ...page2, ...page3], 3);
    expect(s.coverage).toEqual({
      pages: 3,
      tools: 3,
      complete: true,
      duplicateNames: [],
      invalid: [],
    });
    expect(snapshotOf([readIssue], 2, { complete: false }).coverage.complete).toBe(false);
  });

  it("serves a name listed with different definitions not at all, and counts every entry in the fingerprint", () => {
    // it kept the first read_issue and dropped the later ones unseen: the human reviewed (and the
    // agent saw) one definition while the server may act on another, and a change to a later
    // one changed no fingerprint
    const second = edit(readIssue, (t) => (t.description = "a different tool with the same name"));
    const s = snapshotOf([readIssue, repoSearch, second, second], 2);
    expect(s.tools).toEqual([repoSearch]);
    expect(s.byName.has("read_issue")).toBe(false);
    expect(s.ambiguous.get("read_issue")?.map((d) => d.fingerprint)).toEqual([
      toolFingerprint(readIssue),
      toolFingerprint(second),
    ]);
    expect(s.coverage.duplicateNames).toEqual(["read_issue"]);
    expect(s.coverage.ambiguousNames).toEqual(["read_issue"]);
    expect(s.coverage.tools).toBe(4);
    expect(s.listed).toEqual([readIssue, repoSearch, second, second]);
    expect(s.fingerprint).not.toBe(snapshotOf([readIssue, repoSearch], 1).fingerprint);
    // a change to the last entry alone is a new fingerprint
    const third = edit(second, (t) => (t.title = "changed"));
    expect(snapshotOf([readIssue, repoSearch, second, third], 2).fingerprint).not.toBe(s.fingerprint);
  });

  it("serves copies of one definition once", () => {
    const s = snapshotOf([readIssue, repoSearch, readIssue], 1);
    expect(s.tools).toEqual([readIssue, repoSearch]);
    expect(s.byName.get("read_issue")?.fingerprint).toBe(toolFingerprint(readIssue));
    expect(s.ambiguous.size).toBe(0);
    expect(s.coverage.duplicateNames).toEqual(["read_issue"]);
    // absent when there are none: an ordinary catalog's coverage is recorded as before the field
    expect(s.coverage).not.toHaveProperty("ambiguousNames");
  });

  it("drops entries that are not tools and says why", () => {
    const s = snapshotOf([null, readIssue, { name: 3 }, "x", { title: "no name" }] as unknown as Tool[], 1);
    expect(s.tools).toEqual([readIssue]);
    expect(s.coverage.invalid.map((i) => i.index)).toEqual([0, 2, 3, 4]);
    expect(s.coverage.invalid[1]?.reason).toBe("no string name");
  });

  it("drops a tool whose JSON text holds a number beyond double range (1e400 parses to Infinity), and keeps the rest", () => {
    const tools = JSON.parse(
      '[{"name":"big","inputSchema":{"type":"object","properties":{"n":{"type":"number","maximum":1e400}}}},{"name":"ok","inputSchema":{"type":"object"}}]',
    ) as Tool[];
    const s = snapshotOf(tools, 1);
    expect(s.tools.map((t) => t.name)).toEqual(["ok"]);
    expect(s.coverage.invalid).toEqual([
      { index: 0, reason: "cannot be fingerprinted (canonical JSON: non-finite number)" },
    ]);
    expect(s.fingerprint).toBe(snapshotOf([tools[1]!], 1).fingerprint);
  });

  it("renders for humans with coverage, inputs, defaults and hints", () => {
    const s = snapshotOf([readIssue, repoSearch, repoSearch], 2, { complete: false });
    const text = renderCatalog(s, 7);
    expect(text).toContain(`catalog revision 7  ${s.fingerprint}`);
    expect(text).toContain("2 tools from 3 entries on 2 pages (INCOMPLETE");
    expect(text).toContain("listed more than once, the same definition each time (served once): repo_search");
    expect(text).toContain("limit: integer, default 10");
    expect(text).toContain("issue_id: string (required)");
    expect(text).toContain("hints (not trusted): readOnlyHint=true, openWorldHint=false");
  });

  it("names the ambiguous names, escaped and bounded, in catalog show and in a diff", () => {
    // 25 names, each listed with two definitions; one name carries a terminal escape
    const names = Array.from({ length: 25 }, (_, i) =>
      i === 0 ? "evil\u001b[2Jname" : `tool_${String(i).padStart(2, "0")}`,
    );
    const tools = names.flatMap((name) => [
      { name, description: "one" },
      { name, description: "two" },
    ]) as Tool[];
    const s = snapshotOf(tools, 1);
    expect(s.tools).toEqual([]);
    const text = renderCatalog(s, 3);
    expect(text).not.toContain("\u001b");
    const line = text.split("\n").find((l) => l.includes("listed more than once with different definitions"));
    expect(line).toContain("tool_01");
    expect(line).toContain("… and 5 more");
    expect(text).toContain("(and 5 more ambiguous names not shown)");
    const diff = renderDiff(diffCatalogs([], s), { fromRevision: 2, toRevision: 3 });
    expect(diff).not.toContain("\u001b");
    expect(diff).toContain(
      "tool added, listed 2 times with 2 different definitions: not served, its calls refused",
    );
    expect(diff.split("\n").find((l) => l.startsWith("  listed with different definitions"))).toContain(
      "… and 5 more",
    );
  });

  it("counts with the noun's number: one tool from one entry on one page", () => {
    // it said "1 tools from 1 entries on 1 page"
    expect(renderCatalog(snapshotOf([readIssue], 1), 1)).toContain(
      "  1 tool from 1 entry on 1 page (complete)",
    );
  });
});
