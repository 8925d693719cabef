// The demo's fireWindows clock: ahead of the wall clock only on a throw-away stack, never on a kept one.
import assert from 'node:assert/strict';
import { loadWindowConfig } from '../../../shared/config/window-config';
import { demoFireClockMs } from '../../../deploy/local/demo-windows';

describe('demo: the fireWindows clock', () => {
  const config = loadWindowConfig({});
  const now = Date.UTC(2026, 11, 1, 12, 0, 0);
  const input = {
    nowMs: now,
    maxEventMs: now - 1000,
    storedMaxEventTimeMs: now - 1000,
    maxEventTimeSeenAtMs: now - 500,
    config,
  };

  it('runs at the wall clock on a kept stack, so the shared watermark is never moved ahead of it', () => {
    assert.equal(demoFireClockMs({ ...input, throwawayStack: false }), now);
  });

  it('jumps past idle timeout + out-of-orderness + window size on a throw-away stack', () => {
    const at = demoFireClockMs({ ...input, throwawayStack: true });
    const { idleTimeoutMs, maxOutOfOrdernessMs } = config.watermarkPolicy;
    assert.equal(at, now - 500 + idleTimeoutMs + maxOutOfOrdernessMs + 60_000 + 1000);
    assert.ok(at - now > 60_000, 'well ahead: the watermark passes the window of the events');
  });
});
