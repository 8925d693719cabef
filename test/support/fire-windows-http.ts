// Calls functions over HTTP the way Cloud Scheduler does (the stack's fireWindows, or a function the test serves
// on the Functions Framework's real HTTP server on a free local port), for integration and end-to-end tests.
import assert from 'node:assert/strict';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * POSTs `{}` to `url`, with Cloud Scheduler's `x-cloudscheduler: true` header unless `scheduler` is false (then a
 * scheduled function runs one pass instead of its timer loop).
 */
export function schedulerPost(url: string, scheduler = true): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      ...(scheduler && { 'x-cloudscheduler': 'true' }),
    },
    body: '{}',
  });
}

/** Starts `server` on a free port of 127.0.0.1. @returns its base URL, `http://127.0.0.1:PORT/` */
export async function listenLocal(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

/** Stops `server` if it is listening. */
export async function closeServer(server: Server): Promise<void> {
  if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()));
}

/**
 * POSTs `{}` to fireWindows until a run is not `busy` (the stack's own scheduler loop may hold the fireWindows
 * lease), at most `attempts` times, `intervalMs` apart. Every answer must be HTTP 200.
 * @returns the last answer's body (the run summary, JSON).
 * @throws AssertionError when an answer is not HTTP 200.
 */
export async function fireWindowsOnce(
  url: string,
  attempts = 41,
  intervalMs = 500,
): Promise<string> {
  for (let attempt = 1; ; attempt++) {
    const res = await schedulerPost(url, false);
    const text = await res.text();
    assert.equal(res.status, 200, text);
    if ((JSON.parse(text) as { status?: string }).status !== 'busy' || attempt >= attempts) {
      return text;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
