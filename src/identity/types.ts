/** A file identified by its content. */
export interface FileDigest {
  /** Relative to the working directory when inside it, else absolute. */
  path: string;
  /** Hex SHA-256 of the file's bytes. */
  sha256: string;
}

/** One process of a running server, as seen from outside it. */
export interface ProcessFact {
  pid: number;
  ppid: number;
  /** Opaque, stable for the life of the process (Linux: /proc/PID/stat field 22; macOS: `ps` lstart). */
  startTime: string;
  exe: string | null;
  argv: string[];
  exeSha256: string | null;
  scripts: FileDigest[];
}

export interface LaunchSpec {
  serverLabel: string;
  command: string;
  args: string[];
  cwd: string;
  /** The environment given to the server. Values are digested, never stored. */
  env: Record<string, string>;
  configDigest: string;
  /** Globs relative to cwd, from config `identity.include`. */
  include?: string[];
}

export interface StaticIdentity {
  serverLabel: string;
  launchCommand: string[];
  executable: { path: string; sha256: string } | null;
  runtime: string | null;
  entry: FileDigest | null;
  wrappers: FileDigest[];
  lockfile: FileDigest | null;
  dependencyTree: {
    root: string;
    files: number;
    sha256: string;
    /** what the tree reaches outside itself (linked packages, their node_modules); absent: nothing */
    more?: ReachedTree[];
  } | null;
  identityInputs: { patterns: string[]; files: number; sha256: string } | null;
  workingDirectory: string;
  /** "sha256:…" over the sorted KEY=VALUE pairs of the server's environment. */
  envDigest: string;
  configDigest: string;
}

/**
 * A directory the server's code loads from beyond its dependency tree: a package linked into it
 * from outside every node_modules (a workspace package, `npm link`, `file:`), or a node_modules
 * node resolves imports from (docs/identity.md, "Linked packages").
 */
export interface ReachedTree {
  /** relative to the working directory when inside it, else absolute (a real path) */
  path: string;
  kind: "package" | "modules";
  files: number;
  /** null: not digested, `skipped` says why (too large, or a link to an ancestor) */
  sha256: string | null;
  skipped?: string;
}

/**
 * What can be observed from outside of a server reached over Streamable HTTP: all that
 * portcullis can know of the code behind a URL is what that server shows over the wire.
 */
export interface RemoteFacts {
  /** the URL as configured (never with user:password; those are refused) */
  url: string;
  /** "sha256:…" over the DER bytes of the peer's certificate chain, leaf first; null for http:// */
  certificateChainSha256: string | null;
  /** the leaf certificate's subject and validity, for people (the digest is what counts) */
  certificate: { subject: string; issuer: string; validTo: string } | null;
  /** from the server's initialize result: its own words, recorded, never trusted */
  serverInfo: Record<string, unknown> | null;
  protocolVersion: string | null;
  capabilities: Record<string, unknown> | null;
  /** "sha256:…" of the Mcp-Session-Id (the id itself can act as a bearer token: never stored) */
  session: string | null;
  /** names of the headers portcullis adds (values are never recorded) */
  headerNames: string[];
  /**
   * The numbers of `serverInfo` and `capabilities` that JSON.parse read as another number
   * (`9007199254740993` read as …992, `1e400` as Infinity): each `PATH=EXACT`, PATH the JSON
   * array of keys under the record (`["serverInfo","build"]`), EXACT the token's exact decimal
   * value (src/util/writtenIntegers.ts, `decimalValue`); sorted. Absent when there is none
   * (nearly always, and in every record written before the field existed). Part of the identity
   * digest when present: what the server said is recorded as it said it, so two servers whose
   * words differ only beyond a double's precision are told apart, and shown so (`writtenServerInfo`).
   */
  writtenNumbers?: string[];
  /**
   * the HTTP transport the epoch speaks, once known (its initialize answered over Streamable
   * HTTP, or the older HTTP+SSE transport's endpoint found); absent before, and in records
   * written before the field existed. A fact of the session, like `session`: not in the identity
   * digest
   */
  transport?: "streamable-http" | "http+sse";
}

export interface ExecutionRecord extends StaticIdentity {
  epoch: string;
  /** "sha256:…" over the static identity and the processes' (exe, exeSha256, argv, scripts). */
  identityDigest: string;
  processes: ProcessFact[];
  processId: number;
  startedAt: string;
  /** present for a server reached over HTTP (no process of ours: processes empty, processId 0) */
  remote?: RemoteFacts;
}
