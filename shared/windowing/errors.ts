// The windowing core's named errors: a bad windowing configuration, and a bad argument to the state machine.
import * as v from 'valibot';

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
 * Parses `input` with a valibot schema (first issue per field), issue paths prefixed with `prefix` (`''`: none).
 * @throws WindowingConfigError listing every problem with its path
 */
export function parseOrThrow<T>(
  schema: v.GenericSchema<unknown, T>,
  input: unknown,
  prefix: string,
): T {
  const result = v.safeParse(schema, input, { abortPipeEarly: true });
  if (result.success) return result.output;
  throw new WindowingConfigError(
    result.issues.map((issue) => {
      const keys = (issue.path ?? []).map((item) => String(item.key));
      return { path: [prefix, ...keys].filter((p) => p !== '').join('.'), message: issue.message };
    }),
  );
}

/**
 * A call into the per-key state machine that cannot be honoured (an element for another key, a time that is not a
 * safe integer of ms): a bug in the caller, as bad events are quarantined upstream.
 */
export class WindowingInputError extends Error {
  override readonly name = 'WindowingInputError';
}
