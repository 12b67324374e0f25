// A number literal beyond the double range (`1e400`, `-1e400`) is valid JSON text, and JSON.parse
// reads it as ±Infinity: no schema check finds it wrong, yet it has no canonical form, so nothing
// can digest it for an approval or an audit record. The guard refuses such a request with a
// reason, before anything digests it, and records the refusal; it never fails with -32603.
// Real gateway, real fixture servers, the request written as raw JSON text.
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import fc from "fast-check";
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents, pending } from "../helpers/approvals.js";
import { type CatalogFile, makeCatalog } from "../helpers/catalog.js";
import { readJsonLines, removeDir, tempDir, waitFor } from "../helpers/files.js";
import type { WireMessage } from "../helpers/gateway.js";
import { HUGE, withNumber } from "../helpers/numbers.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawPeer, rawGateway } from "../helpers/raw.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const PAY = {
  name: "pay",
  description: "Pays someone",
  inputSchema: { type: "object", properties: { to: { type: "string" }, amount: { type: "number" } } },
};

/** A gateway in front of the catalog fixture serving `pay`, with every tool in approval `mode`. */
async function payGateway(
  mode: "none" | "session",
): Promise<{ gw: RawPeer & { stateDir: string }; cat: CatalogFile }> {
  const cat = makeCatalog([PAY]);
  const gw = rawGateway({
    args: ["--label", "pay", "--approval", mode, "--", ...fixtureCommand("catalog")],
    env: cat.env,
  });
  cleanup.push(
    () => cat.cleanup(),
    () => gw.close(),
  );
  await gw.initialize();
  expect((await gw.request("tools/list")).result).toBeDefined();
  return { gw, cat };
}

/** Writes `line` (JSON text a serializer would not write) and waits for the answer under `id`. */
function sendRaw(gw: RawPeer, id: string, line: string): Promise<WireMessage> {
  gw.send(`${line}\n`);
  return gw.next((m) => m.id === id && m.method === undefined);
}

const callText = (id: string, name: string, args: string) =>
  `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{"name":"${name}","arguments":${args}}}`;

/** The text of an invalid-arguments result (a tools/call result with isError). */
function invalidText(m: WireMessage): string {
  expect(m.error).toBeUndefined();
  const result = m.result as { isError?: boolean; content: { text: string }[] };
  expect(result.isError).toBe(true);
  return result.content.map((c) => c.text).join("\n");
}

async function deniedEvents(stateDir: string, count: number): Promise<Record<string, unknown>[]> {
  return waitFor(
    async () => {
      const denied = (await auditEvents(stateDir)).filter((e) => e.type === "authorization_denied");
      return denied.length >= count ? denied : null;
    },
    10_000,
    `${count} authorization_denied events`,
  );
}

describe.each(["none", "session"] as const)(
  "a tools/call holding a number beyond the double range (approval %s)",
  (mode) => {
    it("is refused as invalid arguments naming the field, recorded, and never forwarded nor put to a human", async () => {
      const { gw, cat } = await payGateway(mode);

      const top = await sendRaw(gw, "top", callText("top", "pay", '{"to":"bob","amount":1e400}'));
      expect(invalidText(top)).toContain(
        'Field "amount" is a number beyond the range of JSON numbers (it reads as Infinity)',
      );
      // deep in arrays and objects the schema does not describe, and negative
      const deep = await sendRaw(
        gw,
        "deep",
        callText("deep", "pay", '{"to":"bob","amount":1,"notes":[{"split":[0.5,-1e400]}]}'),
      );
      expect(invalidText(deep)).toContain('Field "notes[0].split[1]" is a number beyond');
      expect(invalidText(deep)).toContain("-Infinity");
      // a tool not in the catalog is refused as before (step 4), with its data, and recorded too
      const absent = await sendRaw(gw, "absent", callText("absent", "nope", '{"n":1e400}'));
      expect(absent.error).toMatchObject({
        code: -32055,
        data: { error: "tool_not_in_catalog", tool: "nope" },
      });

      const denied = await deniedEvents(gw.stateDir, 3);
      expect(denied.map((e) => [e.requestId, e.tool, e.reason, e.argumentsDigest])).toEqual([
        ["top", "pay", "invalid_arguments", null],
        ["deep", "pay", "invalid_arguments", null],
        ["absent", "nope", "tool_not_in_catalog", null],
      ]);
      expect(cat.records()).toEqual([]);
      expect(await pending(gw.stateDir)).toEqual([]);
      expect(gw.stderr()).not.toMatch(/could not handle/);
      // a number within range is a call like any other
      if (mode === "none") {
        const ok = await sendRaw(gw, "ok", callText("ok", "pay", '{"to":"bob","amount":1e300}'));
        expect(ok.result).toBeDefined();
        expect(cat.records().map((r) => r.args)).toEqual([{ to: "bob", amount: 1e300 }]);
      }
    });
  },
);

describe("any arguments with a number beyond the double range somewhere in them", () => {
  it("get the invalid-arguments result through a real gateway, never -32603, and reach no server", async () => {
    const { gw, cat } = await payGateway("none");
    let n = 0;
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 4 }),
        fc.array(fc.nat(), { minLength: 1, maxLength: 5 }),
        fc.constantFrom(...HUGE),
        async (base, steps, literal) => {
          const id = `p${++n}`;
          const answer = await sendRaw(gw, id, callText(id, "pay", withNumber(base, steps).text(literal)));
          expect(invalidText(answer)).toContain("beyond the range of JSON numbers");
        },
      ),
      { numRuns: 40 },
    );
    await deniedEvents(gw.stateDir, n);
    expect(cat.records()).toEqual([]);
    expect(gw.stderr()).not.toMatch(/could not handle/);
  });
});

/** A gateway for the lenient server with `approval.resources` `resources` (reads always recorded). */
async function readGateway(resources: "none" | "session") {
  const dir = tempDir();
  const methodLog = join(dir, "methods.jsonl");
  const [command, ...args] = fixtureCommand("lenient");
  const config = {
    servers: {
      lenient: {
        command,
        args,
        env: { FIXTURE_METHOD_LOG: methodLog },
        approval: { default: "none", resources },
      },
    },
  };
  writeFileSync(join(dir, "portcullis.json"), JSON.stringify(config, null, 2));
  const gw = rawGateway({ args: ["lenient"], cwd: dir });
  cleanup.push(
    () => removeDir(dir),
    () => gw.close(),
  );
  await gw.initialize();
  const methods = () =>
    (existsSync(methodLog) ? readJsonLines<{ method: string }>(methodLog) : []).map((m) => m.method);
  return { gw, methods };
}

describe.each(["none", "session"] as const)(
  "a guarded read holding a number beyond the double range (approval.resources %s)",
  (resources) => {
    it("is refused number_out_of_range with its data, recorded, and never forwarded", async () => {
      const { gw, methods } = await readGateway(resources);

      const uri = await sendRaw(
        gw,
        "uri",
        '{"jsonrpc":"2.0","id":"uri","method":"resources/read","params":{"uri":1e400}}',
      );
      expect(uri.error).toMatchObject({
        code: -32602,
        data: {
          error: "number_out_of_range",
          field: "uri",
          reason: expect.any(String),
          retry: expect.any(String),
        },
      });
      const prompt = await sendRaw(
        gw,
        "prompt",
        '{"jsonrpc":"2.0","id":"prompt","method":"prompts/get","params":{"name":"p","arguments":{"n":[-1e400]}}}',
      );
      expect(prompt.error).toMatchObject({
        code: -32602,
        data: { error: "number_out_of_range", field: "arguments.n[0]" },
      });
      expect(prompt.error?.message).toContain("-Infinity");
      // _meta is recorded with the params (their digest), so it is held to the same rule
      const meta = await sendRaw(
        gw,
        "meta",
        '{"jsonrpc":"2.0","id":"meta","method":"resources/read","params":{"uri":"test://a","_meta":{"x":1e999}}}',
      );
      expect(meta.error).toMatchObject({
        code: -32602,
        data: { error: "number_out_of_range", field: "_meta.x" },
      });

      const denied = await deniedEvents(gw.stateDir, 3);
      expect(denied.map((e) => [e.requestId, e.reason, e.argumentsDigest])).toEqual([
        ["uri", "number_out_of_range", null],
        ["prompt", "number_out_of_range", null],
        ["meta", "number_out_of_range", expect.stringMatching(/^sha256:/)],
      ]);
      expect(methods().filter((m) => m !== "initialize" && !m.startsWith("notifications/"))).not.toContain(
        "resources/read",
      );
      expect(methods()).not.toContain("prompts/get");
      expect(await pending(gw.stateDir)).toEqual([]);
      expect(gw.stderr()).not.toMatch(/could not handle/);
    });
  },
);
