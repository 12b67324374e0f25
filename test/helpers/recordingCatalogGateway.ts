// A gateway in front of the catalog fixture serving the tools of a file, with the fixture's record
// of every call it received: the ground truth of what was forwarded. For the tests of request
// rows and grants rewritten in the store (test/gateway/unsigned-columns.test.ts,
// test/cli/deny-rewritten-row.test.ts) and the one-call approval tests (perCallTool.ts).
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { completeJsonLines } from "./completeLines.js";
import { removeDir, tempDir } from "./files.js";
import { type Session, startGateway } from "./gateway.js";
import { FIXTURES, NODE } from "./paths.js";
import { newStateDir } from "./state.js";

/** A tool whose call moves money: what a rewritten row puts in a harmless request's place. */
export const PAY = {
  name: "send_payment",
  description: "Send money.",
  inputSchema: {
    type: "object",
    required: ["to", "amount"],
    properties: { to: { type: "string" }, amount: { type: "number" } },
  },
};

/** A harmless tool: what the gateway asks about before a row is rewritten. */
export const FETCH = {
  name: "fetch_page",
  description: "Fetch a page of the wiki.",
  inputSchema: {
    type: "object",
    required: ["page"],
    properties: { page: { type: "string" } },
    additionalProperties: false,
  },
};

export interface RecordingGateway {
  stateDir: string;
  gw: Session<Client>;
  /** the fixture's tools file (rewrite it atomically to change the catalog) */
  toolsFile: string;
  /** the fixture's record file, one line a call received (absent until the first) */
  record: string;
  /** the arguments of each call the server received, in order */
  received(): Record<string, unknown>[];
}

/**
 * `portcullis run RUNARGS -- <catalog fixture>` serving `tools`, in a new state directory, its
 * catalog listed once; the gateway's and the directories' teardown go on `cleanup`.
 */
export async function recordingCatalogGateway(
  tools: unknown[],
  runArgs: string[],
  cleanup: (() => Promise<void> | void)[],
  dirPrefix = "portcullis-catalog-",
): Promise<RecordingGateway> {
  const stateDir = newStateDir();
  const dir = tempDir(dirPrefix);
  const toolsFile = join(dir, "tools.json");
  const record = join(dir, "record.jsonl");
  writeFileSync(toolsFile, JSON.stringify(tools));
  cleanup.push(() => {
    removeDir(dir);
    removeDir(stateDir);
  });
  const gw = await startGateway({
    stateDir,
    args: [...runArgs, "--", NODE, FIXTURES.catalog],
    env: { FIXTURE_CATALOG: toolsFile, FIXTURE_RECORD: record },
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  const received = () =>
    existsSync(record)
      ? // only lines written whole: the server may be writing the next one as this reads
        completeJsonLines<{ args: Record<string, unknown> }>(readFileSync(record, "utf8")).map((l) => l.args)
      : [];
  return { stateDir, gw, toolsFile, record, received };
}
