// Calls the stack's fireWindows over HTTP the way Cloud Scheduler does, for end-to-end tests.
import assert from 'node:assert/strict';

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
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{}',
    });
    const text = await res.text();
    assert.equal(res.status, 200, text);
    if ((JSON.parse(text) as { status?: string }).status !== 'busy' || attempt >= attempts) {
      return text;
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
