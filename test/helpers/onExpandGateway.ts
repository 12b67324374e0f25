// The start the tests of an expanding catalog change under session grants share: a gateway with
// `--on-expand` set before the catalog fixture serving `tools`, its catalog listed once, in a state
// directory made here rather than by startGateway, so that it outlives the gateway's close (the
// audit and the pending requests are read after it). The gateway's close and the catalog's
// removal go on `cleanup`, the catalog's first so that it goes even when the start fails.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type CatalogFile, makeCatalog, type ToolDef } from "./catalog.js";
import { type Session, startGateway } from "./gateway.js";
import { fixtureCommand } from "./paths.js";
import { newStateDir } from "./state.js";
import type { Cleanup } from "./teardown.js";

/** `portcullis run --label LABEL RUNARGS --on-expand ONEXPAND -- <catalog fixture serving tools>`. */
export async function onExpandGateway(
  label: string,
  runArgs: string[],
  onExpand: "run" | "tool",
  tools: ToolDef[],
  cleanup: Cleanup,
): Promise<{ stateDir: string; cat: CatalogFile; gw: Session<Client> }> {
  const stateDir = newStateDir();
  const cat = makeCatalog(tools);
  cleanup.push(() => cat.cleanup());
  const gw = await startGateway({
    args: ["--label", label, ...runArgs, "--on-expand", onExpand, "--", ...fixtureCommand("catalog")],
    env: cat.env,
    stateDir,
  });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return { stateDir, cat, gw };
}
