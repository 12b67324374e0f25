import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { removeDir, tempDir } from "./files.js";
import { FIXTURES, NODE } from "./paths.js";
import { type RawGateway, rawGateway } from "./raw.js";

/**
 * A gateway in front of lenient.mjs (every method it gets logged in `methods`, one JSON line
 * each), its 2026-07-28 listens kept open, tools not guarded and resources under `resources`
 * (the portcullis.json policy); closed and its directory removed by `cleanup`.
 */
export function lenientListenGateway(
  cleanup: (() => Promise<void> | void)[],
  opts: { resources?: "per-call" | "session" | "none"; env?: Record<string, string> } = {},
): { gw: RawGateway; methods: string } {
  const dir = tempDir();
  const methods = join(dir, "methods.jsonl");
  writeFileSync(
    join(dir, "portcullis.json"),
    JSON.stringify({
      servers: {
        lenient: {
          command: NODE,
          args: [FIXTURES.lenient],
          env: { FIXTURE_METHOD_LOG: methods, FIXTURE_LISTEN_OPEN: "1", ...opts.env },
          approval: { default: "none", resources: opts.resources ?? "per-call" },
        },
      },
    }),
  );
  const gw = rawGateway({ args: ["lenient"], cwd: dir });
  cleanup.push(
    () => gw.close(),
    () => removeDir(dir),
  );
  return { gw, methods };
}
