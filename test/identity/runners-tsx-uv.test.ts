// Launchers that start the real server are digested with the code they start: a host entry that
// says `tsx watch src/server.ts` or `uv run server.py` runs src/server.ts or server.py, and a
// rebuild of that file is a new identity although the command line is unchanged (docs/identity.md,
// "What is digested"). The capture reads real files on disk; tsx, uv and the virtualenv's python
// are small executables made here (the capture asks the runtime its version, nothing more).
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  captureStaticIdentity,
  DigestCache,
  finishRecord,
  type StaticIdentity,
} from "../../src/identity/index.js";
import { put, removeDir, sha256File, specFor, tempDir } from "./fixtures.js";

const live = { epoch: "01EPOCHA", processId: 100, startedAt: "2026-01-01T00:00:00.000Z", processes: [] };
const digest = (s: StaticIdentity) => finishRecord(s, live).identityDigest;

/** A spec whose PATH starts with `bin`, where the launchers made here are. */
function spec(dir: string, bin: string, command: string, args: string[]) {
  return specFor(dir, command, args, { env: { PATH: `${bin}:${process.env.PATH ?? "/usr/bin:/bin"}` } });
}

describe("launchers that start the real server", () => {
  let root: string;
  beforeAll(() => {
    root = tempDir("identity-runners");
  });
  afterAll(() => removeDir(root));

  it("tsx watch FILE: the file tsx runs is the entry, and its rebuild a new identity", async () => {
    const dir = join(root, "tsx");
    put(dir, "package.json", JSON.stringify({ name: "ts-server", type: "module" }));
    const entry = put(dir, "src/server.ts", "export const revision: string = 'A';\n");
    put(dir, "node_modules/.bin/tsx", '#!/bin/sh\nexec node "$@"\n', 0o755);
    const bin = join(dir, "node_modules/.bin");
    const a = await captureStaticIdentity(
      spec(dir, bin, "tsx", ["watch", "src/server.ts"]),
      new DigestCache(null),
    );
    expect(a.entry).toEqual({ path: "src/server.ts", sha256: sha256File(entry) });
    expect(a.runtime).toMatch(/^node \d+\.\d+\.\d+$/);
    expect(a.executable?.path).toMatch(/tsx$/);

    writeFileSync(entry, "export const revision: string = 'B';\n");
    const b = await captureStaticIdentity(
      spec(dir, bin, "tsx", ["watch", "src/server.ts"]),
      new DigestCache(null),
    );
    expect(b.entry?.sha256).toBe(sha256File(entry));
    expect(b.entry?.sha256).not.toBe(a.entry?.sha256);
    expect(digest(b)).not.toBe(digest(a));
  });

  it("uv run FILE and uv run -m MODULE: the script or module in the project, run by its virtualenv's python", async () => {
    const dir = join(root, "uv");
    const bin = join(root, "uv-bin");
    put(bin, "uv", "#!/bin/sh\nexit 0\n", 0o755);
    put(dir, "pyproject.toml", '[project]\nname = "py-server"\nversion = "1.0.0"\n');
    put(dir, ".venv/bin/python", "#!/bin/sh\necho 'Python 3.12.4'\n", 0o755);
    const script = put(dir, "server.py", "REVISION = 'A'\n");
    const module = put(dir, "pkg/server.py", "REVISION = 'A'\n");
    put(dir, "pkg/__init__.py", "");

    const a = await captureStaticIdentity(spec(dir, bin, "uv", ["run", "server.py"]), new DigestCache(null));
    expect(a.entry).toEqual({ path: "server.py", sha256: sha256File(script) });
    expect(a.runtime).toBe("python 3.12.4");
    writeFileSync(script, "REVISION = 'B'\n");
    const b = await captureStaticIdentity(spec(dir, bin, "uv", ["run", "server.py"]), new DigestCache(null));
    expect(digest(b)).not.toBe(digest(a));

    const m = await captureStaticIdentity(
      spec(dir, bin, "uv", ["run", "-m", "pkg.server"]),
      new DigestCache(null),
    );
    expect(m.entry).toEqual({ path: "pkg/server.py", sha256: sha256File(module) });
    expect(m.runtime).toBe("python 3.12.4");
  });
});
