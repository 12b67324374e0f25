// Bad input from either side never crashes the gateway: one real gateway process in front of the
// rawlines fixture, fed sequences that fast-check generates from both ends (JSON-RPC requests,
// notifications and answers with odd ids and params, batches, bare JSON values and lines that
// are not JSON; the server's side written verbatim through the fixture's `raw/send`). After each
// sequence the gateway must still answer a ping; at the end it must still run, and its stderr
// must hold no internal error or stack trace. PORTCULLIS_FUZZ_RUNS=N runs N sequences instead of
// 60 (2,000 took about a minute here, and found nothing); PORTCULLIS_FUZZ_SHOW=1 prints the
// gateway's stderr.
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RawGateway, rawlinesGateway } from "../helpers/raw.js";

const METHODS = [
  "initialize",
  "ping",
  "tools/list",
  "tools/call",
  "resources/list",
  "resources/read",
  "prompts/list",
  "prompts/get",
  "completion/complete",
  "logging/setLevel",
  "sampling/createMessage",
  "elicitation/create",
  "roots/list",
  "notifications/initialized",
  "notifications/cancelled",
  "notifications/progress",
  "notifications/message",
  "notifications/tools/list_changed",
  "notifications/resources/updated",
  "notifications/roots/list_changed",
  "notifications/elicitation/complete",
  "x/unknown",
];

/** An id as JSON text: the kinds JSON-RPC allows and many it does not, some no serializer writes. */
const idText = fc.oneof(
  fc.integer().map(String),
  fc.constantFrom("0", "-0", "1e2", "1.5", "9007199254740993", "1e400", "null", "true", "[]", "{}"),
  fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s)),
);

const params = fc.oneof(
  fc.jsonValue({ maxDepth: 3 }),
  fc.record({
    name: fc.constantFrom("echo", "raw/send", "__proto__", ""),
    arguments: fc.jsonValue({ maxDepth: 2 }),
  }),
  fc.record({
    requestId: fc.oneof(fc.integer(), fc.string({ maxLength: 4 })),
    reason: fc.string({ maxLength: 8 }),
  }),
  fc.record({
    progressToken: fc.oneof(fc.integer(), fc.string({ maxLength: 4 }), fc.jsonValue({ maxDepth: 1 })),
    progress: fc.oneof(fc.double(), fc.integer()),
  }),
  fc.record({ _meta: fc.jsonValue({ maxDepth: 2 }), uri: fc.string({ maxLength: 8 }) }),
);

const objectParams = params.filter((p) => typeof p === "object" && p !== null && !Array.isArray(p));
const validId = fc.oneof(
  fc.integer({ min: 0, max: 50 }).map(String),
  fc.string({ maxLength: 4 }).map((s) => JSON.stringify(s)),
);
const aMethod = fc.constantFrom(...METHODS).map((m) => JSON.stringify(m));

/** A well-formed request, notification or answer, whose method, id and params are still odd. */
const wellFormed = fc.oneof(
  fc
    .tuple(validId, aMethod, objectParams)
    .map(([id, m, p]) => `{"jsonrpc":"2.0","id":${id},"method":${m},"params":${JSON.stringify(p)}}`),
  fc
    .tuple(aMethod, objectParams)
    .map(([m, p]) => `{"jsonrpc":"2.0","method":${m},"params":${JSON.stringify(p)}}`),
  fc
    .tuple(validId, fc.jsonValue({ maxDepth: 2 }))
    .map(([id, r]) => `{"jsonrpc":"2.0","id":${id},"result":${JSON.stringify(r)}}`),
);

/** Any JSON-RPC-looking message as text, with or without "jsonrpc", id and each member. */
const anyMessage = fc
  .record(
    {
      jsonrpc: fc.constantFrom('"2.0"', '"1.0"', "2", "null"),
      id: idText,
      method: fc.constantFrom(...METHODS).map((m) => JSON.stringify(m)),
      params: params.map((p) => JSON.stringify(p)),
      result: fc.jsonValue({ maxDepth: 2 }).map((r) => JSON.stringify(r)),
      error: fc
        .record({ code: fc.oneof(fc.integer(), fc.constant("x")), message: fc.string({ maxLength: 8 }) })
        .map((e) => JSON.stringify(e)),
    },
    { requiredKeys: [] },
  )
  .map(
    (m) =>
      `{${Object.entries(m)
        .map(([k, v]) => `"${k}":${v}`)
        .join(",")}}`,
  );

const message = fc.oneof({ weight: 3, arbitrary: wellFormed }, { weight: 2, arbitrary: anyMessage });

/** A line of either side: mostly messages, some batches, bare JSON values and text that is not JSON. */
const line = fc.oneof(
  { weight: 6, arbitrary: message },
  { weight: 1, arbitrary: fc.array(message, { maxLength: 3 }).map((b) => `[${b.join(",")}]`) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)) },
  { weight: 1, arbitrary: fc.string({ maxLength: 12 }).filter((s) => !s.includes("\n")) },
);

/** A step: a line from the client, or lines the server writes (through raw/send). */
const step = fc.oneof(
  { weight: 3, arbitrary: line.map((text) => ({ from: "client" as const, text })) },
  {
    weight: 2,
    arbitrary: fc
      .array(line, { minLength: 1, maxLength: 3 })
      .map((lines) => ({ from: "server" as const, lines })),
  },
);

let gw: RawGateway;
let close: () => Promise<void>;

beforeAll(async () => {
  const { peer } = await rawlinesGateway();
  gw = peer;
  close = () => peer.close();
}, 30_000);

afterAll(async () => {
  await close?.();
});

describe("hostile input from the client and the server", () => {
  it("the gateway answers a ping after every sequence, and never fails inside", async () => {
    let sent = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 8 }), async (steps) => {
        for (const s of steps) {
          if (s.from === "client") gw.send(`${s.text}\n`);
          else
            gw.send({ jsonrpc: "2.0", id: `fuzz-${sent}`, method: "raw/send", params: { lines: s.lines } });
          sent++;
        }
        const pong = await gw.request("ping", undefined, 10_000);
        expect(pong.result ?? pong.error).toBeDefined();
      }),
      { numRuns: Number(process.env.PORTCULLIS_FUZZ_RUNS ?? 60) },
    );
    if (process.env.PORTCULLIS_FUZZ_SHOW) console.log(gw.stderr());
    expect(gw.stderr()).not.toMatch(/internal error|\n\s+at .+:\d+:\d+\)?\n|Uncaught|FATAL/);
    const alive = await gw.request("tools/list", undefined, 10_000);
    expect(alive.result ?? alive.error).toBeDefined();
  }, 240_000);
});
