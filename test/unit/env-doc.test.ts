// Every PORTCULLIS_* environment variable the code reads is in the README's table of them, and
// the table names none the code does not read: one place says what each does and its default.
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO } from "../helpers/paths.js";

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith(".ts") ? [join(dir, e.name)] : [],
  );
}

const VARIABLE = /PORTCULLIS_[A-Z0-9_]*[A-Z0-9]/g;

describe("environment variables", () => {
  it("the README's table names each variable src/ reads, and only those", () => {
    const read = new Set(
      sources(join(REPO, "src")).flatMap((f) => readFileSync(f, "utf8").match(VARIABLE) ?? []),
    );
    const readme = readFileSync(join(REPO, "README.md"), "utf8");
    const table = /### Environment variables\n\n([\s\S]*?)\n\n/.exec(readme)?.[1] ?? "";
    const documented = new Set(
      [...table.matchAll(/^\| `(PORTCULLIS_[A-Z0-9_]+)` \| .+ \|$/gm)].map((m) => m[1]!),
    );
    expect(read.size).toBeGreaterThan(5);
    expect([...read].filter((v) => !documented.has(v)).sort()).toEqual([]);
    expect([...documented].filter((v) => !read.has(v)).sort()).toEqual([]);
  });
});
