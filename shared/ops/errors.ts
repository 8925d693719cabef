// The operator command's failures: each is one line for the terminal and a meaningful exit code.

/** Exit codes of `offvia` (documented in docs/operations.md). */
export const EXIT = {
  ok: 0,
  /** A command failed: a backend unreachable or refusing, a write that did not land. */
  failure: 1,
  /** Bad flags or arguments (commander's usage errors too). */
  usage: 2,
  /** The command ran, but what it was asked about does not exist (e.g. `trace` of an unknown id). */
  notFound: 3,
  /** `replay`: Bronze lacks messages of the range that Silver, quarantine or its retention say were published. */
  bronzeGap: 4,
} as const;

/** A failure the operator can act on, printed as one line (no stack trace) with its exit code. */
export class OpsError extends Error {
  override readonly name: string = 'OpsError';
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failure,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** A bad flag value or argument (exit 2). */
export class UsageError extends OpsError {
  override readonly name = 'UsageError';
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}

/** Nothing matched (exit 3). */
export class NotFoundError extends OpsError {
  override readonly name = 'NotFoundError';
  constructor(message: string) {
    super(message, EXIT.notFound);
  }
}

/**
 * One line for an error from a Google client or the network: the first line of its message, with a hint when the
 * endpoint could not be reached at all (connection refused / host unknown / deadline), which is what an emulator
 * that is down looks like.
 */
export function describeBackendError(what: string, err: unknown, hint: string): OpsError {
  if (err instanceof OpsError) return err;
  const text = err instanceof Error ? err.message : String(err);
  const first = text.split('\n')[0] ?? text;
  const code =
    err !== null && typeof err === 'object' && 'code' in err ? String(err.code) : undefined;
  const unreachable =
    /ECONNREFUSED|ENOTFOUND|EHOSTUNREACH|ECONNRESET|No connection established|UNAVAILABLE|timed out/i.test(
      text,
    ) ||
    code === 'ECONNREFUSED' ||
    code === '14';
  return new OpsError(
    unreachable ? `cannot reach ${what}: ${first} (${hint})` : `${what}: ${first}`,
    EXIT.failure,
    { cause: err },
  );
}
