// Redeploy compatibility: every pinned dry run (test/unit/deploy/golden/, written from the plans before booking was
// planned as a registered pipeline) still runs the same commands. A step's title and the plan's notes are prose and
// may change; its kind, probe, commands, retry and captured variable may not.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Step } from '../../../deploy/gcloud/steps';
import { GOLDEN_SCENARIOS, type GoldenScenario, scenarioPlan } from '../../support/deploy-plans';

interface Golden {
  readonly steps: Step[];
  readonly files: { path: string; sha256: string }[];
}

function readGolden(scenario: GoldenScenario): Golden {
  const text = readFileSync(path.join(__dirname, 'golden', `${scenario.name}.jsonl`), 'utf8');
  const lines = text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as { step?: Step; file?: { path: string; sha256: string } });
  return {
    steps: lines.flatMap((l) => (l.step === undefined ? [] : [l.step])),
    files: lines.flatMap((l) => (l.file === undefined ? [] : [l.file])),
  };
}

/** JSON with every object's keys sorted, so two equal steps built in another key order read the same. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value).filter(([, v]) => v !== undefined);
    entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonical(v)}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

/** What a step does, without its title: the text two plans must agree on. */
function meaning(step: Step): string {
  const rest: Record<string, unknown> = { ...step };
  delete rest.title;
  return canonical(rest);
}

const actions = (steps: readonly Step[]): string[] =>
  steps.filter((s) => s.kind !== 'note').map(meaning);

describe('deploy and teardown plans: the pinned dry runs', () => {
  for (const scenario of GOLDEN_SCENARIOS) {
    it(`${scenario.argv.join(' ')}: the same commands in the same order`, () => {
      const golden = readGolden(scenario);
      const plan = scenarioPlan(scenario);
      assert.deepEqual(actions(plan.steps), actions(golden.steps));
      const files = plan.files
        .map((f) => ({
          path: f.path,
          sha256: createHash('sha256').update(f.content).digest('hex'),
        }))
        .sort((a, b) => a.path.localeCompare(b.path));
      assert.deepEqual(
        files,
        [...golden.files].sort((a, b) => a.path.localeCompare(b.path)),
      );
    });
  }
});
