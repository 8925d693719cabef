// Validation of windowing strategies: normalised output, every issue reported with its path, named error.
import assert from 'node:assert/strict';

import {
  createReduceFnRunner,
  validateWindowingStrategy,
  WindowingConfigError,
} from '../../../shared/windowing';
import { countCombineFn } from '../../support/test-stream';
import { labStrategy } from './lab-config';

const LAB = {
  windowFn: { kind: 'fixed', sizeMs: 60_000 },
  allowedLatenessMs: 300_000,
  trigger: { earlyFirings: { processingTimeDelayMs: 30_000 }, lateFirings: { elementCount: 1 } },
  accumulationMode: 'ACCUMULATING',
};

function issuesOf(input: unknown): string[] {
  try {
    validateWindowingStrategy(input);
  } catch (err) {
    assert.ok(err instanceof WindowingConfigError);
    assert.equal(err.name, 'WindowingConfigError');
    return err.issues.map((i) => `${i.path}: ${i.message}`);
  }
  assert.fail('expected a WindowingConfigError');
}

describe('windowing: strategy validation', () => {
  it('accepts the lab strategy and normalises defaults', () => {
    assert.deepEqual(validateWindowingStrategy(LAB), labStrategy());
  });

  it('turns absent late firings into null and keeps the output JSON-safe', () => {
    const s = validateWindowingStrategy({ ...LAB, trigger: {} });
    assert.deepEqual(s.trigger, { lateFirings: null });
    assert.deepEqual(JSON.parse(JSON.stringify(s)), s);
  });

  it('reports every problem with its path', () => {
    assert.deepEqual(
      issuesOf({
        windowFn: { kind: 'sliding', sizeMs: 60_000, periodMs: 0 },
        allowedLatenessMs: -1,
        trigger: { earlyFirings: {}, lateFirings: { elementCount: 0.5 } },
        accumulationMode: 'RETRACTING',
      }),
      [
        'windowFn.periodMs: must be >= 1',
        'allowedLatenessMs: must be >= 0',
        'trigger.earlyFirings: must set processingTimeDelayMs and/or elementCount',
        'trigger.lateFirings.elementCount: must be an integer',
        'accumulationMode: must be "ACCUMULATING" or "DISCARDING"',
      ],
    );
  });

  it('rejects unknown window kinds, unknown keys and non-objects', () => {
    assert.deepEqual(issuesOf({ ...LAB, windowFn: { kind: 'global' } }), [
      'windowFn.kind: must be one of {kind: "fixed" | "sliding" | "sessions"}',
    ]);
    assert.equal(issuesOf({ ...LAB, extra: 1 }).length, 1);
    assert.equal(issuesOf(null).length, 1);
    assert.match(issuesOf({ ...LAB, allowedLatenessMs: 2 ** 60 })[0] ?? '', /safe integer/);
  });

  it('validates when the runner is built', () => {
    assert.throws(
      () =>
        createReduceFnRunner(
          { ...validateWindowingStrategy(LAB), allowedLatenessMs: -5 },
          countCombineFn,
        ),
      WindowingConfigError,
    );
  });
});
