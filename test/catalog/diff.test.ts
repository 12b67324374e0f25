import { describe, expect, it } from "vitest";
import {
  type CatalogDiff,
  type DiffEntry,
  diffCatalogs,
  type FieldChange,
  renderCatalog,
  renderDiff,
  snapshotOf,
  type Tool,
} from "../../src/catalog/index.js";
import {
  createBranch,
  deleteEnvironment,
  deployService,
  edit,
  getRelease,
  postComment,
  publishPreview,
  queryLogs,
  readIssue,
  repoSearch,
  searchLogs,
} from "./fixtures.js";

function entry(d: CatalogDiff, tool: string): DiffEntry {
  const e = d.entries.find((x) => x.tool === tool);
  if (!e) throw new Error(`no entry for ${tool} in ${JSON.stringify(d.entries.map((x) => x.tool))}`);
  return e;
}

function change(e: DiffEntry, path: string, kind: string): FieldChange {
  const c = e.changes.find((x) => x.path === path && x.change.startsWith(kind));
  if (!c) throw new Error(`no "${kind}" at ${path}: ${JSON.stringify(e.changes, null, 1)}`);
  return c;
}

/** the one modified entry of a before/after pair of the same tool */
function modified(before: Tool, after: Tool): DiffEntry {
  const d = diffCatalogs([before], [after]);
  expect(d.entries).toHaveLength(1);
  const e = d.entries[0] as DiffEntry;
  expect(e.kind).toBe("modified");
  return e;
}

describe("seed scenarios", () => {
  it("post_comment added beside read_issue is an added tool that expands", () => {
    const before = [repoSearch, readIssue, createBranch];
    const after = [repoSearch, readIssue, createBranch, postComment];
    const d = diffCatalogs(before, after);
    expect(d.entries).toHaveLength(1);
    const e = entry(d, "post_comment");
    expect(e.kind).toBe("added");
    expect(e.classification).toBe("expands");
    expect(e.fingerprintAfter).toMatch(/^sha256:[0-9a-f]{64}$/);
    expect(d.expands).toBe(true);
    expect(change(e, "inputSchema.properties.body", "property added").classification).toBe("expands");
    const text = renderDiff(d);
    expect(text).toMatch(/\+ added\s+post_comment\s+expands/);
  });

  it("delete_environment removed is a removed entry that narrows", () => {
    const d = diffCatalogs([readIssue, deleteEnvironment], [readIssue]);
    expect(d.entries).toHaveLength(1);
    const e = entry(d, "delete_environment");
    expect(e.kind).toBe("removed");
    expect(e.classification).toBe("narrows");
    expect(d.expands).toBe(false);
    expect(renderDiff(d)).toMatch(/- removed\s+delete_environment\s+narrows/);
  });

  it("search_logs → query_logs with a new optional project field: removed + added, rename candidate, expands", () => {
    const d = diffCatalogs([readIssue, searchLogs], [readIssue, queryLogs]);
    expect(d.entries.map((e) => [e.kind, e.tool])).toEqual([
      ["added", "query_logs"],
      ["removed", "search_logs"],
    ]);
    expect(d.renameCandidates).toHaveLength(1);
    expect(d.renameCandidates[0]).toMatchObject({ from: "search_logs", to: "query_logs" });
    expect(d.renameCandidates[0]?.similarity).toContain("added project");
    const added = entry(d, "query_logs");
    expect(added.renameCandidate).toBe("search_logs");
    expect(added.classification).toBe("expands");
    expect(entry(d, "search_logs").renameCandidate).toBe("query_logs");
    // the new selector is not hidden by the rename: it is listed, and flagged
    const p = change(added, "inputSchema.properties.project", "property added");
    expect(p.classification).toBe("expands");
    expect(p.sensitive).toEqual(["project-like name"]);
    expect(d.expands).toBe(true);
    const text = renderDiff(d);
    expect(text).toContain("renamed? search_logs → query_logs");
    expect(text).toContain("sensitive: project-like name");
  });

  it("include_private_notes and destination_url added to an existing tool expand, the second flagged as a destination", () => {
    const after = edit(readIssue, (t) => {
      t.inputSchema.properties.include_private_notes = { type: "boolean", default: false };
      t.inputSchema.properties.destination_url = { type: "string", format: "uri" };
    });
    const e = modified(readIssue, after);
    expect(e.classification).toBe("expands");
    const notes = change(e, "inputSchema.properties.include_private_notes", "property added");
    expect(notes.classification).toBe("expands");
    expect(notes.sensitive).toContain("private data-like name");
    const dest = change(e, "inputSchema.properties.destination_url", "property added");
    expect(dest.classification).toBe("expands");
    expect(dest.sensitive).toEqual(["destination-like name", "format uri", "url-like name"]);
    expect(renderDiff(diffCatalogs([readIssue], [after]))).toContain(
      "include_private_notes: boolean, default false",
    );
  });

  it("an enum widened expands; narrowed narrows", () => {
    const wider = edit(deployService, (t) => {
      t.inputSchema.properties.environment.enum = ["dev", "staging", "production"];
    });
    const e = modified(deployService, wider);
    const c = change(e, "inputSchema.properties.environment", "enum widened");
    expect(c.classification).toBe("expands");
    expect(c.detail).toContain("enum adds production");
    expect(e.classification).toBe("expands");
    const back = modified(wider, deployService);
    expect(change(back, "inputSchema.properties.environment", "enum narrowed").classification).toBe(
      "narrows",
    );
    expect(back.classification).toBe("narrows");
  });

  it("required loosened expands; tightened narrows", () => {
    const looser = edit(deployService, (t) => {
      t.inputSchema.required = ["service"];
    });
    const e = modified(deployService, looser);
    expect(change(e, "inputSchema.properties.environment", "required loosened").classification).toBe(
      "expands",
    );
    expect(e.classification).toBe("expands");
    const back = modified(looser, deployService);
    expect(change(back, "inputSchema.properties.environment", "required tightened").classification).toBe(
      "narrows",
    );
    expect(back.classification).toBe("narrows");
  });

  it("publish_preview gaining target {enum preview|production, default preview} expands, default visible", () => {
    const after = edit(publishPreview, (t) => {
      t.inputSchema.properties.target = {
        type: "string",
        enum: ["preview", "production"],
        default: "preview",
      };
    });
    const d = diffCatalogs([publishPreview], [after]);
    const e = entry(d, "publish_preview");
    expect(e.classification).toBe("expands");
    const c = change(e, "inputSchema.properties.target", "property added");
    expect(c.detail).toBe('target: string, default "preview" (enum preview|production)');
    expect(c.sensitive).toEqual(["destination-like name"]);
    const text = renderDiff(d, { fromRevision: 4, toRevision: 5 });
    expect(text).toContain("catalog revision 4 → 5");
    expect(text).toContain('target: string, default "preview" (enum preview|production)');
    expect(text).toMatch(/~ modified\s+publish_preview\s+expands/);
  });

  it('"Get release details" → "Get and update release details" with the same schema: flagged, not cosmetic', () => {
    const after = edit(getRelease, (t) => {
      t.description = "Get and update release details";
    });
    const e = modified(getRelease, after);
    expect(e.classification).toBe("expands");
    const c = change(e, "description", "description changed");
    expect(c.classification).toBe("expands");
    expect(c.newEffects).toEqual(["update"]);
    expect(c.change).toBe("description changed: names new effects");
    expect(renderDiff(diffCatalogs([getRelease], [after]))).toContain("[new effects: update]");
  });

  it("a whitespace-only description change is cosmetic; case or punctuation is not", () => {
    const after = edit(getRelease, (t) => {
      t.description = "  Get  release\n details ";
    });
    const e = modified(getRelease, after);
    expect(e.classification).toBe("cosmetic");
    for (const [from, to] of [
      ["Does NOT delete anything.", "Does not; delete anything!"],
      ["Get release details", "get release details."],
    ]) {
      const a = edit(getRelease, (t) => {
        t.description = from;
      });
      const b = edit(getRelease, (t) => {
        t.description = to;
      });
      expect(modified(a, b).classification).toBe("expands");
    }
    // a one-word change that names no effect verb is still not provably cosmetic
    const other = edit(getRelease, (t) => {
      t.description = "Get release details of any repository";
    });
    expect(modified(getRelease, other).classification).toBe("expands");
  });

  it("readOnlyHint true→false is shown and expands; the reverse narrows", () => {
    const after = edit(getRelease, (t) => {
      t.annotations.readOnlyHint = false;
    });
    const d = diffCatalogs([getRelease], [after]);
    const e = entry(d, "get_release");
    const c = change(e, "annotations.readOnlyHint", "annotation readOnlyHint true→false");
    expect(c.classification).toBe("expands");
    expect(renderDiff(d)).toContain("annotation readOnlyHint true→false");
    expect(modified(after, getRelease).classification).toBe("narrows");
    // absent means the MCP default (readOnlyHint false): dropping the hint is true→false too
    const dropped = edit(getRelease, (t) => {
      delete t.annotations.readOnlyHint;
    });
    expect(
      change(modified(getRelease, dropped), "annotations.readOnlyHint", "annotation").classification,
    ).toBe("expands");
  });

  it("destructiveHint false→true and openWorldHint false→true expand", () => {
    const a = edit(postComment, () => {});
    const b = edit(postComment, (t) => {
      t.annotations.destructiveHint = true;
    });
    expect(change(modified(a, b), "annotations.destructiveHint", "annotation").classification).toBe(
      "expands",
    );
    const c = edit(readIssue, (t) => {
      t.annotations.openWorldHint = true;
    });
    expect(change(modified(readIssue, c), "annotations.openWorldHint", "annotation").classification).toBe(
      "expands",
    );
  });

  it("input schema keys reordered: same fingerprint, no diff", () => {
    const reordered: Tool = {
      annotations: { openWorldHint: false, readOnlyHint: true },
      inputSchema: {
        additionalProperties: false,
        required: ["issue_id"],
        properties: { issue_id: { description: "Issue number or key, e.g. PROJ-12", type: "string" } },
        type: "object",
      },
      description: readIssue.description,
      title: readIssue.title,
      name: "read_issue",
    };
    expect(snapshotOf([reordered], 1).fingerprint).toBe(snapshotOf([readIssue], 1).fingerprint);
    expect(diffCatalogs([readIssue], [reordered]).entries).toEqual([]);
  });
});

describe("field by field", () => {
  it("nested properties are diffed recursively", () => {
    const after = edit(deployService, (t) => {
      t.inputSchema.properties.options.properties.webhook = { type: "string" };
      t.inputSchema.properties.options.properties.dry_run.default = false;
      t.inputSchema.properties.options.properties.replicas.maximum = 10;
    });
    const e = modified(deployService, after);
    const w = change(e, "inputSchema.properties.options.properties.webhook", "property added");
    expect(w.sensitive).toEqual(["url-like name"]);
    const dflt = change(e, "inputSchema.properties.options.properties.dry_run", "default changed");
    expect(dflt).toMatchObject({ before: true, after: false, classification: "expands" });
    const max = change(e, "inputSchema.properties.options.properties.replicas", "maximum loosened");
    expect(max).toMatchObject({ before: 3, after: 10, classification: "expands" });
  });

  it("bounds, pattern, additionalProperties and type move in both directions", () => {
    const looser = edit(repoSearch, (t) => {
      t.inputSchema.properties.query.maxLength = 1000;
      t.inputSchema.properties.limit.minimum = 0;
      t.inputSchema.additionalProperties = true;
    });
    const e = modified(repoSearch, looser);
    expect(change(e, "inputSchema.properties.query", "maxLength loosened").classification).toBe("expands");
    expect(change(e, "inputSchema.properties.limit", "minimum loosened").classification).toBe("expands");
    // absent already meant open: stating it is cosmetic
    expect(
      change(e, "inputSchema.additionalProperties", "additionalProperties made explicit").classification,
    ).toBe("cosmetic");

    const closed = edit(deployService, (t) => {
      t.inputSchema.additionalProperties = true;
      t.inputSchema.properties.options.additionalProperties = { type: "string" };
    });
    const o = modified(deployService, closed);
    expect(change(o, "inputSchema.additionalProperties", "additionalProperties opened").classification).toBe(
      "expands",
    );
    expect(
      change(o, "inputSchema.properties.options.additionalProperties", "additionalProperties opened")
        .classification,
    ).toBe("expands");
    expect(modified(closed, deployService).classification).toBe("narrows");

    const pattern = edit(createBranch, (t) => {
      t.inputSchema.properties.branch.pattern = "^.+$";
    });
    expect(
      change(modified(createBranch, pattern), "inputSchema.properties.branch", "pattern changed")
        .classification,
    ).toBe("expands");
    const noPattern = edit(createBranch, (t) => {
      delete t.inputSchema.properties.branch.pattern;
    });
    expect(
      change(modified(createBranch, noPattern), "inputSchema.properties.branch", "pattern loosened")
        .classification,
    ).toBe("expands");
    expect(modified(noPattern, createBranch).classification).toBe("narrows");

    const widened = edit(repoSearch, (t) => {
      t.inputSchema.properties.limit.type = ["integer", "string"];
    });
    expect(
      change(modified(repoSearch, widened), "inputSchema.properties.limit", "type widened").classification,
    ).toBe("expands");
    const num = edit(repoSearch, (t) => {
      t.inputSchema.properties.limit.type = "number";
    });
    expect(
      change(modified(repoSearch, num), "inputSchema.properties.limit", "type widened").classification,
    ).toBe("expands");
    expect(
      change(modified(num, repoSearch), "inputSchema.properties.limit", "type narrowed").classification,
    ).toBe("narrows");
  });

  it("a property removed expands (its constraint is gone) unless additionalProperties is false; a default added or removed expands", () => {
    const fewer = edit(repoSearch, (t) => {
      delete t.inputSchema.properties.limit;
    });
    expect(
      change(
        modified(repoSearch, fewer),
        "inputSchema.properties.limit",
        "property removed (now unconstrained)",
      ).classification,
    ).toBe("expands");
    expect(modified(repoSearch, fewer).classification).toBe("expands");
    const closed = edit(repoSearch, (t) => {
      t.inputSchema.additionalProperties = false;
    });
    const closedFewer = edit(closed, (t) => {
      delete t.inputSchema.properties.limit;
    });
    // closed, the property's values are refused now; but limit had a default, which every call
    // sent: the calls now reach the server without it (its own default decides), so it expands
    expect(modified(closed, closedFewer).classification).toBe("expands");
    expect(
      change(
        modified(closed, closedFewer),
        "inputSchema",
        "inputSchema fills other defaults into a call (at /properties/limit)",
      ).classification,
    ).toBe("expands");
    // a property without a default, removed from a closed object: narrows
    const closedNoDefault = edit(closed, (t) => {
      delete t.inputSchema.properties.limit.default;
    });
    const closedNoDefaultFewer = edit(closedNoDefault, (t) => {
      delete t.inputSchema.properties.limit;
    });
    expect(modified(closedNoDefault, closedNoDefaultFewer).classification).toBe("narrows");
    const noDefault = edit(repoSearch, (t) => {
      delete t.inputSchema.properties.limit.default;
    });
    expect(
      change(modified(repoSearch, noDefault), "inputSchema.properties.limit", "default removed")
        .classification,
    ).toBe("expands");
    expect(
      change(modified(noDefault, repoSearch), "inputSchema.properties.limit", "default added").classification,
    ).toBe("expands");
  });

  it("outputSchema changes are diffed with the same rules", () => {
    const withOut = edit(readIssue, (t) => {
      t.outputSchema = { type: "object", properties: { title: { type: "string" } } };
    });
    const more = edit(withOut, (t) => {
      t.outputSchema.properties.private_notes = { type: "string" };
    });
    expect(change(modified(readIssue, withOut), "outputSchema", "outputSchema added").classification).toBe(
      "expands",
    );
    expect(
      change(modified(withOut, more), "outputSchema.properties.private_notes", "property added")
        .classification,
    ).toBe("expands");
  });

  it("execution, icons, _meta and unknown fields expand", () => {
    for (const [k, v] of [
      ["execution", { taskSupport: "optional" }],
      ["icons", [{ src: "https://example.com/i.png" }]],
      ["_meta", { "vendor/x": 1 }],
      ["somethingNew", true],
    ] as const) {
      const after = edit(readIssue, (t) => {
        t[k] = v;
      });
      const e = modified(readIssue, after);
      expect(e.classification).toBe("expands");
      expect(e.changes[0]?.change).toBe(`field ${k} added`);
    }
  });

  it("title changes follow the description rule", () => {
    const cosmetic = edit(readIssue, (t) => {
      t.title = " Read  issue ";
    });
    expect(modified(readIssue, cosmetic).classification).toBe("cosmetic");
    const worded = edit(readIssue, (t) => {
      t.title = "Read and close issue";
    });
    const e = modified(readIssue, worded);
    expect(change(e, "title", "title changed").newEffects).toEqual(["close"]);
    expect(e.classification).toBe("expands");
  });

  it("junk schemas never throw and count as expanding", () => {
    const junk: unknown[] = [
      null,
      3,
      "object",
      [1, 2],
      true,
      false,
      { $ref: "#/x" },
      { type: 7 },
      { properties: [] },
    ];
    for (const a of junk) {
      for (const b of junk) {
        const ta = { name: "t", inputSchema: a } as Tool;
        const tb = { name: "t", inputSchema: b } as Tool;
        const d = diffCatalogs([ta], [tb]);
        if (JSON.stringify(a) === JSON.stringify(b)) expect(d.entries).toEqual([]);
        else {
          expect(d.entries).toHaveLength(1);
          // every change here is unprovable, except a valid schema closed to `false`
          const valid = typeof a === "boolean" || (typeof a === "object" && a !== null && !Array.isArray(a));
          expect(d.entries[0]?.classification).toBe(valid && b === false ? "narrows" : "expands");
        }
      }
    }
  });

  it("lists with non-tools, duplicates and odd names are tolerated", () => {
    const before = [readIssue, null, 5, { name: 7 }, { name: "__proto__", x: 1 }] as unknown as Tool[];
    const after = [
      readIssue,
      readIssue,
      { name: "__proto__", x: 2 },
      { name: "constructor" },
    ] as unknown as Tool[];
    const d = diffCatalogs(before, after);
    expect(d.entries.map((e) => [e.kind, e.tool, e.classification])).toEqual([
      ["added", "constructor", "expands"],
      ["modified", "__proto__", "expands"],
      // two copies of one definition are one tool: said, cosmetic
      ["modified", "read_issue", "cosmetic"],
    ]);
    expect(d.entries[2]?.changes.map((c) => c.change)).toEqual([
      "listed 1 time → 2 times (the same definition each time)",
    ]);
  });

  it("a classification is the strongest of its changes", () => {
    const mixed = edit(deployService, (t) => {
      t.inputSchema.properties.environment.enum = ["dev"]; // narrows
      t.description = "Deploy a service to  an environment. "; // cosmetic
    });
    expect(modified(deployService, mixed).classification).toBe("narrows");
    const plus = edit(mixed, (t) => {
      t.inputSchema.properties.region = { type: "string" }; // expands
    });
    expect(modified(deployService, plus).classification).toBe("expands");
  });

  it("identical schemas under different names are rename candidates; unrelated ones are not", () => {
    const renamed = edit(deleteEnvironment, (t) => {
      t.name = "remove_environment";
    });
    const d = diffCatalogs([deleteEnvironment, readIssue], [renamed, readIssue]);
    expect(d.renameCandidates).toEqual([
      { from: "delete_environment", to: "remove_environment", similarity: "input schema identical" },
    ]);
    const u = diffCatalogs([deleteEnvironment], [postComment]);
    expect(u.renameCandidates).toEqual([]);
    expect(u.entries.every((e) => e.renameCandidate === undefined)).toBe(true);
  });

  it("renderDiff escapes terminal control characters from the server", () => {
    const evil = edit(readIssue, (t) => {
      t.description = "Read one issue\u001b[2J\u001b[31m and \u202eevil";
    });
    const text = renderDiff(diffCatalogs([readIssue], [evil]));
    expect(text).not.toContain("\u001b");
    expect(text).not.toContain("\u202e");
    expect(text).toContain("\\u001b[2J");
  });

  it("renderDiff says when nothing changed", () => {
    expect(renderDiff(diffCatalogs([readIssue], [readIssue]), { fromRevision: 3, toRevision: 3 })).toBe(
      "catalog revision 3 → 3: no tool changed\n",
    );
  });

  it("a default under a secret-like property name is shown redacted, in the text and in the diff's values", () => {
    const withDefault = (v: string): Tool => ({
      name: "login",
      inputSchema: { type: "object", properties: { password: { type: "string", default: v } } },
    });
    const added = diffCatalogs([readIssue], [readIssue, withDefault("hunter-default-42")]);
    const changed = diffCatalogs([withDefault("hunter-old-41")], [withDefault("hunter-default-42")]);
    // still a change the human is told of, only without the values
    expect(entry(changed, "login").changes.map((c) => c.change)).toContain("default changed");
    expect(renderDiff(changed)).toContain('password: default "[redacted]" → "[redacted]"');
    for (const d of [added, changed])
      for (const shown of [renderDiff(d), JSON.stringify(d)]) {
        expect(shown).not.toContain("hunter-default-42");
        expect(shown).not.toContain("hunter-old-41");
      }
    expect(renderCatalog(snapshotOf([withDefault("hunter-default-42")], 1), 1)).not.toContain(
      "hunter-default-42",
    );
  });

  it("a schema shown whole in a change keeps the default, const and examples of its secret-like properties redacted", () => {
    const secret = {
      type: "string",
      default: "hunter-default-42",
      const: "hunter-const-45",
      examples: ["hunter-ex-43"],
    };
    const obj = { type: "object", properties: { api_key: secret, user: { type: "string", default: "bob" } } };
    const tool = (inputSchema?: unknown): Tool =>
      (inputSchema === undefined ? { name: "t" } : { name: "t", inputSchema }) as Tool;
    // [schema before, schema after, the change that shows the new part whole]
    const cases: [unknown, unknown, string][] = [
      [undefined, obj, "inputSchema added"],
      [
        { type: "object", anyOf: [{ required: [] }] },
        { type: "object", anyOf: [{ required: [] }, obj] },
        "anyOf branch added",
      ],
      [{ type: "array" }, { type: "array", items: obj }, "items added (constrains)"],
      [{ type: "object" }, { type: "object", $defs: { cred: obj } }, "$defs entry added"],
      [
        { type: "object" },
        { type: "object", patternProperties: { "^x": obj } },
        "patternProperties entry added",
      ],
      [{ type: "object", properties: 3 }, obj, "properties changed (unrecognized)"],
      [5, obj, "schema changed (not a JSON Schema object or boolean)"],
    ];
    for (const [before, after, change] of cases) {
      const d = diffCatalogs([tool(before)], [tool(after)]);
      const changes = entry(d, "t").changes;
      expect(
        changes.map((c) => c.change),
        change,
      ).toContain(change);
      for (const shown of [JSON.stringify(d), renderDiff(d)]) {
        expect(shown, change).not.toMatch(/hunter-(default|const|ex)/);
        expect(shown, change).toContain("bob");
      }
    }
  });

  it("a default, const or examples in a subschema of a secret-like property are shown redacted", () => {
    const schema = (v: string): Tool => ({
      name: "t",
      inputSchema: {
        type: "object",
        properties: {
          token: { anyOf: [{ type: "string", default: `hunter-${v}-1` }, { type: "null" }] },
          api_keys: { type: "array", items: { type: "string", const: `hunter-${v}-2` } },
          "db password": { type: "array", prefixItems: [{ examples: [`hunter-${v}-3`] }] },
          auth: { type: "object", properties: { user: { default: `hunter-${v}-4` } } },
          config: { type: "object", properties: { user: { default: `bob-${v}` } } },
        },
      },
    });
    const d = diffCatalogs([schema("old")], [schema("new")]);
    const changes = entry(d, "t").changes;
    expect(changes.map((c) => [c.path, c.change])).toEqual(
      expect.arrayContaining([
        ["inputSchema.properties.token.anyOf[0]", "default changed"],
        ["inputSchema.properties.api_keys.items", "const changed"],
        ['inputSchema.properties["db password"].prefixItems[0]', "examples changed"],
        ["inputSchema.properties.auth.properties.user", "default changed"],
        ["inputSchema.properties.config.properties.user", "default changed"],
      ]),
    );
    for (const shown of [JSON.stringify(d), renderDiff(d)]) {
      expect(shown).not.toContain("hunter");
      expect(shown).toContain("bob-old");
      expect(shown).toContain("bob-new");
    }
  });

  it("a definition that a secret-like property takes by `$ref` has its values shown redacted", () => {
    const schema = (v: string, more: Record<string, unknown> = {}): Tool => ({
      name: "t",
      inputSchema: {
        type: "object",
        properties: {
          api_key: { $ref: "#/$defs/K" },
          token: { allOf: [{ $ref: "#/definitions/T" }] },
          session: { $ref: "#/properties/user" },
          user: { type: "string", default: `hunter-${v}-3` },
          mode: { $ref: "#/$defs/Plain" },
        },
        $defs: {
          K: { type: "string", default: `hunter-${v}-1`, examples: [`hunter-${v}-4`] },
          Plain: { type: "string", default: `bob-${v}` },
          ...more,
        },
        definitions: { T: { anyOf: [{ $ref: "#/definitions/U" }] }, U: { const: `hunter-${v}-2` } },
      },
    });
    const d = diffCatalogs([schema("old")], [schema("new")]);
    expect(entry(d, "t").changes.map((c) => [c.path, c.change])).toEqual(
      expect.arrayContaining([
        ["inputSchema.$defs.K", "default changed"],
        ["inputSchema.$defs.K", "examples changed"],
        ["inputSchema.definitions.U", "const changed"],
        ["inputSchema.properties.user", "default changed"],
        ["inputSchema.$defs.Plain", "default changed"],
      ]),
    );
    // a definition added whole (K2, through K), and a definition's default removed
    const added = diffCatalogs(
      [schema("old")],
      [schema("old", { K: { $ref: "#/$defs/K2" }, K2: { type: "string", default: "hunter-new-5" } })],
    );
    expect(entry(added, "t").changes.map((c) => c.change)).toContain("$defs entry added");
    const removed = diffCatalogs([schema("old")], [schema("new", { K: { type: "string" } })]);
    expect(entry(removed, "t").changes.map((c) => c.change)).toContain("default removed");
    for (const x of [d, added, removed])
      for (const shown of [JSON.stringify(x), renderDiff(x)]) expect(shown).not.toContain("hunter");
    // a definition no secret-like property refers to is shown as it is
    for (const shown of [JSON.stringify(d), renderDiff(d)]) {
      expect(shown).toContain("bob-old");
      expect(shown).toContain("bob-new");
    }
    // (the text display, too: `user` is the schema `session` takes)
    const catalog = renderCatalog(snapshotOf([schema("new")], 1), 1);
    expect(catalog).toContain('user: string, default "[redacted]"');
    expect(catalog).not.toContain("hunter");
  });

  it("a definition that a secret-like property takes by a `$ref` to the schema's own `$id` has its values shown redacted", () => {
    const schema = (v: string): Tool => ({
      name: "t",
      inputSchema: {
        $id: "https://x.example/t.json",
        type: "object",
        properties: {
          api_key: { $ref: "https://x.example/t.json#/$defs/K" },
          token: { $ref: "inner.json" },
          mode: { $ref: "https://x.example/t.json#/$defs/Plain" },
        },
        $defs: {
          K: { type: "string", default: `hunter-${v}-1` },
          Inner: { $id: "inner.json", type: "string", const: `hunter-${v}-2` },
          Plain: { type: "string", default: `bob-${v}` },
        },
      },
    });
    const d = diffCatalogs([schema("old")], [schema("new")]);
    expect(entry(d, "t").changes.map((c) => [c.path, c.change])).toEqual(
      expect.arrayContaining([
        ["inputSchema.$defs.K", "default changed"],
        ["inputSchema.$defs.Inner", "const changed"],
        ["inputSchema.$defs.Plain", "default changed"],
      ]),
    );
    const catalog = renderCatalog(snapshotOf([schema("new")], 1), 1);
    for (const shown of [JSON.stringify(d), renderDiff(d), catalog]) expect(shown).not.toContain("hunter");
    for (const shown of [JSON.stringify(d), renderDiff(d)]) expect(shown).toContain("bob-new");
  });

  it("a definition that a secret-like property reaches by `$dynamicRef` or `$recursiveRef` has its values shown redacted", () => {
    // 2020-12: a generic list whose items the schema that uses it gives
    const dynamic = (v: string): Tool => ({
      name: "dynamic",
      inputSchema: {
        type: "object",
        properties: { api_keys: { $ref: "#/$defs/KeyList" }, mode: { $ref: "#/$defs/Plain" } },
        $defs: {
          List: {
            $id: "list.json",
            type: "array",
            items: { $dynamicRef: "#item" },
            $defs: { I: { $dynamicAnchor: "item" } },
          },
          KeyList: {
            $id: "key-list.json",
            $ref: "list.json",
            $defs: { Key: { $dynamicAnchor: "item", default: `hunter-${v}-1` } },
          },
          Plain: { type: "string", default: `bob-${v}` },
        },
      },
    });
    // 2019-09: a tree of tokens; `$recursiveRef: "#"` takes the resource it is in, and the
    // outermost one with `$recursiveAnchor: true`: all of it is the token's
    const recursive = (v: string): Tool => ({
      name: "recursive",
      inputSchema: {
        $recursiveAnchor: true,
        type: "object",
        properties: { token: { type: "array", items: { $recursiveRef: "#" } } },
        $defs: { Node: { examples: [`hunter-${v}-2`] } },
      },
    });
    const d = diffCatalogs([dynamic("old"), recursive("old")], [dynamic("new"), recursive("new")]);
    expect(entry(d, "dynamic").changes.map((c) => [c.path, c.change])).toEqual(
      expect.arrayContaining([
        ["inputSchema.$defs.KeyList.$defs.Key", "default changed"],
        ["inputSchema.$defs.Plain", "default changed"],
      ]),
    );
    expect(entry(d, "recursive").changes.map((c) => [c.path, c.change])).toEqual([
      ["inputSchema.$defs.Node", "examples changed"],
    ]);
    const catalog = renderCatalog(snapshotOf([dynamic("new"), recursive("new")], 1), 1);
    for (const shown of [JSON.stringify(d), renderDiff(d), catalog]) expect(shown).not.toContain("hunter");
    // (a `$dynamicRef` makes the whole schema the property's: when no dynamic anchor of its name
    // is in scope, ajv calls the schema it is compiling, whatever the fragment says)
    for (const shown of [JSON.stringify(d), renderDiff(d)]) expect(shown).not.toContain("bob");
  });

  it("a const or examples under a secret-like property name are shown redacted; its enum is shown", () => {
    const login = (c: string, ex: string[], modes: string[]): Tool => ({
      name: "login",
      inputSchema: {
        type: "object",
        properties: {
          client_secret: { type: "string", const: c, examples: ex },
          auth_mode: { type: "string", enum: modes },
        },
      },
    });
    const before = login("hunter-const-41", ["hunter-ex-41"], ["oauth"]);
    const after = login("hunter-const-42", ["hunter-ex-42", "hunter-ex-43"], ["oauth", "basic"]);
    const added = diffCatalogs([readIssue], [readIssue, after]);
    const changed = diffCatalogs([before], [after]);
    // still changes the human is told of, only without the values
    const changes = entry(changed, "login").changes;
    expect(changes.find((c) => c.change === "const changed")).toMatchObject({
      before: "[redacted]",
      after: "[redacted]",
    });
    expect(changes.find((c) => c.change === "examples changed")).toMatchObject({
      before: ["[redacted]"],
      after: ["[redacted]", "[redacted]"],
    });
    // the enum is the choices every caller has: shown, and its widening with it
    expect(changes.find((c) => c.change === "enum widened")).toMatchObject({
      before: ["oauth"],
      after: ["oauth", "basic"],
    });
    const shownAdded = JSON.stringify(entry(added, "login").changes);
    expect(shownAdded).toContain('"const":"[redacted]","examples":["[redacted]","[redacted]"]');
    expect(shownAdded).toContain('"enum":["oauth","basic"]');
    const catalog = renderCatalog(snapshotOf([after], 1), 1);
    expect(catalog).toContain('client_secret: string, const "[redacted]"');
    expect(catalog).toContain("auth_mode: string (enum oauth|basic)");
    for (const shown of [
      renderDiff(added),
      renderDiff(changed),
      JSON.stringify(added),
      JSON.stringify(changed),
      catalog,
    ])
      expect(shown).not.toMatch(/hunter-(const|ex)/);
  });
});
