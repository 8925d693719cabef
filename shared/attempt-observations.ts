// What one delivery attempt has run into so far (retried transactions), so a deadline names the real cause.
import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The retries one attempt has seen, by operation: how many times each transaction's callback ran again after a
 * failed commit. Filled by the adapters through {@link noteTransactionRetry}, read by whoever cuts the attempt off.
 */
export interface AttemptObservations {
  /** Operation (e.g. `firestore apply bundle`) → attempts that were retried after their commit failed. */
  readonly retriedTransactions: Map<string, number>;
  /**
   * Operation → the error of the callback run before its latest retry, when that run failed itself (e.g. a read
   * refused with UNAVAILABLE: Firestore unreachable) rather than its commit (aborted: contention).
   */
  readonly retryErrors: Map<string, string>;
}

const current = new AsyncLocalStorage<AttemptObservations>();

/**
 * Runs `fn` with fresh observations that every async continuation of it can note into; returns both at once, so the
 * caller can read the observations while `fn` is still pending (a deadline).
 */
export function observeAttempt<T>(fn: () => Promise<T>): {
  observations: AttemptObservations;
  result: Promise<T>;
} {
  const observations: AttemptObservations = {
    retriedTransactions: new Map(),
    retryErrors: new Map(),
  };
  return { observations, result: current.run(observations, fn) };
}

/**
 * Notes that `operation`'s transaction runs again: after an ABORTED commit (contention), or, given `afterError`,
 * after the previous run of the callback failed with that error (e.g. UNAVAILABLE). A no-op outside
 * {@link observeAttempt}.
 */
export function noteTransactionRetry(operation: string, afterError?: string): void {
  const observations = current.getStore();
  if (observations === undefined) return;
  const map = observations.retriedTransactions;
  map.set(operation, (map.get(operation) ?? 0) + 1);
  if (afterError === undefined) observations.retryErrors.delete(operation);
  else observations.retryErrors.set(operation, afterError);
}

/**
 * One clause for a reason, e.g. `firestore apply bundle retried 7 times after its commit was aborted (contention on
 * the same documents)`; `undefined` when nothing was noted.
 */
export function describeObservations(observations: AttemptObservations): string | undefined {
  const parts = [...observations.retriedTransactions].map(([operation, n]) => {
    const retried = `${operation} retried ${n} time${n === 1 ? '' : 's'}`;
    const error = observations.retryErrors.get(operation);
    return error === undefined
      ? `${retried} after aborted commits (contention on the same documents)`
      : `${retried}, the last after ${error}`;
  });
  if (parts.length === 0) return undefined;
  return `${parts.join(', ')}, still retrying`;
}
