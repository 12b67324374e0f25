import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { resolveMode } from "../../src/approval/grants.js";
import { ConfigError, findConfig, loadConfigFile, resolveServer } from "../../src/config/config.js";

function write(doc: unknown): string {
  const dir = mkdtempSync(join(tmpdir(), "pc-config-"));
  const file = join(dir, "portcullis.json");
  writeFileSync(file, typeof doc === "string" ? doc : JSON.stringify(doc));
  return file;
}

describe("portcullis.json", () => {
  it("reads servers with defaults, and mcpServers as an alias", () => {
    const file = write({
      mcpServers: { inv: { command: "node", args: ["dist/server.js"], env: { A: "1" } } },
    });
    const s = loadConfigFile(file).get("inv")!;
    expect(s.command).toBe("node");
    expect(s.onChange).toBe("report");
    expect(s.approval).toEqual({ default: "session", tools: {} });
    expect(s.env).toEqual({ A: "1" });
    expect(s.audit).toEqual({ arguments: "digest" });
  });

  it("is found upward from a subdirectory", () => {
    const file = write({ servers: { a: { command: "x" } } });
    const sub = join(file, "..", "deep", "er");
    mkdirSync(sub, { recursive: true });
    expect(findConfig(sub)).toBe(file);
    expect(resolveServer("a", sub).label).toBe("a");
  });

  it.each([
    [{ servers: { a: { command: "x", colour: 1 } } }, "servers.a.colour is not a known key"],
    [{ servers: { a: { command: 3 } } }, "servers.a.command must be a non-empty string"],
    [{ servers: { a: { command: "x", args: [1] } } }, "servers.a.args must be an array of strings"],
    [{ servers: { a: { command: "x", onChange: "explode" } } }, "servers.a.onChange must be one of"],
    [
      { servers: { a: { command: "x", approval: { tools: { t: "always" } } } } },
      "servers.a.approval.tools.t",
    ],
    [{ servers: { a: { command: "x", env: { K: 1 } } } }, "servers.a.env.K must be a string"],
    [{ servers: { a: { command: "x", onExpand: "never" } } }, "servers.a.onExpand must be one of run, tool"],
    [
      { servers: { a: { command: "x", approval: { resources: "always" } } } },
      "servers.a.approval.resources must be one of",
    ],
    [
      { servers: { a: { command: "x", approval: { resources: 1 } } } },
      "servers.a.approval.resources must be one of",
    ],
    [
      { servers: { a: { command: "x", audit: { arguments: "all" } } } },
      "servers.a.audit.arguments must be one of",
    ],
    [
      { servers: {}, extra: true },
      "extra is not a known key (the keys here: servers, mcpServers, console, $schema).",
    ],
    [{ servers: {}, mcpServers: {} }, "both"],
    ["{ not json", "not valid JSON"],
  ])("names the file and the key: %j", (doc, expected) => {
    const file = write(doc);
    expect(() => loadConfigFile(file)).toThrow(ConfigError);
    try {
      loadConfigFile(file);
    } catch (e) {
      expect((e as Error).message).toContain(file);
      expect((e as Error).message).toContain(expected);
    }
  });

  it("reads onExpand (default run) and approval.resources", () => {
    const file = write({
      servers: {
        a: { command: "x", onExpand: "tool", approval: { resources: "none" } },
        b: { command: "y" },
        c: { command: "z", approval: { resources: "session" } },
        d: { command: "z", approval: { resources: "per-call" } },
      },
    });
    const servers = loadConfigFile(file);
    expect(servers.get("a")).toMatchObject({ onExpand: "tool", approval: { resources: "none" } });
    expect(servers.get("b")?.onExpand).toBe("run");
    expect(servers.get("b")?.approval.resources).toBeUndefined();
    expect(servers.get("c")?.approval.resources).toBe("session");
    expect(servers.get("d")?.approval.resources).toBe("per-call");
  });

  it("type (docs/design.md): stdio with command; http or streamable-http with url; nothing else", () => {
    const servers = loadConfigFile(
      write({
        servers: {
          launched: { type: "stdio", command: "x" },
          remote: { type: "http", url: "http://127.0.0.1:9/mcp" },
          pasted: { type: "streamable-http", url: "http://127.0.0.1:9/mcp" },
          untyped: { url: "http://127.0.0.1:9/mcp" },
        },
      }),
    );
    expect(servers.get("launched")?.command).toBe("x");
    for (const label of ["remote", "pasted", "untyped"])
      expect(servers.get(label)?.remote?.url, label).toBe("http://127.0.0.1:9/mcp");
    for (const [server, key] of [
      [{ type: "http", command: "x" }, "servers.a.type must be"],
      [{ type: "stdio", url: "http://127.0.0.1:9/mcp" }, "servers.a.type must be"],
      [
        { type: "sse", url: "http://127.0.0.1:9/mcp" },
        'servers.a.type must be "http" or "streamable-http" for a server reached by "url".',
      ],
    ] as const) {
      expect(() => loadConfigFile(write({ servers: { a: server } })), JSON.stringify(server)).toThrow(key);
    }
  });

  it("an unknown server key names the one it most likely meant", () => {
    expect(() => loadConfigFile(write({ servers: { a: { command: "x", onchange: "restart" } } }))).toThrow(
      /servers\.a\.onchange is not a known key \(did you mean onChange\?\)\.$/,
    );
    expect(() => loadConfigFile(write({ servers: { a: { command: "x", zzzzzz: 1 } } }))).toThrow(
      /servers\.a\.zzzzzz is not a known key \(the keys here: command, args, cwd, .*, headers\)\.$/,
    );
  });

  it("names the known labels when one is missing", () => {
    const file = write({ servers: { alpha: { command: "x" } } });
    expect(() => resolveServer("beta", join(file, ".."))).toThrow(
      /no server by that label \(the label given is not repeated, in case it is a secret typed in the wrong place\); known: alpha\./,
    );
  });
});

describe("keys that name an object's prototype", () => {
  it('approval.tools "__proto__" is an own entry: the tool gets its mode, other tools the default', () => {
    const file = write(
      '{"servers": {"p": {"command": "x", "approval": {"default": "none", "tools": {"__proto__": "per-call", "constructor": "session"}}}}}',
    );
    const s = loadConfigFile(file).get("p")!;
    expect(Object.hasOwn(s.approval.tools, "__proto__")).toBe(true);
    expect(Object.getPrototypeOf(s.approval.tools)).toBe(Object.prototype);
    expect(resolveMode(s.approval, "__proto__")).toBe("per-call");
    expect(resolveMode(s.approval, "constructor")).toBe("session");
    expect(resolveMode(s.approval, "toString")).toBe("none");
    expect(JSON.parse(JSON.stringify(s.approval.tools))).toEqual(
      JSON.parse('{"__proto__": "per-call", "constructor": "session"}'),
    );
  });

  it('tools "__proto__" keeps its credential scopes', () => {
    const file = write(
      '{"servers": {"p": {"command": "x", "credentials": {"K": "k"}, "tools": {"__proto__": {"credentials": ["k"]}}}}}',
    );
    const s = loadConfigFile(file).get("p")!;
    expect(Object.hasOwn(s.tools!, "__proto__")).toBe(true);
    expect(Object.getOwnPropertyDescriptor(s.tools, "__proto__")?.value).toEqual({ credentials: ["k"] });
  });

  it.each([
    [
      '{"servers": {"p": {"command": "x", "env": {"__proto__": "v"}}}}',
      "servers.p.env.__proto__ cannot be passed on",
    ],
    [
      '{"servers": {"p": {"command": "x", "credentials": {"__proto__": "k"}}}}',
      "servers.p.credentials.__proto__ cannot be passed on",
    ],
  ])("an environment variable named __proto__ is refused, not silently dropped: %s", (doc, message) => {
    const file = write(doc);
    expect(() => loadConfigFile(file)).toThrow(ConfigError);
    expect(() => loadConfigFile(file)).toThrow(message);
  });
});
