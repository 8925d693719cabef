// The windowing core's named errors: a bad windowing configuration, and a bad argument to the state machine.

/** One problem found in a windowing configuration: where it is and what is wrong. */
export interface WindowingConfigIssue {
  /** Dotted path inside the configuration, e.g. `trigger.earlyFirings.elementCount`; `''` for the root. */
  readonly path: string;
  /** What is wrong, in words, e.g. `must be an integer >= 1`. */
  readonly message: string;
}

/**
 * An invalid windowing strategy (thrown by `validateWindowingStrategy` and the window-function builders).
 * A data-independent programming or configuration error: fail fast at cold start, never per message.
 */
export class WindowingConfigError extends Error {
  override readonly name = 'WindowingConfigError';
  /** Every problem found, not only the first. */
  readonly issues: readonly WindowingConfigIssue[];
  constructor(issues: readonly WindowingConfigIssue[]) {
    super(
      `invalid windowing strategy: ${issues
        .map((i) => (i.path === '' ? i.message : `${i.path} ${i.message}`))
        .join('; ')}`,
    );
    this.issues = issues;
  }
}

/**
 * A call into the per-key state machine that cannot be honoured: an element for another key, or a time that is
 * not a safe integer number of milliseconds. Bad input events never reach here (they are quarantined upstream),
 * so this is a bug in the caller.
 */
export class WindowingInputError extends Error {
  override readonly name = 'WindowingInputError';
}
