// A teardown list of a test's own, for files whose cases run side by side (`describe.concurrent`,
// or cases given their own `onTestFinished`): a file-wide `cleanup` array emptied in `afterEach`
// would be shared by every case running at once, and one case's end would tear down the others'
// gateways. Each case gets its list from `teardownOf(onTestFinished)` and pushes onto it; the list
// runs when that case finishes, the last pushed first.

/** What a case pushes its teardown steps onto. */
export type Cleanup = (() => Promise<void> | void)[];

/** The case's own teardown list, run when it finishes (the cases run side by side). */
export function teardownOf(onTestFinished: (fn: () => Promise<void>) => void): Cleanup {
  const list: Cleanup = [];
  onTestFinished(async () => {
    for (const c of list.reverse()) await c();
  });
  return list;
}
