// A mistyped key of portcullis.json is said the same way in every section: the file, the key's
// path, "is not a known key" and the key it most likely meant. The console section said
// `console.proofWindw is not a key (expected "proofWindow")`, the top level `unknown key "consol"
// (expected "servers" …)`, and identity, approval, audit, tools, credentials and headers a bare
// "is not a known key" with no guess, while a server's own keys got "(did you mean …?)".
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { loadConfigFile } from "../../src/config/config.js";

function refusal(doc: unknown): { file: string; message: string } {
  const file = join(mkdtempSync(join(tmpdir(), "pc-unknown-key-")), "portcullis.json");
  writeFileSync(file, JSON.stringify(doc));
  try {
    loadConfigFile(file);
  } catch (e) {
    return { file, message: (e as Error).message };
  }
  throw new Error("loaded");
}

const server = (extra: Record<string, unknown>) => ({ servers: { a: { command: "x", ...extra } } });
const remote = (extra: Record<string, unknown>) => ({
  servers: { a: { type: "http", url: "https://example.com/mcp", ...extra } },
});

describe("an unknown key in each section of portcullis.json", () => {
  it.each([
    [{ servers: {}, consol: {} }, "consol", "console"],
    [{ servers: {}, console: { proofWindw: 3 } }, "console.proofWindw", "proofWindow"],
    [server({ onchange: "restart" }), "servers.a.onchange", "onChange"],
    [server({ identity: { inclde: [] } }), "servers.a.identity.inclde", "include"],
    [server({ approval: { defualt: "session" } }), "servers.a.approval.defualt", "default"],
    [server({ audit: { argumnts: "digest" } }), "servers.a.audit.argumnts", "arguments"],
    [
      server({ credentials: { K: { secrte: "s", deliver: "env" } } }),
      "servers.a.credentials.K.secrte",
      "secret",
    ],
    [server({ tools: { t: { credentails: [] } } }), "servers.a.tools.t.credentails", "credentials"],
    [remote({ headers: { X: { secret: "s", formt: "Bearer {}" } } }), "servers.a.headers.X.formt", "format"],
  ])("%j: %s, did you mean %s", (doc, path, meant) => {
    const r = refusal(doc);
    expect(r.message).toBe(`${r.file}: ${path} is not a known key (did you mean ${meant}?).`);
  });

  it("without a near key, the keys the place takes", () => {
    const r = refusal({ servers: {}, console: { window: 3 } });
    expect(r.message).toBe(
      `${r.file}: console.window is not a known key (the keys here: proofWindow, perCallProof).`,
    );
    const a = refusal(server({ audit: { zzzz: 1 } }));
    expect(a.message).toBe(`${a.file}: servers.a.audit.zzzz is not a known key (the keys here: arguments).`);
  });

  it("a key that is no identifier is quoted in brackets, its control characters escaped", () => {
    const r = refusal({ servers: {}, console: { "proof\u001b[2Jwindow": 3 } });
    expect(r.message).toBe(
      `${r.file}: console["proof\\u001b[2Jwindow"] is not a known key (the keys here: proofWindow, perCallProof).`,
    );
    const s = refusal(server({ "on change": "restart" }));
    expect(s.message).toMatch(/: servers\.a\["on change"\] is not a known key \(/);
  });
});
