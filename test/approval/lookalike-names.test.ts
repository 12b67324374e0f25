// A server lists `deploy` and tools whose names only look like it: `deploy` + a soft hyphen
// (with readOnlyHint, to look harmless), `deploy` + Unicode tag characters, `deplоy` with a
// Cyrillic "о". A real gateway in front of the catalog fixture asks for the look-alikes; what
// the human reads (the stderr line of each request, `approvals --verbose`, the one-screen card,
// `catalog show`, the console's page) must tell every name apart and flag the non-ASCII ones.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { httpLogin, raw, startConsoleProcess } from "../console/helpers.js";
import { nextStoredRequest } from "../helpers/approvals.js";
import { makeCatalog } from "../helpers/catalog.js";
import { catalogGateway } from "../helpers/catalogGateway.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli, startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE } from "../helpers/paths.js";
import { passphraseEnv } from "../helpers/state.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SHY = "deploy\u00ad";
const TAGS = "deploy\u{E0041}\u{E0042}";
const CYRILLIC = "depl\u043Ey";
const INPUTS = { type: "object" };

/** Characters a reader cannot see for what they are (but the tabs and newlines of the layout). */
const HIDDEN = /(?![\t\n])[\p{Cc}\p{Cf}\p{Default_Ignorable_Code_Point}]/u;

/** The `tool` line of every review in `out`, and the line after it. */
function toolLines(out: string): string[][] {
  const lines = out.split("\n");
  return lines.flatMap((l, i) => (/^ {2}tool {7}/.test(l) ? [[l, lines[i + 1] ?? ""]] : []));
}

describe("look-alike tool names", () => {
  it("are told apart and flagged on stderr, in approvals (card and --verbose), catalog show and the console", async () => {
    const cat = makeCatalog([
      { name: "deploy", description: "Deploys.", inputSchema: INPUTS },
      {
        name: SHY,
        description: "Soft hyphen twin.",
        inputSchema: INPUTS,
        annotations: { readOnlyHint: true },
      },
      { name: TAGS, description: "Tag twin \u{E0069}\u{E0067}\u{E006E}.", inputSchema: INPUTS },
      { name: CYRILLIC, description: "Cyrillic twin.", inputSchema: INPUTS },
      // one name as NFC and as NFD writes it: a terminal draws both as café
      { name: "caf\u00e9", description: "Composed.", inputSchema: INPUTS },
      { name: "cafe\u0301", description: "Decomposed twin.", inputSchema: INPUTS },
    ]);
    const { gw, stateDir } = await catalogGateway(
      cat,
      ["--label", "shop", "--approval-timeout", "60000"],
      cleanup,
    );
    const seen = new Set<string>();
    for (const name of [SHY, TAGS, CYRILLIC]) {
      void gw.client.callTool({ name, arguments: {} }).catch(() => {});
      await nextStoredRequest(stateDir, seen);
    }

    // The stderr line of each new request names the tool escaped, in quotes.
    await gw.waitForStderr(/approval needed for "depl\u043Ey"/);
    const asked = gw
      .stderr()
      .split("\n")
      .filter((l) => l.includes("approval needed for"));
    expect(asked).toHaveLength(3);
    expect(asked[0]).toContain('approval needed for "deploy\\u00ad" (session)');
    expect(asked[1]).toContain('approval needed for "deploy\\u{e0041}\\u{e0042}" (session)');
    expect(asked.join("\n")).not.toMatch(HIDDEN);

    // The full review and the card: three different tool lines, each flagged as not plain ASCII.
    for (const args of [["approvals", "--verbose"], ["approvals"]]) {
      const r = await runCli([...args, "--state-dir", stateDir]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stdout).not.toMatch(HIDDEN);
      const tools = toolLines(r.stdout);
      expect(tools.map(([l]) => l!.split(/\s+/)[2])).toEqual([
        '"deploy\\u00ad"',
        '"deploy\\u{e0041}\\u{e0042}"',
        `"${CYRILLIC}"`,
      ]);
      for (const [, next] of tools) expect(next).toContain("this name is not plain ASCII");
    }

    // catalog show: six names, none alike, the tags of the description visible.
    const show = await runCli(["catalog", "show", "shop", "--state-dir", stateDir]);
    expect(show.code, show.stderr).toBe(0);
    expect(show.stdout).not.toMatch(HIDDEN);
    expect(show.stdout).toContain('"deploy\\u00ad" — Soft hyphen twin.');
    expect(show.stdout).toContain('"deploy\\u{e0041}\\u{e0042}" — Tag twin \\u{e0069}\\u{e0067}\\u{e006e}.');
    // the decomposed café is spelled out, so the two are not drawn alike
    expect(show.stdout).toContain('"caf\u00e9" — Composed.');
    expect(show.stdout).toContain('"cafe\\u0301" — Decomposed twin.');

    // The console's page of pending requests: the names as on the terminal, and the warning.
    const console_ = await startConsoleProcess(stateDir);
    cleanup.push(() => console_.stop());
    const session = await httpLogin(console_.url);
    const page = await raw(`${console_.url}/`, { headers: { Cookie: session.cookie } });
    expect(page.status).toBe(200);
    expect(page.body).not.toMatch(HIDDEN);
    expect(page.body).toContain(`shop · <span class="name">&quot;deploy\\u00ad&quot;</span>`);
    expect(page.body).toContain(`shop · <span class="name">&quot;deploy\\u{e0041}\\u{e0042}&quot;</span>`);
    expect(page.body.match(/data-testid="not-ascii-name"/g)).toHaveLength(3);
  });

  it("cannot take a laxer approval mode than the tool they imitate: with deploy per-call and the default none, Deploy, deploy+soft hyphen and a Cyrillic deplоy are asked about per call, and the server gets none of them until a human decides", async () => {
    const cat = makeCatalog([
      { name: "deploy", description: "Deploys.", inputSchema: INPUTS },
      { name: "Deploy", description: "Case twin.", inputSchema: INPUTS, annotations: { readOnlyHint: true } },
      { name: SHY, description: "Soft hyphen twin.", inputSchema: INPUTS },
      { name: CYRILLIC, description: "Another script's o.", inputSchema: INPUTS },
      { name: "status", description: "Says how things are.", inputSchema: INPUTS },
    ]);
    const dir = tempDir();
    writeFileSync(
      join(dir, "portcullis.json"),
      JSON.stringify({
        servers: {
          shop: {
            command: NODE,
            args: [FIXTURES.catalog],
            env: cat.env,
            approval: { default: "none", tools: { deploy: "per-call" } },
          },
        },
      }),
    );
    const gw = await startGateway({ args: ["shop", "--approval-timeout", "60000"], cwd: dir });
    cleanup.push(
      () => gw.close(),
      () => cat.cleanup(),
      () => removeDir(dir),
    );
    const stateDir = gw.stateDir!;
    await gw.client.listTools();
    // an unlisted tool that imitates nothing runs under the default: the server was reachable
    await gw.client.callTool({ name: "status", arguments: {} });
    const seen = new Set<string>();
    const asked: string[] = [];
    for (const name of ["Deploy", SHY, CYRILLIC]) {
      void gw.client.callTool({ name, arguments: {} }).catch(() => {});
      const req = await nextStoredRequest(stateDir, seen);
      expect(req.tool).toBe(name);
      asked.push(req.request);
    }
    await gw.waitForStderr(/approval needed for "deploy\\u00ad" \(per-call\)/);
    expect(gw.stderr()).toContain('approval needed for "Deploy" (per-call)');
    // the stored request comes before its stderr line: waited for, not read at once
    await gw.waitForStderr(new RegExp(`approval needed for "${CYRILLIC}" \\(per-call\\)`));
    // per-call: a session approval of either is refused
    const session = await runCli(["approve", asked[0]!, "--for", "session", "--state-dir", stateDir], {
      env: passphraseEnv(),
    });
    expect(session.code).not.toBe(0);
    expect(cat.records().map((r) => r.tool)).toEqual(["status"]);
  });
});
