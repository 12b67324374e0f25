/** Which subschemas a secret-named property takes by reference, in one schema document. */

import { isSecretName } from "./names.js";
import { isSchemaValue, schemaOwner } from "./schemaValues.js";

/**
 * The subschemas that a property named like a secret takes by reference, each mapped to that
 * property's name: every object of a definition reached from anywhere under such a property,
 * including through its subschemas, and transitively from there (`{"api_key": {"$ref":
 * "#/$defs/K"}}` makes `K`'s default the api_key's: redactSchemaDefaults, and the diff's values,
 * src/catalog/valueDiff.ts), by
 *   - `$ref` to a JSON pointer (`#/$defs/K`, `#/definitions/K`, its `%` and `~0`/`~1` escapes
 *     decoded) or an anchor (`#name`: `$anchor`, `$dynamicAnchor`, a draft-07 `$id: "#name"`),
 *     in the same document: the reference's own (`#…`), or one named by a URI that resolves,
 *     against the `$id`s around the reference, to the `$id` of the schema or of a subschema of
 *     the document (`https://x.example/s.json#/$defs/K` under `"$id": "https://x.example/s.json"`,
 *     `k.json` under a subschema's `"$id": "k.json"`). Any other URI is another document's:
 *     never fetched, never followed;
 *   - `$dynamicRef` (2020-12) as `$ref`, and, when it names an anchor, to every anchor of that
 *     name anywhere in the document, whatever its URI: the dynamic scope decides at evaluation
 *     time which one it lands on, and any could be; and to the roots `#` names (ajv calls the
 *     function it is compiling when no dynamic anchor of that name is in scope, whatever the
 *     fragment says, and that is the schema the reference is in or one around it);
 *   - `$recursiveRef` (2019-09) as `$ref`, and to every schema of the document with
 *     `"$recursiveAnchor": true`.
 * A document is a tool's `inputSchema` or `outputSchema` (each compiled on its own: ajv never
 * registers one tool's schema for another's references), or the value itself where it is none
 * (a schema given alone). A list of tools is no schema: each of its items is read as if it were
 * given alone, so that no tool's reference reaches another tool (a `"$ref": "#"` in one tool's
 * input made every tool's defaults its own). A `#…` reference is resolved against its
 * document's root and the nearest subschema with an `$id` around it, and against the value too
 * where what that names is in the same document (`#/inputSchema/$defs/K` in a tool given whole);
 * an anchor, an `$id` or a `$recursiveAnchor` is looked for in the same document (from outside
 * every input and output schema, in all of them). Both may take more than a validator would,
 * never less. Each object is scanned under a secret-like name at most once (cycles end), each URI
 * reference, anchor name and the `$recursiveAnchor` schemas followed once a document, so this is
 * linear in the value's size.
 */
export function secretRefTargets(value: unknown): Map<object, string> {
  if (Array.isArray(value)) {
    // a list of tools: each one alone (an object in two of them is the first one's)
    const all = new Map<object, string>();
    for (const x of value) for (const [o, name] of secretRefTargets(x)) if (!all.has(o)) all.set(o, name);
    return all;
  }
  const owners = new Map<object, string>();
  const seen = new Map<object, Where>(); // where each object was first met
  const refs: [string, string, string, Where][] = []; // [keyword, reference, secret-like owner, where]
  let documents = 0;
  const newDocument = (root: unknown, top: Doc | null): Doc => ({
    root,
    top,
    // a document's own address, for `$id`s relative to nothing (no one can name it)
    base: `https://${documents++}.document.portcullis.invalid/`,
    anchors: new Map(),
    recursiveAnchors: [],
    resources: new Map(),
    anchorsFollowed: new Set(),
    urisFollowed: new Set(),
    recursiveFollowed: false,
  });
  const schemaDocuments = new Map<object, Doc>(); // each input or output schema's
  const addTo = <K>(map: Map<K, object[]>, key: K, v: object): void => {
    const list = map.get(key);
    if (list === undefined) map.set(key, [v]);
    else list.push(v);
  };
  /** What a schema of `doc` names is found from its document and from the value's (`top`). */
  const register = (doc: Doc, add: (d: Doc) => void): void => {
    add(doc);
    if (doc.top !== null) add(doc.top);
  };
  const scan = (v: unknown, owner: string | null, at: Where): void => {
    if (typeof v !== "object" || v === null) return;
    const secret = owner !== null && isSecretName(owner);
    if (secret) {
      if (owners.has(v)) return;
      owners.set(v, owner);
    }
    const first = !seen.has(v);
    if (first) seen.set(v, at);
    if (Array.isArray(v)) {
      for (const x of v) scan(x, owner, at);
      return;
    }
    const o = v as Record<string, unknown>;
    for (const k of ["$anchor", "$dynamicAnchor", "$id"]) {
      const a = Object.hasOwn(o, k) ? o[k] : undefined;
      if (typeof a !== "string") continue;
      const hash = a.indexOf("#");
      // (`$id: "#name"` and `$id: "https://…#name"` name an anchor, as drafts 6 and 7 read it)
      const name = k === "$id" ? (hash === -1 ? "" : a.slice(hash + 1)) : a;
      if (first && name !== "") register(at.doc, (d) => addTo(d.anchors, name, v));
      if (k === "$id" && hash !== 0) {
        const base = resolvedUri(a, at.base);
        if (base !== null && first) register(at.doc, (d) => addTo(d.resources, base, v));
        at = { doc: at.doc, idRoot: v, base: base ?? at.base };
      }
    }
    if (first && Object.hasOwn(o, "$recursiveAnchor") && o.$recursiveAnchor === true)
      register(at.doc, (d) => d.recursiveAnchors.push(v));
    for (const [k, x] of Object.entries(o)) {
      if (isSchemaValue(k) || k === "enum") continue; // values, not schemas
      if (k === "$ref" || k === "$dynamicRef" || k === "$recursiveRef") {
        if (secret && typeof x === "string") refs.push([k, x, owner, at]);
      } else if (k === "properties" && typeof x === "object" && x !== null && !Array.isArray(x)) {
        for (const [name, sub] of Object.entries(x)) scan(sub, schemaOwner(owner, name), at);
      } else if (
        (k === "inputSchema" || k === "outputSchema") &&
        at.doc.top === null && // (in a schema, a definition may have that name)
        typeof x === "object" &&
        x !== null
      ) {
        let doc = schemaDocuments.get(x);
        if (doc === undefined) {
          doc = newDocument(x, at.doc);
          schemaDocuments.set(x, doc);
        }
        scan(x, owner, { doc, idRoot: null, base: doc.base });
      } else scan(x, owner, at);
    }
  };
  // a target is scanned where it was met (its `$id`s, its document), not where the reference was
  const whereMet = (t: unknown): Where | undefined =>
    typeof t === "object" && t !== null ? seen.get(t) : undefined;
  const scanTarget = (t: unknown, owner: string, at: Where): void => {
    scan(t, owner, whereMet(t) ?? at);
  };
  const outer = newDocument(value, null);
  scan(value, null, { doc: outer, idRoot: null, base: outer.base });
  // a worklist, not recursion: a chain of thousands of definitions must not exhaust the stack
  for (let i = 0; i < refs.length; i++) {
    const [keyword, ref, owner, at] = refs[i]!;
    const doc = at.doc;
    if (keyword === "$recursiveRef" && !doc.recursiveFollowed) {
      doc.recursiveFollowed = true;
      for (const t of doc.recursiveAnchors) scanTarget(t, owner, at);
    }
    // (ajv calls the function it is compiling when no dynamic anchor of that name is in scope,
    // whatever the fragment says: the schema the reference is in, or one around it: its
    // document, the input or output schema or the value given alone, and the nearest subschema
    // with an `$id`)
    if (keyword === "$dynamicRef") for (const d of [doc.root, at.idRoot]) scanTarget(d, owner, at);
    const hash = ref.indexOf("#");
    const uri = hash === -1 ? ref : ref.slice(0, hash);
    let fragment: string;
    try {
      fragment = hash === -1 ? "" : decodeURIComponent(ref.slice(hash + 1));
    } catch {
      continue;
    }
    // [a root the fragment is read in, whether what it names must be in the same document]
    let roots: [unknown, boolean][];
    if (uri === "")
      roots = [
        [doc.root, false],
        [at.idRoot, false],
        [value, true], // (a tool given whole: `#/inputSchema/…`, never into another document)
      ];
    else {
      const resolved = resolvedUri(uri, at.base);
      if (resolved === null || doc.urisFollowed.has(`${resolved}#${fragment}`)) roots = [];
      else {
        doc.urisFollowed.add(`${resolved}#${fragment}`);
        // none: another document's, never followed
        roots = (doc.resources.get(resolved) ?? []).map((r) => [r, false]);
      }
    }
    if (fragment === "" || fragment.startsWith("/")) {
      for (const [r, sameDocument] of roots) {
        if (r === null || r === undefined) continue;
        const t = pointed(r, fragment);
        if (sameDocument && whereMet(t)?.doc !== doc) continue;
        scanTarget(t, owner, whereMet(r) ?? at);
      }
    } else if ((roots.length > 0 || keyword === "$dynamicRef") && !doc.anchorsFollowed.has(fragment)) {
      doc.anchorsFollowed.add(fragment);
      for (const t of doc.anchors.get(fragment) ?? []) scanTarget(t, owner, at);
    }
  }
  return owners;
}

/** A schema document: a tool's input or output schema, or the value given (secretRefTargets). */
interface Doc {
  root: unknown;
  /** the value's document, for an input or output schema in it; null for the value's own */
  top: Doc | null;
  /** its made-up address, for `$id`s relative to nothing */
  base: string;
  anchors: Map<string, object[]>;
  /** `"$recursiveAnchor": true` */
  recursiveAnchors: object[];
  /** an `$id` resolved (no fragment) → its schemas */
  resources: Map<string, object[]>;
  /** (every object with one is scanned once for all) */
  anchorsFollowed: Set<string>;
  urisFollowed: Set<string>;
  recursiveFollowed: boolean;
}

/** Where a schema is: its document, what a `#…` reference in it is resolved against, its base URI. */
interface Where {
  doc: Doc;
  /** the nearest subschema with an `$id`, if any */
  idRoot: object | null;
  /** the `$id`s above it resolved, or its document's own made-up address */
  base: string;
}

/**
 * `uri` resolved against `base`, without its fragment, normalised as a URL parser writes it
 * (`HTTPS://X.example:443/s.json` is `https://x.example/s.json`); null when it is none. Nothing
 * is fetched.
 */
function resolvedUri(uri: string, base: string): string | null {
  try {
    const u = new URL(uri, base === "" ? undefined : base);
    u.hash = "";
    return u.href;
  } catch {
    return null;
  }
}

/** What the JSON pointer `pointer` (`/a/b~1c`, decoded from its URI fragment) names in `doc`. */
function pointed(doc: unknown, pointer: string): unknown {
  if (pointer === "") return doc;
  let at = doc;
  for (const raw of pointer.slice(1).split("/")) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (typeof at !== "object" || at === null) return undefined;
    if (Array.isArray(at)) {
      if (!/^(?:0|[1-9][0-9]*)$/.test(key)) return undefined;
      at = at[Number(key)];
    } else at = Object.hasOwn(at, key) ? (at as Record<string, unknown>)[key] : undefined;
  }
  return at;
}
