// `catalog show` of a stored revision drew its coverage again from the entries stored, which are
// only the ones kept: the entries dropped (one that cannot be fingerprinted, such as a definition
// holding 1e400) were never named, and the count of entries received left them out, though the
// revision's stored coverage (`--json`) holds them. The text now says what the stored coverage
// says, read warily: a row rewritten by another process into anything malformed adds nothing and
// never crashes the command. Real gateway before the rawlines fixture (a real process writing the
// tool list's JSON text as given), the real CLI, the store rewritten with SQL.
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { fixtureCommand } from "../helpers/paths.js";
import { type RawGateway, rawGateway } from "../helpers/raw.js";
import { DEPLOY, DEPLOY_1E400, STATUS } from "../helpers/unfingerprintableTools.js";

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

/** a tool listed only with such a number: not in the catalog at all */
const PURGE_1E400 =
  '{"name":"purge","description":"Purge.","inputSchema":{"type":"object","properties":{"n":{"type":"number","minimum":-1e400}}}}';
const UNFINGERPRINTABLE = "cannot be fingerprinted (canonical JSON: non-finite number)";

/** A gateway before the rawlines fixture listing `entries`, its catalog recorded as revision 1. */
async function recorded(entries: string[]): Promise<RawGateway> {
  const dir = tempDir("portcullis-show-dropped-");
  const tools = join(dir, "tools.json");
  writeFileSync(tools, `[${entries.join(",")}]`);
  const gw = rawGateway({
    args: ["--label", "twin", "--approval", "none", "--", ...fixtureCommand("rawlines")],
    env: { FIXTURE_RAW_LOG: join(dir, "raw.log"), FIXTURE_RAW_TOOLS_FILE: tools },
  });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  await gw.initialize();
  // served from the verified snapshot: recorded once it answers
  const r = await gw.request("tools/list");
  expect(r.error, JSON.stringify(r.error)).toBeUndefined();
  return gw;
}

async function shown(stateDir: string): Promise<string> {
  const r = await runCli(["catalog", "show", "twin", "--state-dir", stateDir]);
  expect(r.stderr).toBe("");
  expect(r.code).toBe(0);
  return r.stdout;
}

const dropped = (text: string) => text.split("\n").find((l) => l.startsWith("  dropped entries:"));

describe("catalog show of a stored revision with entries dropped", () => {
  it("names each dropped entry with its reason, counts it among the entries received, and names the name withheld", async () => {
    const gw = await recorded([DEPLOY, STATUS, DEPLOY_1E400, PURGE_1E400]);
    const text = await shown(gw.stateDir);
    // four entries received, two of them dropped: it said "1 tool from 2 entries"
    expect(text).toContain("  1 tool from 4 entries on 1 page (complete)");
    expect(dropped(text)).toBe(`  dropped entries: #2 ${UNFINGERPRINTABLE}; #3 ${UNFINGERPRINTABLE}`);
    // the twin's name, withheld for the entry that could not be fingerprinted
    expect(text).toContain(
      "listed also with a definition portcullis cannot fingerprint (NOT served, calls refused until the server lists each once with one it can): deploy",
    );
    // what the text says is what the stored coverage says
    const json = JSON.parse(
      (await runCli(["catalog", "show", "twin", "--json", "--state-dir", gw.stateDir])).stdout,
    );
    expect(json.coverage).toMatchObject({
      pages: 1,
      tools: 4,
      invalid: [
        { index: 2, reason: UNFINGERPRINTABLE },
        { index: 3, reason: UNFINGERPRINTABLE },
      ],
    });
  });

  it("a coverage row rewritten into anything malformed adds nothing and never crashes; what is well formed is shown escaped and bounded", async () => {
    const gw = await recorded([DEPLOY, STATUS, DEPLOY_1E400]);
    const db = new Database(join(gw.stateDir, "portcullis.db"));
    cleanup.push(() => {
      db.close();
    });
    const forge = (coverage: string) =>
      db
        .prepare(
          "UPDATE catalog_revisions SET coverage_json = ? WHERE server_label = 'twin' AND revision = 1",
        )
        .run(coverage);
    // no coverage to read: the header drawn from the entries stored, nothing dropped named
    for (const text of ["not json{", "42", "null", "[]", '"text"', '{"invalid":{"index":2,"reason":"x"}}']) {
      forge(text);
      const out = await shown(gw.stateDir);
      expect(out, text).toContain("  2 tools from 2 entries on 1 page (complete)");
      expect(dropped(out), text).toBeUndefined();
    }
    // each malformed member passed over; the one well-formed entry shown, escaped
    forge(
      JSON.stringify({
        pages: "3",
        tools: 1,
        complete: "no",
        invalid: [
          7,
          null,
          [],
          { index: "2", reason: "index as text" },
          { index: 1.5, reason: "index not whole" },
          { index: 1e20, reason: "index past a safe integer" },
          { index: -5, reason: "index below -1" },
          { index: 2, reason: { a: 1 } },
          { index: 2 },
          { index: 2, reason: "cannot be fingerprinted \u001b[2J\u202eevil" },
        ],
        unfingerprintable: "deploy",
      }),
    );
    const odd = await shown(gw.stateDir);
    expect(odd).not.toContain("\u001b");
    expect(odd).not.toContain("\u202e");
    expect(dropped(odd)).toBe("  dropped entries: #2 cannot be fingerprinted \\u001b[2J\\u202eevil");
    // pages and complete malformed: as drawn; entries received: no fewer than stored and dropped
    expect(odd).toContain("  2 tools from 3 entries on 1 page (complete)");
    // well formed: the recorded pages, count and completeness; 25 dropped entries, the first 20
    // shown, each reason cut
    forge(
      JSON.stringify({
        pages: 2,
        tools: 40,
        complete: false,
        invalid: Array.from({ length: 25 }, (_, i) => ({ index: i + 2, reason: "r".repeat(500) })),
      }),
    );
    const many = await shown(gw.stateDir);
    expect(many).toContain("  2 tools from 40 entries on 2 pages (INCOMPLETE: not every page was fetched)");
    const line = dropped(many)!;
    expect(line).toContain("#21 ");
    expect(line).not.toContain("#22 ");
    expect(line).toContain("; … and 5 more");
    expect(line).toContain("… (300 more chars)");
    expect(line.length).toBeLessThan(20 * 260);
  });

  it("a stored entry rewritten past the nesting the fingerprint takes is said to be dropped, not hidden", async () => {
    const gw = await recorded([STATUS]);
    const db = new Database(join(gw.stateDir, "portcullis.db"));
    cleanup.push(() => {
      db.close();
    });
    const deep = `{"name":"deep","x":${"[".repeat(3000)}${"]".repeat(3000)}}`;
    db.prepare(
      "UPDATE catalog_revisions SET tools_json = ? WHERE server_label = 'twin' AND revision = 1",
    ).run(`[${STATUS},${deep}]`);
    const text = await shown(gw.stateDir);
    expect(dropped(text)).toMatch(
      /^ {2}dropped entries: #1 stored entry, rewritten in the store: cannot be fingerprinted \(/,
    );
    expect(text).toContain("  1 tool from 2 entries on 1 page (complete)");
  });
});
