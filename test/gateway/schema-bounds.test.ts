// A server's input schema cannot make the gateway's argument check take unbounded time, nor
// end the gateway: a pattern that backtracks catastrophically in JavaScript is matched in linear
// time, a pattern that cannot be matched so refuses its tool, and so do a schema too large to
// compile at once and an asynchronous one; a huge enum is looked up, and named in short
// sentences; end to end through the real gateway and a fixture server whose tool list carries them.
import { afterEach, describe, expect, it } from "vitest";
import { makeCatalog, type ToolDef } from "../helpers/catalog.js";
import { startGateway } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";

const LOOKUP: ToolDef = {
  name: "lookup",
  description: "Look a word up.",
  inputSchema: { type: "object", properties: { q: { type: "string", pattern: "^(a+)+$" } } },
};
const NOT_ADMIN: ToolDef = {
  name: "rename_user",
  description: "Rename a user, but never to admin.",
  inputSchema: {
    type: "object",
    required: ["name"],
    properties: { name: { type: "string", pattern: "^(?!admin$)\\w+$" } },
  },
};
const DISPLAY_NAME: ToolDef = {
  name: "set_display_name",
  description: "Set a display name: letters and digits of any script, underscores, spaces, hyphens.",
  inputSchema: {
    type: "object",
    required: ["name"],
    properties: { name: { type: "string", pattern: "^[\\p{L}\\p{N}_ -]+$" } },
  },
};
const ECHO: ToolDef = {
  name: "echo",
  description: "Say it back.",
  inputSchema: { type: "object", properties: { text: { type: "string" } } },
};

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

async function catalogGateway(tools: ToolDef[]) {
  const cat = makeCatalog(tools);
  const gw = await startGateway({
    args: ["--label", "words", "--approval", "none", "--", ...fixtureCommand("catalog")],
    env: cat.env,
  });
  cleanup.push(
    () => gw.close(),
    () => cat.cleanup(),
  );
  await gw.client.listTools();
  return { cat, gw };
}

function text(result: Record<string, unknown>): string {
  return JSON.stringify(result.content);
}

describe("patterns in a server's input schema", () => {
  it("^(a+)+$ against 40 a's and a '!': the call is answered, and so is a ping sent alongside", async () => {
    const { cat, gw } = await catalogGateway([LOOKUP, ECHO]);
    const answered: string[] = [];
    // JavaScript's RegExp takes 2^40 steps here (hours), during which nothing else would run.
    const call = gw.client
      .callTool({ name: "lookup", arguments: { q: `${"a".repeat(40)}!` } })
      .finally(() => answered.push("call"));
    const ping = gw.client.ping().finally(() => answered.push("ping"));
    const [refused] = await Promise.all([call, ping]);
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain('must match pattern \\"^(a+)+$\\"');
    expect(answered.sort()).toEqual(["call", "ping"]);

    const ok = await gw.client.callTool({ name: "lookup", arguments: { q: "a".repeat(40) } });
    expect(ok.isError).toBeFalsy();
    expect(cat.records().map((r) => r.args)).toEqual([{ q: "a".repeat(40) }]);
  });

  it("a lookahead refuses that tool's calls, naming the tool, the place and why; other tools work", async () => {
    const { cat, gw } = await catalogGateway([NOT_ADMIN, ECHO]);
    for (const name of ["admin", "alice"]) {
      const res = await gw.client.callTool({ name: "rename_user", arguments: { name } });
      expect(res.isError).toBe(true);
      expect(text(res)).toContain('Tool \\"rename_user\\" is refused');
      expect(text(res)).toContain(String.raw`at \"/properties/name/pattern\"`);
      expect(text(res)).toContain("uses a lookahead");
      expect(text(res)).toContain("cannot check in bounded time");
    }
    const echoed = await gw.client.callTool({ name: "echo", arguments: { text: "hi" } });
    expect(echoed.isError).toBeFalsy();
    // nothing of rename_user reached the server, unchecked or otherwise
    expect(cat.records().map((r) => r.tool)).toEqual(["echo"]);
  });
});

describe("Unicode property escapes in a server's pattern", () => {
  it("^[\\p{L}\\p{N}_ -]+$: a name in any script goes through, one with other characters is invalid arguments", async () => {
    const { cat, gw } = await catalogGateway([DISPLAY_NAME, ECHO]);
    for (const name of ["Zoë_42", "Ωμέγα 7", "山田 太郎", "𐐀-٣"]) {
      const ok = await gw.client.callTool({ name: "set_display_name", arguments: { name } });
      expect([name, Boolean(ok.isError)]).toEqual([name, false]);
    }
    for (const name of ["rm -rf /", "bob😀", "a\ud800", ""]) {
      const refused = await gw.client.callTool({ name: "set_display_name", arguments: { name } });
      expect([name, refused.isError]).toEqual([name, true]);
      expect(text(refused)).toContain("must match pattern");
      expect(text(refused)).not.toContain("is refused");
    }
    // what matched reached the server, unchanged; nothing else did
    expect(cat.records().map((r) => r.args)).toEqual([
      { name: "Zoë_42" },
      { name: "Ωμέγα 7" },
      { name: "山田 太郎" },
      { name: "𐐀-٣" },
    ]);
  });
});

describe("the size of a server's input schema", () => {
  it("a tool of 40,000 properties is refused at once, naming it and the limit; a ping alongside and its neighbour are answered", async () => {
    const big: ToolDef = {
      name: "big",
      description: "A tool with a huge input schema.",
      inputSchema: {
        type: "object",
        properties: Object.fromEntries(
          Array.from({ length: 40_000 }, (_, i) => [`p${i}`, { type: "string" }]),
        ),
      },
    };
    const { cat, gw } = await catalogGateway([big, ECHO]);
    const answered: string[] = [];
    // Compiling it took 8.6 s, with nothing else served meanwhile.
    const call = gw.client
      .callTool({ name: "big", arguments: { p1: "zz" } })
      .finally(() => answered.push("call"));
    const ping = gw.client.ping().finally(() => answered.push("ping"));
    const [refused] = await Promise.all([call, ping]);
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain(
      'Tool \\"big\\" has an input schema of more than 2,000 schema nodes, over what portcullis compiles (2,000 nodes, 1 MiB)',
    );
    expect(answered.sort()).toEqual(["call", "ping"]);
    const echoed = await gw.client.callTool({ name: "echo", arguments: { text: "hi" } });
    expect(echoed.isError).toBeFalsy();
    expect(cat.records().map((r) => r.tool)).toEqual(["echo"]);
  });
});

describe("an asynchronous input schema ($async)", () => {
  it("refuses the tool with a sentence; the gateway lives on, the server never sees a call", async () => {
    const publish: ToolDef = {
      name: "publish",
      description: "Publish a build.",
      inputSchema: {
        $async: true,
        type: "object",
        required: ["target"],
        additionalProperties: false,
        properties: { target: { enum: ["preview"] } },
      },
    };
    const { cat, gw } = await catalogGateway([publish, ECHO]);
    let exited = false;
    void gw.exited.then(() => {
      exited = true;
    });
    // ajv's async check answered a Promise, taken for a pass: the invalid call was forwarded,
    // and the Promise's rejection, unhandled, ended the gateway
    for (const args of [{ target: "production", webhook: "https://evil.example/x" }, { target: "preview" }]) {
      const res = await gw.client.callTool({ name: "publish", arguments: args });
      expect(res.isError).toBe(true);
      expect(text(res)).toContain(
        'Tool \\"publish\\" is refused: its input schema has \\"$async\\" at \\"/$async\\", which asks for an asynchronous check',
      );
    }
    await gw.client.ping();
    const echoed = await gw.client.callTool({ name: "echo", arguments: { text: "hi" } });
    expect(echoed.isError).toBeFalsy();
    expect(exited).toBe(false);
    expect(cat.records().map((r) => r.tool)).toEqual(["echo"]);
  });
});

describe("an enum of 50,000 values on the items of an array", () => {
  it("a call with 20,000 bad items gets a short refusal; a ping alongside and the next call are answered", async () => {
    const tag: ToolDef = {
      name: "tag_items",
      description: "Tag items.",
      inputSchema: {
        type: "object",
        properties: {
          xs: { type: "array", items: { enum: Array.from({ length: 50_000 }, (_, i) => `v${i}`) } },
        },
      },
    };
    const { cat, gw } = await catalogGateway([tag, ECHO]);
    const answered: string[] = [];
    // Every sentence listed all 50,000 values: 300 bad items made an 11.8 MB answer, 1,500 held
    // the gateway a minute; ajv also compared each item with each value in turn.
    const call = gw.client
      .callTool({ name: "tag_items", arguments: { xs: Array.from({ length: 20_000 }, () => "zz") } })
      .finally(() => answered.push("call"));
    const ping = gw.client.ping().finally(() => answered.push("ping"));
    const [refused] = await Promise.all([call, ping]);
    expect(refused.isError).toBe(true);
    expect(text(refused).length).toBeLessThan(5_000);
    expect(text(refused)).toContain('\\"v11\\", … and 49988 more.');
    expect(text(refused)).toContain("19980 more errors were not listed.");
    expect(answered.sort()).toEqual(["call", "ping"]);
    const ok = await gw.client.callTool({ name: "tag_items", arguments: { xs: ["v0", "v49999"] } });
    expect(ok.isError).toBeFalsy();
    expect(cat.records().map((r) => r.args)).toEqual([{ xs: ["v0", "v49999"] }]);
  });
});

/** `d0` … `d{n-1}` each an `anyOf` of two references to the next: a value is checked 2^n times. */
function doublingChain(n: number): Record<string, unknown> {
  const defs: Record<string, unknown> = { [`d${n}`]: { type: "string" } };
  for (let i = 0; i < n; i++)
    defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
  return { type: "object", properties: { x: { $ref: "#/$defs/d0" } }, $defs: defs };
}

describe("subschemas that fan out through $ref", () => {
  it("an anyOf chain of 40 definitions (2^40 checks of one value) is refused, naming the place and the bound; the gateway answers meanwhile", async () => {
    const fan: ToolDef = { name: "fan", description: "Fans out.", inputSchema: doublingChain(40) };
    const { cat, gw } = await catalogGateway([fan, ECHO]);
    const answered: string[] = [];
    // ajv checked {"x": 1} against d40 2^40 times: 22 definitions already held the event loop 44 s.
    const call = gw.client
      .callTool({ name: "fan", arguments: { x: 1 } })
      .finally(() => answered.push("call"));
    const echo = gw.client
      .callTool({ name: "echo", arguments: { text: "meanwhile" } })
      .finally(() => answered.push("echo"));
    const ping = gw.client.ping().finally(() => answered.push("ping"));
    const [refused, echoed] = await Promise.all([call, echo, ping]);
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain(
      String.raw`Tool \"fan\" is refused: the subschema at \"/$defs/d31\" in its input schema checks one value against up to 2,045 subschemas`,
    );
    expect(text(refused)).toContain("portcullis allows 2,000 per value), so its calls are refused.");
    expect(echoed.isError).toBeFalsy();
    expect(answered.sort()).toEqual(["call", "echo", "ping"]);
    const again = await gw.client.callTool({ name: "fan", arguments: { x: "s" } });
    expect(text(again)).toContain("is refused");
    expect(cat.records().map((r) => r.tool)).toEqual(["echo"]);
  });

  it("recursion through the arguments that doubles at each level is refused; a recursive schema that does not double is checked", async () => {
    const node = (kind: string) => ({
      type: "object",
      properties: { kind: { const: kind }, child: { $ref: "#/$defs/node" } },
    });
    const doubling: ToolDef = {
      name: "nest",
      inputSchema: {
        type: "object",
        properties: { tree: { $ref: "#/$defs/node" } },
        $defs: { node: { anyOf: [node("a"), node("b")] } },
      },
    };
    const jsonValue: ToolDef = {
      name: "store",
      inputSchema: {
        type: "object",
        properties: { value: { $ref: "#/$defs/v" } },
        $defs: {
          v: {
            anyOf: [
              { type: ["string", "number", "boolean", "null"] },
              { type: "array", items: { $ref: "#/$defs/v" } },
              { type: "object", additionalProperties: { $ref: "#/$defs/v" } },
            ],
          },
        },
      },
    };
    const { cat, gw } = await catalogGateway([doubling, jsonValue]);
    let tree: Record<string, unknown> = { kind: "z" };
    for (let i = 0; i < 60; i++) tree = { kind: "z", child: tree };
    const refused = await gw.client.callTool({ name: "nest", arguments: { tree } });
    expect(refused.isError).toBe(true);
    expect(text(refused)).toContain(
      String.raw`Tool \"nest\" is refused: the subschema at \"/properties/tree\"`,
    );
    expect(text(refused)).toContain("levels below the one it checks against up to");
    let value: unknown = "leaf";
    for (let i = 0; i < 200; i++) value = i % 2 ? [value] : { k: value };
    const ok = await gw.client.callTool({ name: "store", arguments: { value } });
    expect(ok.isError).toBeFalsy();
    expect(cat.records().map((r) => r.tool)).toEqual(["store"]);
  });
});
