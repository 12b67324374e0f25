// The setup the approval tests whose cases run side by side share: each case its own state
// directory, its own inventory fixture project (so that its records are the calls of that case
// alone) and its own gateway, with its catalog listed once. The teardown goes on the case's own
// list (teardown.ts), the project's removal after the gateway's close.
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type Session, startInventory } from "./gateway.js";
import { makeProject, type Project, type Revision } from "./project.js";
import { newStateDir } from "./state.js";
import type { Cleanup } from "./teardown.js";

/**
 * `portcullis run --label inventory RUNARGS -- <inventory fixture at `revision`>` in a new state
 * directory; `credentials` passes the project's credential env to the gateway.
 */
export async function inventoryGateway(
  revision: Revision,
  runArgs: string[],
  cleanup: Cleanup,
  options: { credentials?: boolean } = {},
): Promise<{ stateDir: string; project: Project; gw: Session<Client> }> {
  const stateDir = newStateDir();
  const project = makeProject(revision);
  cleanup.push(() => project.cleanup());
  const gw = await startInventory(project, runArgs, { stateDir, credentials: options.credentials });
  cleanup.push(() => gw.close());
  await gw.client.listTools();
  return { stateDir, project, gw };
}
