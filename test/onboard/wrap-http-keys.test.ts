// An HTTP entry ("url", or a "type" other than "stdio") holding a mistyped key ("urll", "header"
// for "headers") or a "type" its host does not know ("htpp", "stdoi"): the host connects to the
// server without its headers, or does not run the entry as meant. Wrap checked the keys of stdio
// entries only, so it said of such an entry "left alone: an HTTP entry …" and sent the user to
// guard it by hand from the mistake (a stdio entry with "type": "stdoi" was even taken for an
// HTTP one). Now it refuses the entry as it refuses a stdio entry's "arg", naming the key and
// the one meant (the keys each host reads in an HTTP entry; Codex's "http_headers" for a
// "headers"); another unknown key (another client's "timeout", "disabled") is kept as written;
// doctor reports the same with the rename, and leaves the entry out of its "to guard one"
// advice. The real CLI, real host files in a fake home.
import { writeFileSync } from "node:fs";
import { parse as parseJsonc } from "jsonc-parser";
import { parse as parseToml } from "smol-toml";
import { describe, expect, it } from "vitest";
import { fakeUsersOfEachTest, read } from "./hosts.js";

const user = fakeUsersOfEachTest();

// biome-ignore lint/suspicious/noExplicitAny: host documents are checked loosely
type Doc = any;

type Finding = { ok: boolean; what: string; next: string };

const URL_ = "https://mcp.example.com/mcp";

describe("wrap and a mistyped key or type in an HTTP entry", () => {
  it("Claude Code: urll, header, type htpp and stdoi refused with the key meant; other keys kept; exit 1; doctor says the renames", async () => {
    const u = user();
    const file = u.files["claude-code"];
    const before = {
      mcpServers: {
        urll: { type: "http", urll: URL_ },
        hdr: { type: "http", url: URL_, header: { "X-Team": "blue" } },
        htpp: { type: "htpp", url: URL_ },
        stdoi: { type: "stdoi", command: "node", args: ["x.js"] },
        fine: { type: "http", url: URL_, headers: { "X-Team": "blue" }, timeout: 60, disabled: false },
        local: { command: "node", args: ["server.js"] },
      },
    };
    writeFileSync(file, JSON.stringify(before, null, 2));
    const r = await u.cli(["wrap", "claude-code"]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toContain(`${file}: wrapped local\n`);
    const http =
      "a key Claude Code does not read in an HTTP server entry: the host connects to the server without it, and the entry that guards it with portcullis would be written from that mistake; rename it as suggested, then run wrap again.";
    expect(r.stderr).toContain(
      `portcullis wrap: not wrapped: ${file}: server "urll" has "urll" (did you mean "url"?), ${http}`,
    );
    expect(r.stderr).toContain(
      `not wrapped: ${file}: server "hdr" has "header" (did you mean "headers"?), ${http}`,
    );
    expect(r.stderr).toContain(
      `not wrapped: ${file}: server "htpp" has "type": "htpp" (did you mean "http"?), a "type" Claude Code does not know: the host does not run the server as the entry means, and the entry that guards it with portcullis would be written from that mistake; correct it as suggested, then run wrap again.`,
    );
    // a stdio entry, not taken for an HTTP one for its mistyped "type"
    expect(r.stderr).toContain(
      `not wrapped: ${file}: server "stdoi" has "type": "stdoi" (did you mean "stdio"?), a "type" Claude Code does not know: the host does not run the server as the entry means, and wrap would put that mistake behind portcullis;`,
    );
    // was: "left alone: … (an HTTP entry (url), which wrap leaves alone)" and "to guard hdr, htpp, …"
    expect(r.stdout).toContain("  left alone: fine (an HTTP entry (url), which wrap leaves alone)\n");
    expect(r.stdout).toMatch(/ {2}to guard fine: replace its entry by hand/);
    for (const key of ["urll", "hdr", "htpp", "stdoi"]) expect(r.stdout).not.toContain(`left alone: ${key} `);
    const after: Doc = parseJsonc(read(file)).mcpServers;
    for (const key of ["urll", "hdr", "htpp", "stdoi", "fine"])
      expect(after[key]).toEqual(before.mcpServers[key as "fine"]);

    // --json: the refusals as data, the same exit
    const json = await u.cli(["wrap", "claude-code", "--dry-run", "--json"]);
    expect(json.code, json.stderr).toBe(1);
    const [report] = JSON.parse(json.stdout).files;
    expect(report.refused.map((x: { key: string }) => x.key)).toEqual(["urll", "hdr", "htpp", "stdoi"]);

    const doctor = await u.cli(["doctor", "--json"]);
    const findings = (JSON.parse(doctor.stdout) as { findings: Finding[] }).findings.filter((f) =>
      f.what.startsWith(file),
    );
    expect(findings).toContainEqual({
      ok: false,
      what: `${file}: "hdr" has "header" (did you mean "headers"?), which Claude Code does not read in an HTTP server entry: the host connects to the server without it`,
      next: 'rename "header" to "headers"',
    });
    expect(findings).toContainEqual({
      ok: false,
      what: `${file}: "htpp" has "type": "htpp" (did you mean "http"?), a "type" Claude Code does not know: the host does not run the server as the entry means`,
      next: 'change "type" to "http"',
    });
    expect(findings.find((f) => f.what.includes('"urll" has "urll"'))?.next).toBe('rename "urll" to "url"');
    // the entries to guard by hand: the one without a mistake only
    const guard = findings.find((f) => f.what.includes("not stdio servers, which wrap leaves alone"));
    expect(guard?.what).toBe(`${file}: not stdio servers, which wrap leaves alone: fine`);
  });

  it('Codex TOML: an HTTP entry\'s "headers" is refused for "http_headers"; its own keys taken', async () => {
    const u = user();
    const file = u.files.codex;
    writeFileSync(
      file,
      [
        "[mcp_servers.remote]",
        `url = "${URL_}"`,
        'headers = { X-Team = "blue" }',
        "",
        "[mcp_servers.fine]",
        `url = "${URL_}"`,
        'bearer_token_env_var = "DOCS_TOKEN"',
        'http_headers = { X-Team = "blue" }',
        "startup_timeout_sec = 30",
        "",
      ].join("\n"),
    );
    const r = await u.cli(["wrap", "codex"]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(
      `not wrapped: ${file}: server "remote" has "headers" (did you mean "http_headers"?), a key Codex does not read in an HTTP server entry`,
    );
    expect(r.stderr).not.toContain('"fine"');
    expect(r.stdout).toContain("  left alone: fine (an HTTP entry (url), which wrap leaves alone)\n");
    const doc: Doc = parseToml(read(file));
    expect(doc.mcp_servers.remote.headers).toEqual({ "X-Team": "blue" });
  });
});
