// The seed fast-check's properties draw their cases from (test/setup/perFile.ts sets it for every
// file). By default a fixed one: `npm test` on a given commit runs the same cases every time, so a
// red run is the code's doing and replays as it failed, never the luck of a fresh draw (each
// clean-clone CI run drew its own, and a counterexample found at one random seed failed that run
// and no other). `PORTCULLIS_PROPERTY_SEED=random` (what `npm run test:explore` sets) draws a
// fresh seed for each file, to search further; a number replays the seed a failure printed.
const FIXED_SEED = 20261206;

export function propertySeed(env: NodeJS.ProcessEnv = process.env): number | undefined {
  const asked = env.PORTCULLIS_PROPERTY_SEED?.trim();
  if (asked === undefined || asked === "") return FIXED_SEED;
  if (asked === "random") return undefined;
  const n = Number(asked);
  if (!Number.isInteger(n) || n < -(2 ** 31) || n >= 2 ** 32)
    throw new Error(
      `PORTCULLIS_PROPERTY_SEED=${JSON.stringify(asked)}: give an integer seed (as fast-check prints it) or "random"`,
    );
  return n;
}
