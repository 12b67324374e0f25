// The signals that end a gateway (`portcullis run`, stdio, --listen and --url alike).

/**
 * Each ends the gateway the same way: an orderly shutdown, exit code 0. SIGQUIT (Ctrl-\) too: its
 * default action (a core dump) killed the gateway with its server's group left running, a call's
 * intent left open and its run and status row never ended.
 */
export const SHUTDOWN_SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT"] as const;

/**
 * Calls `onSignal` for every shutdown signal, for the rest of the process's life: the first
 * begins the shutdown, a later one (a second Ctrl-C while the server is given its grace) hurries
 * it. Listened to once only, a second signal met the default action instead, and the gateway died
 * in the middle of its shutdown: its server left running under pid 1, its agent run and its
 * status row never ended.
 */
export function onShutdownSignals(onSignal: (signal: NodeJS.Signals) => void): void {
  for (const signal of SHUTDOWN_SIGNALS) process.on(signal, onSignal);
}
