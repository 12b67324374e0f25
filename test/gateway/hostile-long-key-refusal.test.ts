// A client's arguments name their own keys, and the guard's refusal names the field it refuses:
// a key of 100,000 characters holding a newline and a terminal escape came back whole and raw in
// the refusal's text (and its data.field), a flood of the client's own making in front of its
// human, and a forged line in whatever shows it. The field is named shortened (an ellipsis and
// its length) with its control characters escaped (src/util/valuePath.ts). Real gateway, real
// catalog fixture, the request written as raw JSON text.
import { afterEach, expect, it } from "vitest";
import { makeCatalog } from "../helpers/catalog.js";
import { fixtureCommand } from "../helpers/paths.js";
import { rawGateway } from "../helpers/raw.js";

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

const LONG_KEY = `note\n\u001b[31mforged line ${"x".repeat(100_000)}`;

it("a refusal names a long, hostile key shortened and escaped", async () => {
  const cat = makeCatalog([PAY]);
  const gw = rawGateway({
    args: ["--label", "pay", "--approval", "none", "--", ...fixtureCommand("catalog")],
    env: cat.env,
  });
  cleanup.push(
    () => cat.cleanup(),
    () => gw.close(),
  );
  await gw.initialize();
  expect((await gw.request("tools/list")).result).toBeDefined();
  for (const [id, value, says] of [
    ["huge", "1e400", "beyond the range of JSON numbers"],
    ["respelled", "9007199254740993", "the number 9007199254740993"],
  ] as const) {
    const args = `{"to":"bob","amount":1,${JSON.stringify(LONG_KEY)}:${value}}`;
    gw.send(
      `{"jsonrpc":"2.0","id":"${id}","method":"tools/call","params":{"name":"pay","arguments":${args}}}\n`,
    );
    const answer = await gw.next((m) => m.id === id && m.method === undefined, 20_000);
    const text = JSON.stringify(answer);
    expect(text, id).toContain(says);
    expect(text, id).toContain(`… (${LONG_KEY.length} characters)`);
    expect(text.length, id).toBeLessThan(4_000);
    // the key's newline and escape are not raw where a human reads the answer
    const words = answer.error
      ? JSON.stringify(answer.error.message) + JSON.stringify(answer.error.data)
      : (answer.result as { content: { text: string }[] }).content.map((c) => c.text).join(" ");
    expect(words, id).not.toContain("\u001b");
    expect(words, id).not.toContain("\nforged");
  }
});
