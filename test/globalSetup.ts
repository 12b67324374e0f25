// Before any test file: the fixture servers bundled into a directory of their own
// (helpers/fixtureBundle.ts says why), built once per change of their sources.
import { buildFixtureBundle } from "./helpers/fixtureBundle.js";
import { REPO } from "./helpers/paths.js";

export default async function setup(): Promise<void> {
  await buildFixtureBundle(REPO);
}
