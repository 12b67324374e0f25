// Which code validates arguments when the bundled engine (validatorEngine.cjs, beside the module
// that loads it: src/catalog/ajvModules.ts) is absent, broken, or requires a file that is missing.
// Only its absence may fall back to ajv's packages; a bundle that is there and fails must fail the
// load, not be replaced by other code in silence. The built module runs in a child process from a
// directory of its own, beside the bundle each case writes.
import { spawnSync } from "node:child_process";
import { copyFileSync, symlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { removeDir, tempDir } from "../helpers/files.js";
import { NODE, REPO } from "../helpers/paths.js";

const BUILT = join(REPO, "dist", "catalog", "ajvModules.js");

/** Loads the engine from `dir`, validates one e-mail address, prints where ajv came from. */
function load(dir: string): { status: number | null; out: string; err: string } {
  const script = `import(${JSON.stringify(join(dir, "ajvModules.js"))}).then((m) => {
    const e = m.loadAjvModules();
    const ajv = new e.Ajv2020({ strict: false });
    e.addFormats(ajv);
    console.log(e.from, ajv.validate({ type: "string", format: "email" }, "a@b.example"));
  });`;
  const r = spawnSync(NODE, ["--input-type=module", "-e", script], { encoding: "utf8", timeout: 30_000 });
  return { status: r.status, out: r.stdout.trim(), err: r.stderr };
}

describe("loading the validator engine", () => {
  let dir: string | null = null;
  afterEach(() => {
    if (dir) removeDir(dir);
    dir = null;
  });

  /** A directory holding the built loader, ajv's packages reachable from it, and `bundle` if given. */
  function setUp(bundle?: string): string {
    dir = tempDir("portcullis-engine-load-");
    copyFileSync(BUILT, join(dir, "ajvModules.js"));
    writeFileSync(join(dir, "package.json"), '{ "type": "module" }\n');
    symlinkSync(join(REPO, "node_modules"), join(dir, "node_modules"), "dir");
    if (bundle !== undefined) writeFileSync(join(dir, "validatorEngine.cjs"), bundle);
    return dir;
  }

  it("takes ajv from its packages when there is no bundle", () => {
    const r = load(setUp());
    expect(r.err).toBe("");
    expect(r.out).toBe("packages true");
  });

  it("takes the bundle when there is one", () => {
    const r = load(
      setUp(`module.exports = require(${JSON.stringify(join(REPO, "dist", "cli", "validatorEngine.cjs"))});`),
    );
    expect(r.err).toBe("");
    expect(r.out).toBe("bundle true");
  });

  it("fails, and says why, when the bundle throws as it loads", () => {
    const r = load(setUp('throw new Error("the engine bundle is damaged");\n'));
    expect(r.status).not.toBe(0);
    expect(r.out).toBe("");
    expect(r.err).toContain("the engine bundle is damaged");
  });

  it("fails when a file the bundle requires is missing, rather than loading the packages instead", () => {
    const r = load(setUp('module.exports = require("./engine-part-that-is-gone.cjs");\n'));
    expect(r.status).not.toBe(0);
    expect(r.out).toBe("");
    expect(r.err).toContain("engine-part-that-is-gone.cjs");
  });
});
