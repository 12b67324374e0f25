// `node --env-file=.env server.js`: node reads the file before the server starts, applies its
// NODE_OPTIONS (a preload then runs inside the server) and adds its variables to the server's
// environment. The file, its preloads and its variables are part of the identity, as they are
// when they come from the environment. Real gateways, a real preload that leaves evidence.
import { execFileSync } from "node:child_process";
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { parseEnvFile } from "../../src/identity/dotenv.js";
import { removeDir, tempDir } from "../helpers/files.js";
import { runCli } from "../helpers/gateway.js";
import { NODE } from "../helpers/paths.js";
import { makeProject, type Project } from "../helpers/project.js";
import { rawGateway } from "../helpers/raw.js";
import { newStateDir } from "../helpers/state.js";

interface Recorded {
  identityDigest: string;
  envDigest: string;
  wrappers: { path: string; sha256: string }[];
}

let cleanup: (() => Promise<void> | void)[] = [];
afterEach(async () => {
  for (const c of cleanup.reverse()) await c();
  cleanup = [];
});

const SECRET = "envfile-secret-7d41c0";

/** A project whose server is started with `--env-file=.env`, the file naming a preload. */
function envFileProject(): { project: Project; preload: string; marker: string; stateDir: string } {
  const project = makeProject("A");
  const stateDir = newStateDir();
  cleanup.push(
    () => project.cleanup(),
    () => removeDir(stateDir),
  );
  const preload = join(project.dir, "preload.cjs");
  const marker = join(project.dir, "state", "preloaded");
  writeFileSync(preload, `require("node:fs").appendFileSync(${JSON.stringify(marker)}, "v1\\n");\n`);
  writeFileSync(
    join(project.dir, ".env"),
    `# loaded by node\nNODE_OPTIONS="--require ./preload.cjs"\nAPI_TOKEN=${SECRET} # a comment\n`,
  );
  return { project, preload, marker, stateDir };
}

async function launch(project: Project, stateDir: string, env: Record<string, string> = {}) {
  const gw = rawGateway({
    args: ["--label", "inventory", "--approval", "none", "--", NODE, "--env-file=.env", project.entry],
    cwd: project.dir,
    env: { ...project.env, ...env },
    stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.initialize();
  const r = await runCli(["status", "--json"], { stateDir });
  expect(r.code).toBe(0);
  const record = (JSON.parse(r.stdout) as { gateways: { record: Recorded }[] }).gateways[0]!.record;
  gw.closeStdin();
  await gw.exited;
  return { record, status: r.stdout, stderr: gw.stderr() };
}

const paths = (r: Recorded) => r.wrappers.map((w) => w.path).sort();

describe("node --env-file", () => {
  it("the env file and the preload its NODE_OPTIONS names are digested: a changed preload is a new identity", async () => {
    const { project, preload, marker, stateDir } = envFileProject();
    const first = await launch(project, stateDir);
    // node ran the preload inside the server: once, or twice when the gateway spawned it within
    // moments of the preload being written (a file that new may have changed after the spawn: the
    // server is started again once the capture is done, src/supervisor/launchCapture.ts)
    expect(readFileSync(marker, "utf8")).toMatch(/^(v1\n)+$/);
    expect(paths(first.record)).toEqual([".env", "preload.cjs"]);

    writeFileSync(preload, `require("node:fs").appendFileSync(${JSON.stringify(marker)}, "v2\\n");\n`);
    const second = await launch(project, stateDir);
    expect(readFileSync(marker, "utf8")).toMatch(/^(v1\n)+(v2\n)+$/);
    expect(second.record.identityDigest).not.toBe(first.record.identityDigest);
    expect(second.record.wrappers.find((w) => w.path === "preload.cjs")?.sha256).not.toBe(
      first.record.wrappers.find((w) => w.path === "preload.cjs")?.sha256,
    );
  });

  it("the file's variables are in the environment digest, never in clear; the environment's own value wins", async () => {
    const { project, stateDir } = envFileProject();
    const first = await launch(project, stateDir);
    for (const text of [first.status, first.stderr]) expect(text).not.toContain(SECRET);

    // Another value in the file: another environment, although the spawn environment is the same.
    appendFileSync(join(project.dir, ".env"), "EXTRA=1\n");
    const second = await launch(project, stateDir);
    expect(second.record.envDigest).not.toBe(first.record.envDigest);

    // Node sets a variable named __proto__ like any other: its value is in the digest too.
    appendFileSync(join(project.dir, ".env"), "__proto__=a\n");
    const protoA = await launch(project, stateDir);
    writeFileSync(
      join(project.dir, ".env"),
      readFileSync(join(project.dir, ".env"), "utf8").replace("__proto__=a", "__proto__=b"),
    );
    const protoB = await launch(project, stateDir);
    expect(protoA.record.envDigest).not.toBe(second.record.envDigest);
    expect(protoB.record.envDigest).not.toBe(protoA.record.envDigest);

    // A variable the environment sets is the environment's, whatever the file says: changing it
    // in the file changes the file's digest only.
    const withEnv = await launch(project, stateDir, { API_TOKEN: "from-the-environment" });
    writeFileSync(
      join(project.dir, ".env"),
      readFileSync(join(project.dir, ".env"), "utf8").replace(SECRET, "another-secret"),
    );
    const withEnvAgain = await launch(project, stateDir, { API_TOKEN: "from-the-environment" });
    expect(withEnvAgain.record.envDigest).toBe(withEnv.record.envDigest);
  });

  it("NODE_OPTIONS in the environment replaces the file's: node does not load the file's preload, and it is not digested", async () => {
    const { project, marker, stateDir } = envFileProject();
    const { record } = await launch(project, stateDir, { NODE_OPTIONS: "--no-warnings" });
    expect(existsSync(marker)).toBe(false);
    expect(paths(record)).toEqual([".env"]);
  });
});

describe("env file parsing", () => {
  it("reads the variables node itself reads from a well-formed file", () => {
    const dir = tempDir("portcullis-envfile-");
    cleanup.push(() => removeDir(dir));
    const text = [
      "# a comment",
      "A=1",
      'B="two words" # comment',
      "export C='single # not a comment'",
      "D=plain # comment",
      'E="multi',
      'line"',
      "F=`back`",
      "G = spaced ",
      'H="expanded\\nnewline"',
      "I='kept\\nas is'",
      "J=",
      "A=again",
      'K="crlf"\r',
      "",
    ].join("\n");
    const file = join(dir, "x.env");
    writeFileSync(file, text);
    const script =
      "const o={};for(const k of 'ABCDEFGHIJK')if(k in process.env)o[k]=process.env[k];console.log(JSON.stringify(o))";
    const seen = JSON.parse(
      execFileSync(NODE, [`--env-file=${file}`, "-e", script], { env: {}, encoding: "utf8" }),
    );
    expect(parseEnvFile(text)).toEqual(seen);
  });

  it("keeps a variable named __proto__, as node sets it (it is in the environment digest like any other)", () => {
    const dir = tempDir("portcullis-envfile-");
    cleanup.push(() => removeDir(dir));
    const text = "__proto__=x\nconstructor=y\n";
    const file = join(dir, "x.env");
    writeFileSync(file, text);
    const script =
      "const o={};for(const k of ['__proto__','constructor'])if(Object.hasOwn(process.env,k))Object.defineProperty(o,k,{value:process.env[k],enumerable:true});console.log(JSON.stringify(o))";
    const seen = execFileSync(NODE, [`--env-file=${file}`, "-e", script], {
      env: {},
      encoding: "utf8",
    }).trim();
    expect(seen).toBe('{"__proto__":"x","constructor":"y"}');
    const parsed = parseEnvFile(text);
    expect(Object.keys(parsed)).toEqual(["__proto__", "constructor"]);
    expect(JSON.stringify(parsed)).toBe(seen);
  });
});
