import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import type { CatalogFile } from "./catalog.js";
import { type Session, startGateway } from "./gateway.js";
import { fixtureCommand } from "./paths.js";

/**
 * A gateway started with `runArgs` before the catalog fixture serving `cat`'s tools, its catalog
 * listed once; what `cleanup` is given closes it and removes the catalog's files.
 */
export async function catalogGateway(
  cat: CatalogFile,
  runArgs: string[],
  cleanup: (() => Promise<void> | void)[],
): Promise<{ gw: Session<Client>; stateDir: string }> {
  const gw = await startGateway({ args: [...runArgs, "--", ...fixtureCommand("catalog")], env: cat.env });
  cleanup.push(
    () => gw.close(),
    () => cat.cleanup(),
  );
  await gw.client.listTools();
  return { gw, stateDir: gw.stateDir! };
}
