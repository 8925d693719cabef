// Runs the `offvia` operator command in-process against the local stack (its env file), for end-to-end tests.
import assert from 'node:assert/strict';

import { main } from '../../shared/ops/cli';
import { EXIT } from '../../shared/ops/errors';

/** What one `offvia` run printed: its exit code, stdout and stderr (each joined as written). */
export interface OffviaRun {
  code: number;
  out: string;
  err: string;
}

/** Runs `offvia ...argv` in-process, as the `offvia` binary would, capturing its output. */
export async function offvia(...argv: string[]): Promise<OffviaRun> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await main(argv, { io: { out: (t) => out.push(t), err: (t) => err.push(t) } });
  return { code, out: out.join(''), err: err.join('') };
}

/**
 * Runs `offvia ...argv --json` and parses its report.
 * @throws AssertionError when the command does not exit 0 (the message names the command and its stderr)
 */
export async function offviaJson<T>(...argv: string[]): Promise<T> {
  const r = await offvia(...argv, '--json');
  assert.equal(r.code, EXIT.ok, `offvia ${argv.join(' ')}: ${r.err}`);
  return JSON.parse(r.out) as T;
}
