// Failures that decide ack or redelivery: infrastructure problems are thrown (design.md, "Ack policy").

/**
 * A transient infrastructure failure (BigQuery or Firestore unavailable, quota, network). Thrown out of a
 * function so the trigger redelivers; never used for bad input. `cause` keeps the original error.
 */
export class TransientError extends Error {
  override readonly name = 'TransientError';
  /** What was being attempted, for logs, e.g. `insert offvia_silver.fact_bookings`. */
  readonly operation: string;
  constructor(operation: string, message: string, options?: { cause?: unknown }) {
    super(`${operation}: ${message}`, options);
    this.operation = operation;
  }
}

/**
 * A configuration error found at cold start (a bad environment variable). Fails fast: the instance cannot serve.
 * The message names the variable.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  /** The environment variable at fault. */
  readonly variable: string;
  constructor(variable: string, message: string) {
    super(`${variable}: ${message}`);
    this.variable = variable;
  }
}

/**
 * What a Pub/Sub-triggered function throws to refuse a delivery (Pub/Sub redelivers it). Its message names only the
 * message id, as the Functions Framework writes it into the 5xx body; the cause, already logged, is `cause`.
 */
export class DeliveryRefused extends Error {
  override readonly name = 'DeliveryRefused';
  constructor(messageId: string, options?: { cause?: unknown }) {
    super(
      `message ${JSON.stringify(messageId)} not acknowledged; Pub/Sub will redeliver it`,
      options,
    );
  }
}

/** Text of any thrown value, for logs and error columns; never throws itself. */
export function errorText(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`;
  try {
    return typeof err === 'string' ? err : JSON.stringify(err);
  } catch {
    return String(err);
  }
}
