// The review's note beside an argument is a statement the human reads: "secrets inside redacted"
// says part of the value is hidden, "schema default" that the value is the schema's own. A value
// holding a lone surrogate (`"al\ud800ice"`: legal JSON text, which an agent can write) made the
// comparison behind both throw, and the review said "secrets inside redacted" of a value shown
// whole, and never "schema default" of a default holding one.

import { describe, expect, it } from "vitest";
import { reviewArguments } from "../../src/approval/review.js";
import type { ApprovedCall } from "../../src/guard/guard.js";

function call(effective: Record<string, unknown>, properties: Record<string, unknown>): ApprovedCall {
  return {
    definition: { inputSchema: { type: "object", properties } },
    effective,
  } as unknown as ApprovedCall;
}

describe("review notes beside a value holding a lone surrogate", () => {
  it("a value shown whole is not said to have secrets redacted", () => {
    const shown = reviewArguments(call({ to: "al\ud800ice" }, { to: { type: "string" } }));
    expect(shown).toEqual([{ name: "to", value: "al\ud800ice" }]);
  });

  it("a default holding one is said to be the schema's default", () => {
    const shown = reviewArguments(call({ to: "b\udc00" }, { to: { type: "string", default: "b\udc00" } }));
    expect(shown).toEqual([{ name: "to", value: "b\udc00", note: "schema default (given or filled in)" }]);
  });

  it("a hidden span beside one is still said to be hidden", () => {
    const [arg] = reviewArguments(call({ cfg: { token: "x\ud800", to: "a" } }, {}));
    expect(arg).toEqual({
      name: "cfg",
      value: { token: "[redacted]", to: "a" },
      note: "secrets inside redacted",
    });
  });
});
