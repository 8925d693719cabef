// A second ingestBooking on the Functions Framework with its own configuration, and the push subscription pointed
// at it for the length of a whole-stack run (then pointed back at the stack's own function).
import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';
import { PubSub } from '@google-cloud/pubsub';
import {
  BOOKING_TOPIC,
  INGEST_PUSH_SUBSCRIPTION,
  positiveIntFromEnv,
  projectIdFromEnv,
  pushEndpointFor,
} from '../../deploy/local/resources';

const READY_PATH = '/offvia-bench-ready';

/** A running function process and where its log goes. */
export interface BenchFunction {
  readonly port: number;
  readonly logPath: string;
  /** Points the push subscription back at the stack's function and stops the process (its whole group). */
  stop(): Promise<void>;
}

async function waitReady(port: number, child: ChildProcess, logPath: string): Promise<void> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) {
      throw new Error(
        `ingestBooking (bench) exited with ${child.exitCode} before it was ready; see ${logPath}`,
      );
    }
    try {
      const res = await fetch(`http://127.0.0.1:${port}${READY_PATH}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      });
      if (res.status === 404) return;
    } catch (err) {
      if (Date.now() > deadline) {
        throw new Error(
          `ingestBooking (bench) not answering on port ${port} after 120 s: ${String(err)}`,
        );
      }
    }
    await new Promise((r) => setTimeout(r, 300));
  }
}

/**
 * Starts `ingestBooking` from the built sources (`npm run build`, done by the stack) on `port`, with `env` added to
 * this process's environment, and points the push subscription at it.
 * @throws Error when the function does not come up within 2 minutes
 */
export async function startBenchFunction(
  port: number,
  env: Record<string, string>,
  logPath: string,
): Promise<BenchFunction> {
  const fd = openSync(logPath, 'a');
  const child = spawn(
    'node_modules/.bin/functions-framework',
    [
      '--source=.',
      '--target=ingestBooking',
      '--signature-type=cloudevent',
      `--port=${port}`,
      `--ignored-routes=${READY_PATH}`,
    ],
    { detached: true, stdio: ['ignore', fd, fd], env: { ...process.env, ...env } },
  );
  closeSync(fd);
  const projectId = projectIdFromEnv();
  const pubsub = new PubSub({ projectId });
  const subscription = pubsub.subscription(INGEST_PUSH_SUBSCRIPTION);
  const stackEndpoint = pushEndpointFor(
    projectId,
    BOOKING_TOPIC,
    positiveIntFromEnv('OFFVIA_INGEST_BOOKING_PORT', 8080),
  );
  const stop = async (): Promise<void> => {
    try {
      await subscription.modifyPushConfig({ pushEndpoint: stackEndpoint });
    } finally {
      await pubsub.close();
      if (child.pid !== undefined && child.exitCode === null) process.kill(-child.pid, 'SIGTERM');
    }
  };
  try {
    await waitReady(port, child, logPath);
    await subscription.modifyPushConfig({
      pushEndpoint: pushEndpointFor(projectId, BOOKING_TOPIC, port),
    });
  } catch (err) {
    await stop();
    throw err;
  }
  return { port, logPath, stop };
}
