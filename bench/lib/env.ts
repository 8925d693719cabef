// What every benchmark reads from its environment and prints beside its figures (integer settings, the load average),
// and the Firestore emulator the state benchmarks run against.
import { spawn } from 'node:child_process';
import os from 'node:os';

/**
 * The positive integer in variable `name`, or `fallback` when it is unset or empty.
 * Throws an Error naming the variable when the value is not a safe integer >= 1.
 */
export function intEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isSafeInteger(value) || value < 1) {
    throw new Error(`${name} must be an integer >= 1, got ${raw}`);
  }
  return value;
}

/** The 1, 5 and 15 minute load averages, e.g. "1.20 0.95 0.80". */
export function loadAverage(): string {
  return os
    .loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
}

/**
 * Points the Firestore clients at an emulator: the one FIRESTORE_EMULATOR_HOST names, else one this process starts
 * on 127.0.0.1:`port` in its own process group. Also skips the metadata-server probe (benchmarks run outside Google
 * Cloud). Resolves once the emulator answers, to the function that stops the one started here (a no-op otherwise);
 * throws when it does not answer within 60 s.
 */
export async function ensureFirestoreEmulator(port: number): Promise<() => void> {
  process.env.METADATA_SERVER_DETECTION ??= 'none';
  if (process.env.FIRESTORE_EMULATOR_HOST) return () => undefined;
  const child = spawn(
    'gcloud',
    ['emulators', 'firestore', 'start', `--host-port=127.0.0.1:${port}`],
    {
      detached: true,
      stdio: 'ignore',
    },
  );
  const stop = () => {
    if (child.pid !== undefined) process.kill(-child.pid, 'SIGTERM');
  };
  const deadline = Date.now() + 60_000;
  for (;;) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/`)).ok) break;
    } catch {
      // Not listening yet: keep polling until the deadline.
      if (Date.now() > deadline) {
        stop();
        throw new Error(`Firestore emulator not up on port ${port} after 60 s`);
      }
    }
    await new Promise((r) => setTimeout(r, 250));
  }
  process.env.FIRESTORE_EMULATOR_HOST = `127.0.0.1:${port}`;
  return stop;
}
