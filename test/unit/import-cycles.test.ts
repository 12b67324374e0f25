// No import cycles under src/: a cycle makes module initialization order matter (a value imported
// from a module that is still initializing is undefined) and hides which layer owns what.
// Type-only imports count too: they still tie the modules' designs together.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO } from "../helpers/paths.js";

const SRC = join(REPO, "src");

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sourceFiles(path);
    return name.endsWith(".ts") && !name.endsWith(".d.ts") ? [path] : [];
  });
}

/** Relative imports and re-exports of one file, resolved to .ts files under src/. */
function importsOf(file: string): string[] {
  const text = readFileSync(file, "utf8");
  const out: string[] = [];
  for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)\b[^;]*?\bfrom\s*["'](\.{1,2}\/[^"']+)["']/g)) {
    out.push(resolve(dirname(file), m[1]!.replace(/\.js$/, ".ts")));
  }
  for (const m of text.matchAll(/\bimport\(\s*["'](\.{1,2}\/[^"']+)["']\s*\)/g)) {
    out.push(resolve(dirname(file), m[1]!.replace(/\.js$/, ".ts")));
  }
  return out;
}

/** Every elementary cycle's smallest representative found by depth-first search (one per back edge). */
function cycles(graph: Map<string, string[]>): string[][] {
  const found: string[][] = [];
  const state = new Map<string, "open" | "done">();
  const stack: string[] = [];
  const visit = (node: string) => {
    state.set(node, "open");
    stack.push(node);
    for (const next of graph.get(node) ?? []) {
      if (state.get(next) === "open") found.push([...stack.slice(stack.indexOf(next)), next]);
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(node, "done");
  };
  for (const node of [...graph.keys()].sort()) if (!state.has(node)) visit(node);
  return found;
}

describe("import graph of src/", () => {
  it("finds cycles (the checker itself works)", () => {
    const g = new Map([
      ["a", ["b"]],
      ["b", ["c"]],
      ["c", ["a"]],
      ["d", ["a"]],
    ]);
    expect(cycles(g)).toEqual([["a", "b", "c", "a"]]);
    expect(
      cycles(
        new Map([
          ["a", ["b"]],
          ["b", []],
        ]),
      ),
    ).toEqual([]);
  });

  it("reads import, import type, export-from and multi-line imports", () => {
    const files = sourceFiles(SRC);
    const graph = new Map(files.map((f) => [f, importsOf(f)]));
    const gateway = graph.get(join(SRC, "gateway", "gateway.ts"))!;
    const clientMessages = graph.get(join(SRC, "gateway", "clientMessages.ts"))!;
    expect(clientMessages).toContain(join(SRC, "relay", "jsonrpc.ts")); // a multi-line import
    expect(gateway).toContain(join(SRC, "store", "db.ts")); // import type
    expect(graph.get(join(SRC, "identity", "index.ts"))).toContain(join(SRC, "identity", "proc.ts"));
  });

  it("has no import cycles", () => {
    const files = sourceFiles(SRC);
    const graph = new Map(files.map((f) => [f, importsOf(f)]));
    const found = cycles(graph).map((c) => c.map((f) => relative(SRC, f)).join(" → "));
    expect(found).toEqual([]);
  });
});
