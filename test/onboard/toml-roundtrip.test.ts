// wrap then unwrap of generated Codex config.toml files: comments, blank lines, CRLF, quoting, and
// server entries in each of the three shapes TOML allows (a [mcp_servers.NAME] section, dotted
// keys, an inline table). Wrap must edit in place (every comment survives, in order: a whole-file
// rewrite keeps none), and unwrap must give back the original bytes, both when the file is as wrap
// left it and when it was edited elsewhere since (then only wrap's values are put back).
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { parse as parseToml } from "smol-toml";
import { describe, expect, it } from "vitest";
import type { HostFile } from "../../src/onboard/hosts.js";
import { unwrapFile, wrapFile } from "../../src/onboard/wrap.js";
import { removeDir, tempDir } from "../helpers/files.js";

type Shape = "section" | "dotted" | "inline";

interface Server {
  name: string;
  shape: Shape;
  command: string;
  args: string[] | null;
  /** args written over several lines, with comments (key-line shapes only) */
  multiline: boolean;
  env: boolean;
  literal: boolean;
  /** an HTTP entry: wrap leaves it alone */
  http: boolean;
  /** `command=x` or `command = x` */
  tight: boolean;
  comment: boolean;
}

const NAMES = ["alpha", "beta", "gamma", "delta", "my server", "eps_1"];

const server = (name: string): fc.Arbitrary<Server> =>
  fc.record({
    name: fc.constant(name),
    shape: fc.constantFrom<Shape>("section", "dotted", "inline"),
    command: fc.constantFrom(
      "node",
      "npx",
      "uvx",
      "/usr/bin/python3",
      "C:\\tools\\run.exe",
      "a 'quoted' cmd",
    ),
    args: fc.option(
      fc.array(fc.constantFrom("-y", "server.js", "--flag=1", "a b", 'say "hi"', "é"), { maxLength: 3 }),
      {
        nil: null,
      },
    ),
    multiline: fc.boolean(),
    env: fc.boolean(),
    literal: fc.boolean(),
    http: fc.integer({ min: 0, max: 9 }).map((n) => n < 2),
    tight: fc.boolean(),
    comment: fc.boolean(),
  });

const config = fc.record({
  servers: fc
    .uniqueArray(fc.constantFrom(...NAMES), { minLength: 1, maxLength: 5 })
    .chain((names) => fc.tuple(...names.map(server))),
  /** dotted entries from the top of the document (else under a [mcp_servers] header) */
  rootDotted: fc.boolean(),
  crlf: fc.boolean(),
  /** where comment lines and blank lines go: one flag per line written */
  noise: fc.array(fc.constantFrom("", "", "", "comment", "blank"), { minLength: 80, maxLength: 80 }),
  finalNewline: fc.boolean(),
});

function str(s: string, literal: boolean): string {
  return literal && !s.includes("'") ? `'${s}'` : JSON.stringify(s);
}

function key(name: string): string {
  return /^[A-Za-z0-9_-]+$/.test(name) ? name : JSON.stringify(name);
}

/** The document's lines: top keys (and top-level dotted servers), [mcp_servers], sections, another table. */
function render(c: {
  servers: Server[];
  rootDotted: boolean;
  crlf: boolean;
  noise: string[];
  finalNewline: boolean;
}): string {
  let n = 0;
  const out: string[] = [];
  const push = (line: string) => {
    const extra = c.noise[n++ % c.noise.length];
    if (extra === "comment") out.push(`# note ${n}`);
    if (extra === "blank") out.push("");
    out.push(line);
  };
  const eq = (s: Server) => (s.tight ? "=" : " = ");
  const tail = (s: Server) => (s.comment ? `   # about ${s.name} ${n}` : "");
  const keyLines = (s: Server, prefix: string) => {
    if (s.http) {
      push(`${prefix}url${eq(s)}"https://example.com/${s.name.replace(/ /g, "-")}"${tail(s)}`);
      return;
    }
    push(`${prefix}command${eq(s)}${str(s.command, s.literal)}${tail(s)}`);
    if (s.args) {
      if (s.multiline) {
        push(`${prefix}args${eq(s)}[`);
        s.args.forEach((a, i) => {
          out.push(`  ${str(a, s.literal)},${i === 0 ? ` # first of ${s.name}` : ""}`);
        });
        out.push("]");
      } else push(`${prefix}args${eq(s)}[${s.args.map((a) => str(a, s.literal)).join(", ")}]`);
    }
    if (s.env) push(`${prefix}env${eq(s)}{ LOG = "debug" }`);
  };
  const inline = (s: Server, prefix: string) => {
    const members = s.http
      ? [`url${eq(s)}"https://example.com/x"`]
      : [
          `command${eq(s)}${str(s.command, s.literal)}`,
          ...(s.args ? [`args${eq(s)}[${s.args.map((a) => str(a, s.literal)).join(", ")}]`] : []),
          ...(s.env ? [`env${eq(s)}{ LOG = "debug" }`] : []),
        ];
    push(`${prefix}${key(s.name)}${eq(s)}{ ${members.join(", ")} }${tail(s)}`);
  };

  out.push("# Codex CLI configuration");
  push('model = "o4-mini"');
  const byShape = (shape: Shape) => c.servers.filter((s) => s.shape === shape);
  if (c.rootDotted) {
    for (const s of byShape("dotted")) keyLines(s, `mcp_servers.${key(s.name)}.`);
    for (const s of byShape("inline")) inline(s, "mcp_servers.");
  } else if (byShape("dotted").length + byShape("inline").length > 0) {
    push("[mcp_servers]");
    for (const s of byShape("inline")) inline(s, "");
    for (const s of byShape("dotted")) keyLines(s, `${key(s.name)}.`);
  }
  for (const s of byShape("section")) {
    push(`[mcp_servers.${key(s.name)}]`);
    keyLines(s, "");
  }
  push("[profiles.fast]");
  push('model = "gpt-4.1" # fast');
  const eol = c.crlf ? "\r\n" : "\n";
  return out.join(eol) + (c.finalNewline ? eol : "");
}

/** the comments outside the values wrap replaces (one inside a multi-line args array goes with it) */
const comments = (text: string) =>
  (text.match(/#[^\r\n]*/g) ?? []).filter((c) => !c.startsWith("# first of"));

describe("Codex TOML: wrap then unwrap (generated configurations)", () => {
  it("wrap edits in place and unwrap gives back the original bytes, with or without a later edit", () => {
    const root = tempDir("portcullis-toml-");
    let runs = 0;
    try {
      fc.assert(
        fc.property(config, (c) => {
          const text = render(c);
          parseToml(text); // the generator writes valid TOML only
          const dir = join(root, String(runs++));
          const file = join(dir, "config.toml");
          const stateDir = join(dir, "state");
          mkdirSync(dir, { recursive: true });
          writeFileSync(file, text);
          const host: HostFile = { host: "codex", file, format: "toml", tables: [["mcp_servers"]] };
          const launcher = { node: "/opt/node/bin/node", cli: "/opt/portcullis/dist/cli/main.js", stateDir };
          const stdio = c.servers.filter((s) => !s.http).map((s) => s.name);

          const plan = wrapFile(host, launcher);
          expect(plan.wrapped.sort()).toEqual([...stdio].sort());
          const wrapped = readFileSync(file, "utf8");
          // in place: every comment is still there, in order (a whole-file rewrite keeps none);
          // unwrap gives back the ones inside an args array too (checked below)
          expect(comments(wrapped)).toEqual(comments(text));
          const doc = parseToml(wrapped) as {
            mcp_servers: Record<string, { command: string; args: string[] }>;
          };
          for (const s of c.servers.filter((x) => !x.http)) {
            expect(doc.mcp_servers[s.name]!.command).toBe(launcher.node);
            expect(doc.mcp_servers[s.name]!.args.slice(-1 - (s.args?.length ?? 0))).toEqual([
              s.command,
              ...(s.args ?? []),
            ]);
          }

          // as wrap left it: the original bytes
          if (stdio.length > 0) unwrapFile(host, stateDir);
          expect(readFileSync(file, "utf8")).toBe(text);

          // edited elsewhere while wrapped: wrap's values are put back in place, the edit stays
          if (stdio.length === 0) return;
          wrapFile(host, launcher);
          const eol = c.crlf ? "\r\n" : "\n";
          const edit = `${c.finalNewline ? "" : eol}# edited while wrapped${eol}`;
          writeFileSync(file, readFileSync(file, "utf8") + edit);
          const back = unwrapFile(host, stateDir);
          expect(back.how).toBe("entries");
          expect(readFileSync(file, "utf8")).toBe(text + edit);
        }),
        { numRuns: 150 },
      );
    } finally {
      removeDir(root);
    }
  });
});
