/**
 * An upper bound, computed from the schema alone, on how many subschemas ajv checks one value of
 * a call's arguments against; a tool whose bound is over MAX_CHECKS_PER_VALUE is refused.
 *
 * ajv does not remember what it checked: a `$ref` is a function called anew at each use, and
 * with `allErrors` every branch of `anyOf`, `oneOf` and `allOf` runs on a value that fails. So
 * `d0: {anyOf: [{$ref: d1}, {$ref: d1}]}`, `d1` likewise, and so on, checks one value 2^n times:
 * 22 such definitions (1.5 KB of schema) held the gateway's event loop 44 s for `{"x": 1}`, and
 * `allOf` kept every failure's error object until the process ran out of memory. The same
 * doubling happens through the arguments' own nesting (an `anyOf` of two object shapes each
 * reaching `{$ref: "#"}` under the same property doubles at each level of the call).
 *
 * The bound counts, for one value at depth k under the arguments, the subschemas that can be
 * checked against it: a schema counts one, plus what its in-place subschemas count for the same
 * value (`allOf`, `anyOf`, `oneOf`, `not`, `if` and the larger of `then`/`else`, `$ref`, the
 * largest function a `$dynamicRef` or `$recursiveRef` may call, `dependentSchemas`), plus, for a value one level down, what its child keywords count there
 * (`properties` of that name, every `patternProperties`, `additionalProperties` when the name is
 * not a property; for an array item, the larger of `items` and `prefixItems`, and `contains`).
 * An object value and an array value are counted apart, and an object's members by name, so an
 * `anyOf` of an array shape and an object shape, or of object shapes recursing under different
 * property names, does not add up. The count is an upper bound whatever the arguments, up to the
 * deepest nesting a message may have; a schema without `$ref` never counts more than its own
 * nodes, so every tool within the size limit that repeats nothing is accepted. A check then costs
 * at most that many subschemas per value of the call: linear in the call's size.
 */
import { MAX_MESSAGE_DEPTH } from "../util/jsonDepth.js";

/** The most subschemas one value of the arguments may be checked against (the schema node limit). */
export const MAX_CHECKS_PER_VALUE = 2000;

/**
 * Where the bound first passes the limit and what it reached there; or a loop of in-place
 * references (a schema reaching itself with no step into the arguments: checked without end), or
 * a reference this count could not follow (ajv did: then the count would not be an upper bound).
 */
export type CostOverrun =
  | { at: string; checks: number; depth: number }
  | { at: string; loop: true }
  | { at: string; unresolved: true };

/** Finds a schema document ajv knows by URI (the meta-schemas); undefined when none. */
export type SchemaLookup = (uri: string) => unknown;

/** One schema (object or boolean) of the document, with what ajv evaluates from it. */
interface Node {
  at: string;
  /** In-place parts, summed; each part is the largest of its alternatives ($ref: one, then/else: two). */
  inPlace: Node[][];
  /** Parts checked on each item of an array value, summed (each the largest of its alternatives). */
  itemParts: Node[][];
  props: Map<string, Node>;
  /** Checked on every member of an object value, whatever its name. */
  anyMember: Node[];
  /** Checked on a member not named in `props`. */
  otherMember: Node[];
  /** Checked on each member's name (a string: nothing below it). */
  names: Node | null;
  leaf: boolean;
}

/** What a node counts for one value k levels below: in an array, in an object under a name, or under another name. */
interface Level {
  arr: number;
  other: number;
  named: Map<string, number>;
}

const IN_PLACE_LISTS = ["allOf", "anyOf", "oneOf"];
const IN_PLACE_ONE = ["not", "if"];
const CONTAINERS = ["$defs", "definitions"];

class Graph {
  readonly nodes: Node[] = [];
  /** By schema, then by the base URI its references resolve against (ajv may reach one schema under two). */
  private readonly byValue = new Map<unknown, Map<string, Node>>();
  /** Documents and anchors by URI, each with the base it sits in (before its own `$id`, which walk() takes). */
  private readonly resources = new Map<string, Located>();
  private readonly anchors = new Map<string, Located>();
  private readonly pending: { node: Node; value: Record<string, unknown>; base: string }[] = [];
  private readonly refs: { node: Node; ref: string; base: string }[] = [];
  /** Schemas with a `$dynamicRef` or `$recursiveRef`: where they lead is known once every function is. */
  private readonly dynamicRefs: Node[] = [];
  /** The schemas ajv compiles into a function of their own: the root, `$ref` targets, dynamic anchors. */
  private readonly functions = new Set<Node>();
  unresolved: string | null = null;

  constructor(private readonly lookup: SchemaLookup) {}

  /** The node of `value` under `base` (made, and its subschemas walked later, on first sight). */
  node(value: unknown, at: string, base: string): Node {
    let byBase = this.byValue.get(value);
    if (!byBase) {
      byBase = new Map();
      this.byValue.set(value, byBase);
    }
    const known = byBase.get(base);
    if (known) return known;
    const node: Node = {
      at,
      inPlace: [],
      itemParts: [],
      props: new Map(),
      anyMember: [],
      otherMember: [],
      names: null,
      leaf: typeof value !== "object" || value === null || Array.isArray(value),
    };
    byBase.set(base, node);
    this.nodes.push(node);
    if (!node.leaf) this.pending.push({ node, value: value as Record<string, unknown>, base });
    return node;
  }

  /** Walks every pending schema, then resolves the `$ref`s found (which may bring more documents). */
  build(root: unknown): Node {
    const base = "portcullis:///input-schema.json";
    this.index(root, base);
    const top = this.node(root, "", base);
    this.functions.add(top);
    for (;;) {
      while (this.pending.length > 0) {
        const p = this.pending.pop()!;
        this.walk(p.node, p.value, p.base);
      }
      const refs = this.refs.splice(0);
      if (refs.length === 0) break;
      for (const r of refs) {
        const target = this.resolve(r.ref, r.base);
        if (target === null) {
          this.unresolved ??= r.node.at;
          r.node.inPlace.push([]);
        } else {
          this.functions.add(target);
          r.node.inPlace.push([target]);
        }
      }
    }
    // ajv resolves neither `$dynamicRef` nor `$recursiveRef` by its URI: it calls the function of the
    // outermost dynamic anchor of that name met so far in the check, or else the function it is
    // compiling (the root, or the `$ref` target or anchor the keyword is inside). Any of them may run.
    // One node stands for "any of them", shared by every such reference: the work of the count
    // stays linear in the schema (a list of every function per reference would be quadratic). It
    // counts one more subschema than ajv checks: an over-count, on the safe side.
    if (this.dynamicRefs.length > 0) {
      const any = this.node(Symbol("any compiled function"), this.dynamicRefs[0]!.at, "");
      any.inPlace.push([...this.functions]);
      for (const n of this.dynamicRefs) n.inPlace.push([any]);
    }
    return top;
  }

  private walk(node: Node, s: Record<string, unknown>, outer: string): void {
    const base = typeof s.$id === "string" && !s.$id.startsWith("#") ? absolute(s.$id, outer) : outer;
    const sub = (v: unknown, key: string) => this.node(v, `${node.at}/${key}`, base);
    const has = (k: string) => Object.hasOwn(s, k);
    for (const k of IN_PLACE_LISTS) {
      const list = s[k];
      if (has(k) && Array.isArray(list))
        for (const [i, v] of list.entries()) node.inPlace.push([sub(v, `${k}/${i}`)]);
    }
    for (const k of IN_PLACE_ONE) if (has(k)) node.inPlace.push([sub(s[k], k)]);
    const branches = ["then", "else"].filter((k) => has(k) && has("if")).map((k) => sub(s[k], k));
    if (branches.length > 0) node.inPlace.push(branches);
    for (const k of ["dependentSchemas", "dependencies"]) {
      for (const [name, v] of members(s, k)) {
        if (!Array.isArray(v)) node.inPlace.push([sub(v, `${k}/${segment(name)}`)]);
      }
    }
    if (has("$ref") && typeof s.$ref === "string") this.refs.push({ node, ref: s.$ref, base });
    if (
      (has("$dynamicRef") && s.$dynamicRef !== undefined) ||
      (has("$recursiveRef") && s.$recursiveRef !== undefined)
    )
      this.dynamicRefs.push(node);
    if ((has("$dynamicAnchor") && typeof s.$dynamicAnchor === "string") || s.$recursiveAnchor === true)
      this.functions.add(node);
    // array items: `items` (or draft-07's tuple `items`) and `prefixItems` are alternatives for one item
    const itemAlternatives: Node[] = [];
    if (has("items")) {
      if (Array.isArray(s.items))
        for (const [i, v] of s.items.entries()) itemAlternatives.push(sub(v, `items/${i}`));
      else itemAlternatives.push(sub(s.items, "items"));
    }
    if (has("prefixItems") && Array.isArray(s.prefixItems))
      for (const [i, v] of s.prefixItems.entries()) itemAlternatives.push(sub(v, `prefixItems/${i}`));
    if (itemAlternatives.length > 0) node.itemParts.push(itemAlternatives);
    for (const k of ["additionalItems", "contains", "unevaluatedItems"])
      if (has(k)) node.itemParts.push([sub(s[k], k)]);
    for (const [name, v] of members(s, "properties"))
      node.props.set(name, sub(v, `properties/${segment(name)}`));
    for (const [p, v] of members(s, "patternProperties"))
      node.anyMember.push(sub(v, `patternProperties/${segment(p)}`));
    if (has("unevaluatedProperties"))
      node.anyMember.push(sub(s.unevaluatedProperties, "unevaluatedProperties"));
    if (has("additionalProperties"))
      node.otherMember.push(sub(s.additionalProperties, "additionalProperties"));
    if (has("propertyNames")) node.names = sub(s.propertyNames, "propertyNames");
    // definitions are not checked where they stand, only through $ref; walked so their pointers are known
    for (const k of CONTAINERS) for (const [name, v] of members(s, k)) sub(v, `${k}/${segment(name)}`);
  }

  /** Records every `$id`, `$anchor` and `$dynamicAnchor` of a document, as ajv resolves them. */
  private index(doc: unknown, base: string): void {
    const stack: { v: unknown; base: string }[] = [{ v: doc, base }];
    this.register(this.resources, withoutFragment(base), { value: doc, base });
    while (stack.length > 0) {
      const { v, base: outer } = stack.pop()!;
      if (typeof v !== "object" || v === null) continue;
      if (Array.isArray(v)) {
        for (const x of v) stack.push({ v: x, base: outer });
        continue;
      }
      const s = v as Record<string, unknown>;
      let b = outer;
      if (typeof s.$id === "string") {
        if (s.$id.startsWith("#"))
          this.register(this.anchors, `${withoutFragment(outer)}${s.$id}`, { value: s, base: outer });
        else {
          b = absolute(s.$id, outer);
          this.register(this.resources, withoutFragment(b), { value: s, base: outer });
        }
      }
      for (const k of ["$anchor", "$dynamicAnchor"])
        if (typeof s[k] === "string")
          this.register(this.anchors, `${withoutFragment(b)}#${s[k]}`, { value: s, base: outer });
      for (const [k, x] of Object.entries(s)) if (!DATA.has(k)) stack.push({ v: x, base: b });
    }
  }

  /**
   * Records a document or anchor by URI. Two schemas under one URI here may be two URIs to ajv,
   * which resolves a schema without `$id` against no base at all (`a/b` and `/a/b` are two
   * resources to it, one here under the base this count gives the tool's schema): a reference
   * would be followed to one while ajv checks the other. So the count cannot be trusted, and the
   * tool is refused (ajv refuses true duplicates itself).
   */
  private register(map: Map<string, Located>, uri: string, at: Located): void {
    const known = map.get(uri);
    if (known !== undefined && known.value !== at.value) this.unresolved ??= this.atOf(uri);
    else map.set(uri, at);
  }

  /** The schema a `$ref` reaches, under the base ajv compiles it with; null if none is found. */
  private resolve(ref: string, base: string): Node | null {
    let uri: string;
    try {
      uri = absolute(ref, base);
    } catch {
      return null;
    }
    const doc = withoutFragment(uri);
    const raw = uri.slice(doc.length + 1);
    const fragment = decodeFragment(raw);
    if (!this.resources.has(doc)) {
      const known = this.lookup(doc) ?? this.lookup(`${doc}#`);
      if (known === undefined) return null;
      this.index(known, doc);
    }
    const found =
      raw === "" || raw.startsWith("/")
        ? pointer(this.resources.get(doc), raw, doc)
        : this.anchors.get(`${doc}#${fragment}`);
    if (found === undefined || found.value === undefined) return null;
    return this.node(found.value, `${this.atOf(doc)}#${fragment}`, found.base);
  }

  /** A URI as the tool's author wrote it: without the base this count gives the tool's schema. */
  private atOf(doc: string): string {
    if (doc === "portcullis:///input-schema.json") return "";
    return doc.startsWith("portcullis:///") ? doc.slice("portcullis://".length) : doc;
  }
}

/** A schema and the base URI ajv resolves the references inside it against. */
interface Located {
  value: unknown;
  base: string;
}

/** Values, not schemas: nothing in them is indexed. */
const DATA = new Set(["const", "enum", "default", "examples"]);

function members(s: Record<string, unknown>, k: string): [string, unknown][] {
  const m = Object.hasOwn(s, k) ? s[k] : undefined;
  return typeof m === "object" && m !== null && !Array.isArray(m) ? Object.entries(m) : [];
}

function absolute(ref: string, base: string): string {
  return new URL(ref, base).href;
}

function withoutFragment(uri: string): string {
  const i = uri.indexOf("#");
  return i < 0 ? uri : uri.slice(0, i);
}

function decodeFragment(f: string): string {
  try {
    return decodeURIComponent(f);
  } catch {
    return f;
  }
}

/** Keys whose value's `$id` ajv does not take as a new base on the way down a pointer. */
const NO_SCOPE_CHANGE = new Set(["properties", "patternProperties", "enum", "dependencies", "definitions"]);

/**
 * The value at JSON Pointer `p` in `doc` (a URI fragment, still percent-encoded), and the base its
 * references resolve against: as ajv follows a pointer, every `$id` passed on the way (not the
 * target's own, which walk() takes) moves the base, even one inside a keyword this count does not
 * walk. Each segment is read as ajv reads it (pointerKey).
 */
function pointer(doc: Located | undefined, p: string, docUri: string): Located | undefined {
  if (doc === undefined || p === "") return doc;
  let v = doc.value;
  let base = docUri;
  const keys = p.split("/").slice(1);
  for (const [i, raw] of keys.entries()) {
    const key = pointerKey(raw);
    if (key === null) return undefined; // a bad percent escape: ajv cannot follow it either
    if (typeof v !== "object" || v === null || !Object.hasOwn(v, key)) return undefined;
    v = (v as Record<string, unknown>)[key];
    const id = typeof v === "object" && v !== null ? (v as Record<string, unknown>).$id : undefined;
    if (i < keys.length - 1 && !NO_SCOPE_CHANGE.has(key) && id) {
      // ajv takes any truthy `$id` here; one that makes no URL leaves nothing this count can follow
      if (typeof id !== "string") return undefined;
      try {
        base = absolute(id, base);
      } catch {
        return undefined;
      }
    }
  }
  return { value: v, base };
}

/**
 * The key one segment of a `$ref`'s JSON Pointer fragment names, read as ajv reads it: the
 * fragment split at `/` first, then the segment percent-decoded (`%2F` is a `/` inside a name),
 * then `~1` and `~0`. Null for a bad percent escape (ajv's compile fails on it).
 */
export function pointerKey(raw: string): string | null {
  let decoded: string;
  try {
    decoded = decodeURIComponent(raw);
  } catch {
    return null;
  }
  return decoded.replace(/~1/g, "/").replace(/~0/g, "~");
}

function segment(key: string): string {
  return key.replace(/~/g, "~0").replace(/\//g, "~1");
}

/** Saturates (long before Infinity, which stands for a loop): past the limit only the smallest count is reported. */
const CAP = 1e15;
const add = (a: number, b: number) => Math.min(a + b, a === Infinity || b === Infinity ? Infinity : CAP);

/** The largest count for an object's member, whatever its name. */
function largestNamed(l: Level): number {
  let m = l.other;
  for (const v of l.named.values()) if (v > m) m = v;
  return m;
}

function largest(l: Level): number {
  let m = Math.max(l.arr, l.other);
  for (const v of l.named.values()) if (v > m) m = v;
  return m;
}

function at(l: Level, name: string): number {
  return l.named.get(name) ?? l.other;
}

/**
 * How many member counts by name the analysis may combine before it stops counting by name
 * (each name's count then is the largest of them: still an upper bound, coarser). Real schemas
 * use a small part of it; a schema made to spend it (thousands of names through hundreds of levels
 * of recursion) is bounded less finely, and the analysis stays within tens of milliseconds.
 */
const NAMED_WORK = 2_000_000;
let namedWork = 0;

/** `a` and `b` combined name by name (ZERO is the identity of both sums and maxima: shared, not copied). */
function combine(a: Level, b: Level, op: (x: number, y: number) => number): Level {
  if (a === ZERO) return b;
  if (b === ZERO) return a;
  namedWork += a.named.size + b.named.size;
  if (namedWork > NAMED_WORK) {
    return { arr: op(a.arr, b.arr), other: op(largestNamed(a), largestNamed(b)), named: new Map() };
  }
  const named = new Map<string, number>();
  for (const n of a.named.keys()) named.set(n, op(a.named.get(n)!, at(b, n)));
  for (const n of b.named.keys()) if (!named.has(n)) named.set(n, op(at(a, n), b.named.get(n)!));
  return { arr: op(a.arr, b.arr), other: op(a.other, b.other), named };
}

const ZERO: Level = { arr: 0, other: 0, named: new Map() };

function sameLevel(a: Level, b: Level): boolean {
  if (a === b) return true;
  if (a.arr !== b.arr || a.other !== b.other || a.named.size !== b.named.size) return false;
  for (const [n, v] of a.named) if (b.named.get(n) !== v) return false;
  return true;
}

/**
 * Where the count of subschemas checked against one value first passes `limit` (the
 * schema whose count passes it by the least), or null when it never does, at any depth of the
 * arguments a message may reach. The schema has passed the size limit, so the walk is small.
 */
export function checkCostOverrun(
  schema: unknown,
  lookup: SchemaLookup,
  limit = MAX_CHECKS_PER_VALUE,
): CostOverrun | null {
  namedWork = 0;
  const graph = new Graph(lookup);
  let root: Node;
  try {
    root = graph.build(schema);
  } catch {
    // an `$id` this count cannot read as a URL (ajv read it): it cannot follow what ajv follows
    return { at: "", unresolved: true };
  }
  if (graph.unresolved !== null) return { at: graph.unresolved, unresolved: true };
  const reachable = reachableFrom(root);
  const over = (count: (n: Node) => number, depth: number): CostOverrun | null => {
    let worst: { at: string; checks: number; depth: number } | null = null;
    for (const n of reachable) {
      const c = count(n);
      if (c > limit && (worst === null || c < worst.checks)) worst = { at: n.at, checks: c, depth };
    }
    return worst;
  };
  // depth 0: the value the schema is applied to
  const loops: Node[] = [];
  const here = inPlaceCounts(graph.nodes, loops);
  const loop = loops.find((n) => reachable.includes(n));
  if (loop) return { at: loop.at, loop: true };
  const first = over((n) => here.get(n)!, 0);
  if (first) return first;
  let previous = new Map<Node, number>(here);
  let last: Map<Node, Level> | null = null;
  for (let depth = 1; depth < MAX_MESSAGE_DEPTH; depth++) {
    const below = (n: Node) => previous.get(n) ?? 0;
    const levels = new Map<Node, Level>();
    const visit = (n: Node, onPath: Set<Node>): Level => {
      const known = levels.get(n);
      if (known) return known;
      if (onPath.has(n)) return { arr: Infinity, other: Infinity, named: new Map() };
      onPath.add(n);
      let l = ownLevel(n, below, depth);
      for (const part of n.inPlace) {
        let alt: Level = ZERO;
        for (const a of part) alt = combine(alt, visit(a, onPath), Math.max);
        l = combine(l, alt, add);
      }
      onPath.delete(n);
      levels.set(n, l);
      return l;
    };
    for (const n of graph.nodes) visit(n, new Set());
    const found = over((n) => largest(levels.get(n)!), depth);
    if (found) return found;
    if (last !== null && graph.nodes.every((n) => sameLevel(levels.get(n)!, last!.get(n)!))) break;
    last = levels;
    previous = new Map(graph.nodes.map((n) => [n, largest(levels.get(n)!)]));
  }
  return null;
}

/** What a node's own child keywords count for one value `depth` levels below (one level: its items and members). */
function ownLevel(n: Node, below: (n: Node) => number, depth: number): Level {
  const childless = n.itemParts.length + n.props.size + n.anyMember.length + n.otherMember.length === 0;
  if (n.leaf || (childless && (depth > 1 || n.names === null))) return ZERO;
  let arr = 0;
  for (const part of n.itemParts) arr = add(arr, Math.max(0, ...part.map(below)));
  let any = 0;
  for (const m of n.anyMember) any = add(any, below(m));
  if (depth === 1 && n.names) any = add(any, below(n.names));
  let other = any;
  for (const m of n.otherMember) other = add(other, below(m));
  const named = new Map<string, number>();
  for (const [name, p] of n.props) {
    if (namedWork > NAMED_WORK) other = Math.max(other, add(any, below(p)));
    else named.set(name, add(any, below(p)));
  }
  namedWork += named.size;
  return { arr, other, named };
}

/** Counts at depth 0: each node one, plus its in-place parts (a loop of in-place references counts without end). */
function inPlaceCounts(nodes: Node[], loops: Node[]): Map<Node, number> {
  const counts = new Map<Node, number>();
  const visit = (n: Node, onPath: Set<Node>): number => {
    const known = counts.get(n);
    if (known !== undefined) return known;
    if (onPath.has(n)) {
      loops.push(n);
      return Infinity;
    }
    onPath.add(n);
    let c = 1;
    for (const part of n.inPlace) c = add(c, Math.max(0, ...part.map((a) => visit(a, onPath))));
    onPath.delete(n);
    counts.set(n, c);
    return c;
  };
  for (const n of nodes) visit(n, new Set());
  return counts;
}

function reachableFrom(root: Node): Node[] {
  const seen = new Set<Node>([root]);
  const stack = [root];
  while (stack.length > 0) {
    const n = stack.pop()!;
    const next = [
      ...n.inPlace.flat(),
      ...n.itemParts.flat(),
      ...n.props.values(),
      ...n.anyMember,
      ...n.otherMember,
      ...(n.names ? [n.names] : []),
    ];
    for (const m of next) {
      if (!seen.has(m)) {
        seen.add(m);
        stack.push(m);
      }
    }
  }
  return [...seen];
}
