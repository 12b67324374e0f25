import { describe, expect, it } from "vitest";
import {
  isGatewayMetaKey,
  mayHideGatewayMeta,
  mayHideGatewayWords,
  resultWithoutGatewayMeta,
  withoutGatewayMeta,
} from "../../src/gateway/gatewayMeta.js";
import { REFUSED_SUBSCRIPTIONS_META } from "../../src/gateway/protocol.js";
import { mayHideGatewayMarks } from "../../src/gateway/serverWords.js";

describe("the gateway's own _meta keys", () => {
  it("the key the gateway writes is one of them, in any case; other prefixes are not", () => {
    expect(isGatewayMetaKey(REFUSED_SUBSCRIPTIONS_META)).toBe(true);
    expect(isGatewayMetaKey("PORTCULLIS/verdict")).toBe(true);
    expect(isGatewayMetaKey("portcullis")).toBe(false);
    expect(isGatewayMetaKey("io.portcullis/x")).toBe(false);
    expect(isGatewayMetaKey("io.modelcontextprotocol/subscriptionId")).toBe(false);
  });

  it("takes out only those keys, and leaves a part without them alone", () => {
    expect(withoutGatewayMeta({ a: 1, _meta: { "portcullis/x": 1, "Portcullis/y": 2, "b/c": 3 } })).toEqual({
      part: { a: 1, _meta: { "b/c": 3 } },
      taken: 2,
    });
    expect(withoutGatewayMeta({ _meta: { "b/c": 3 } })).toBeNull();
    expect(withoutGatewayMeta({ _meta: ["portcullis/x"] })).toBeNull();
    expect(withoutGatewayMeta(["portcullis/x"])).toBeNull();
    expect(withoutGatewayMeta(undefined)).toBeNull();
  });

  it("a line that names the prefix, or spells a key reading as it with an escape, is not sent as written", () => {
    expect(mayHideGatewayMeta('{"result":{"_meta":{"portcullis/x":1},"_meta":{}}}')).toBe(true);
    expect(mayHideGatewayMeta('{"result":{"_meta":{"portcullis\\u002fx":1},"_meta":{}}}')).toBe(true);
    expect(mayHideGatewayMeta('{"result":{"text":"portcullis\\u002fx"}}')).toBe(false);
    expect(mayHideGatewayMeta('{"result":{"_meta":{"portcullis\\/x":1},"_meta":{}}}')).toBe(true);
    expect(mayHideGatewayMeta('{"result":{"_meta":{"Portcullis/X":1},"_meta":{}}}')).toBe(true);
    expect(mayHideGatewayMeta('{"result":{"text":"a\\nb \\"q\\"","_meta":{"x":1}}}')).toBe(false);
    expect(mayHideGatewayMeta('{"result":{"_meta":{"x":1}}}')).toBe(false);
    expect(mayHideGatewayMeta(undefined)).toBe(false);
  });
  it("takes them out of a relayed list's items too, and of no other result's members", () => {
    const item = { uri: "file:///a", _meta: { "portcullis/x": 1, "b/c": 2 } };
    expect(
      resultWithoutGatewayMeta("resources/list", {
        resources: [item, { uri: "file:///b" }],
        _meta: { "portcullis/y": 1 },
      }),
    ).toEqual({
      part: { resources: [{ uri: "file:///a", _meta: { "b/c": 2 } }, { uri: "file:///b" }], _meta: {} },
      taken: 2,
    });
    expect(
      resultWithoutGatewayMeta("prompts/list", { prompts: [{ name: "p", _meta: { "b/c": 2 } }] }),
    ).toBeNull();
    expect(resultWithoutGatewayMeta("resources/list", { resources: "none" })).toBeNull();
    // a tools/call result's content is not a list the gateway walks
    expect(resultWithoutGatewayMeta("tools/call", { content: [item] })).toBeNull();
  });

  it("one scan says what mayHideGatewayMarks and mayHideGatewayMeta say, either of them", () => {
    const lines = [
      '{"result":{"_meta":{"portcullis\\u002fx":1},"_meta":{}}}',
      '{"result":{"_meta":{"portcullis\\/x":1},"_meta":{}}}',
      '{"result":{"requestSt\\u0061te":"x"}}',
      '{"result":{"text":"a\\/b \\u0041","_meta":{"x":1}}}',
      '{"result":{"text":"requestState"}}',
      '{"result":{"_meta":{"x":1}}}',
      '{"error":{"code":1,"message":"m"}}',
    ];
    for (const line of lines) {
      const msg = JSON.parse(line) as { error?: unknown };
      expect([line, mayHideGatewayWords(msg, line)]).toEqual([
        line,
        mayHideGatewayMarks(msg, line) || mayHideGatewayMeta(line),
      ]);
    }
    expect(mayHideGatewayWords({}, '{"result":{"text":"a\\/b"}}')).toBe(false);
    expect(mayHideGatewayWords({}, '{"result":{"_meta":{"portcullis\\/x":1}}}')).toBe(true);
    expect(mayHideGatewayWords({}, undefined)).toBe(false);
  });
});
