// The gateway as built validates calls with ajv from one bundled file (dist/cli/validatorEngine.cjs,
// made by scripts/bundle.mjs; src/catalog/ajvModules.ts says why), not from the 94 files of ajv and its dependencies.
// A build that dropped the bundle would still validate (from the packages), only slower: this
// is what would notice. And a bundle made from another ajv than the installed one would be code
// the lockfile does not pin.
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { loadAjvModules } from "../../src/catalog/ajvModules.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { type Session, startGateway } from "../helpers/gateway.js";
import { FIXTURES, NODE, REPO } from "../helpers/paths.js";

const ENGINE = join(REPO, "dist", "cli", "validatorEngine.cjs");
const require = createRequire(import.meta.url);

describe("the bundled validator engine", () => {
  let session: Session<import("@modelcontextprotocol/sdk/client/index.js").Client> | null = null;
  let dir: string | null = null;
  afterEach(async () => {
    await session?.close();
    session = null;
    if (dir) removeDir(dir);
    dir = null;
  });

  it("is made of the ajv the lockfile installs", () => {
    const bundle = require(ENGINE) as { version: string };
    const installed = JSON.parse(readFileSync(join(REPO, "node_modules", "ajv", "package.json"), "utf8"));
    expect(bundle.version).toBe(installed.version);
  });

  it("is what the built gateway loads to validate a call, and ajv's own files are not", async () => {
    dir = tempDir("portcullis-engine-");
    const log = join(dir, "requires.log");
    session = await startGateway({
      args: ["--approval", "none", "--", NODE, FIXTURES.echo],
      env: {
        NODE_OPTIONS: `--require ${join(REPO, "test", "catalog", "children", "logRequires.cjs")}`,
        REQUIRE_LOG: log,
      },
    });
    await session.client.listTools();
    const ok = await session.client.callTool({ name: "echo", arguments: { message: "hi" } });
    expect(ok.isError).toBeFalsy();
    // the validator ran: arguments its schema refuses are refused
    const bad = await session.client.callTool({ name: "echo", arguments: { message: 42 } });
    expect(bad.isError).toBe(true);
    expect((bad.content as { text: string }[])[0]?.text).toMatch(/Field "message" must be of type string/);
    const loaded = readFileSync(log, "utf8").split("\n");
    expect(loaded).toContain(ENGINE);
    expect(loaded.filter((p) => p.includes(`${join("node_modules", "ajv")}/`))).toEqual([]);
    // the schema was checked against the meta-schema by the check the build shipped, not by ajv
    // compiling the meta-schema, whose patterns would have loaded the linear-time pattern engine
    // (the echo tool's schema has no pattern: nothing else needs it)
    expect(loaded.filter((p) => p.includes(`${join("node_modules", "re2js")}/`))).toEqual([]);
  });

  it("is not needed: run from the sources, ajv comes from its packages", () => {
    const m = loadAjvModules();
    expect(m.from).toBe("packages");
    const ajv = new m.Ajv2020({ strict: false });
    m.addFormats(ajv);
    expect(ajv.validate({ type: "string", format: "email" }, "a@b.example")).toBe(true);
    expect(ajv.validate({ type: "string", format: "email" }, "nope")).toBe(false);
  });
});
