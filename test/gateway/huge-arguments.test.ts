// A call whose argument is millions of characters long, through a real gateway that records
// arguments in clear (`--audit-arguments clear`): every string of them is redacted for the
// intent record. A base64url JSON document begins `eyJ`, and an 8 MiB one with two dots reads as
// a JWT: the redaction's regular expression ran out of backtracking room ("Maximum call stack size
// exceeded"), the intent could not be written, and the call was refused audit_unavailable every
// time. Now it is forwarded, and the record holds the argument redacted (test/util/redact-large.test.ts
// for every shape).
import { afterEach, describe, expect, it } from "vitest";
import { auditEvents } from "../helpers/approvals.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";

const peers: RawGateway[] = [];
afterEach(async () => {
  for (const p of peers.splice(0)) await p.close();
});

const MiB = 1024 * 1024;

describe("a call with an argument of millions of characters", () => {
  it("arguments recorded in clear: it is forwarded and answered, its argument redacted in the record", async () => {
    const gw = rawGateway({
      args: [
        "--label",
        "big",
        "--approval",
        "none",
        "--audit-arguments",
        "clear",
        "--",
        ...fixtureCommand("rawlines"),
      ],
      env: { FIXTURE_RAW_TOOLS: JSON.stringify([{ name: "upload", inputSchema: { type: "object" } }]) },
    });
    peers.push(gw);
    await gw.initialize();
    await gw.request("tools/list");
    const blob = `eyJ${"a".repeat(4 * MiB)}.${"b".repeat(4 * MiB)}.sig`;
    const r = await gw.request(
      "tools/call",
      { name: "upload", arguments: { blob, note: "key sk-live-0123456789abcdef0123 kept?", name: "report" } },
      60_000,
    );
    expect(r.error).toBeUndefined();
    expect(r.result).toEqual({});
    const called = (await auditEvents(gw.stateDir)).filter((e) => e.type === "tool_called");
    expect(called.map((e) => e.arguments)).toEqual([
      { blob: "[redacted]", note: "key [redacted] kept?", name: "report" },
    ]);
  });

  it("a base64 argument of 8 MiB is checked against format byte: valid is forwarded, invalid refused with the format's sentence", async () => {
    const schema = { type: "object", properties: { file: { type: "string", format: "byte" } } };
    const gw = rawGateway({
      args: ["--label", "upload", "--approval", "none", "--", ...fixtureCommand("rawlines")],
      env: { FIXTURE_RAW_TOOLS: JSON.stringify([{ name: "upload", inputSchema: schema }]) },
    });
    peers.push(gw);
    await gw.initialize();
    await gw.request("tools/list");
    const file = `${"QUJD".repeat(2 * MiB)}QQ==`;
    const ok = await gw.request("tools/call", { name: "upload", arguments: { file } }, 60_000);
    expect(ok.error).toBeUndefined();
    expect(ok.result).toEqual({});
    const bad = await gw.request("tools/call", { name: "upload", arguments: { file: `${file}!` } }, 60_000);
    expect(bad.result?.isError).toBe(true);
    const text = JSON.stringify(bad.result?.content);
    expect(text).toMatch(/format/);
    expect(text).not.toMatch(/could not be checked|call stack/);
  });
});
