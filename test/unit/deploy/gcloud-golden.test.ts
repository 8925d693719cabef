// Redeploy compatibility: every pinned dry run (test/unit/deploy/golden/, written from the plans before booking was
// planned as a registered pipeline) still runs the same commands. A step's title and the plan's notes are prose and
// may change; its kind, probe, commands, retry and captured variable may not, but for the console labels PROSE lists.
// The deploy plans and telemetry's teardowns keep their order; the other teardowns list each pipeline's steps concept
// by concept now (ORDER says why that is safe), so they are compared as multisets. ADDED lists the steps a plan gained.
// Pinned commands changed on purpose: telemetry's Silver and dead-letter DDL declare reprocess_run_id at creation
// (the BigQuery emulator refuses streamed rows into a column added by ALTER), so those two steps were re-pinned; the
// four deploy plans were re-pinned whole (current order, telemetry's operator DDL included) when the Firestore
// inventory (shared/state/firestore-inventory.ts) gave every monotonic or high-rate field its index exemption.
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

/**
 * Console labels and error text, not identities: an account's display name (set only when it is created), a
 * scheduler job's description, and the message of the topic-retention read-back (telemetry's now says what fails).
 */
const PROSE: readonly [RegExp, string][] = [
  [/"--(display-name|description)=[^"]*"/g, '"--$1=…"'],
  [/ after the update: offvia seek --time cannot replay/g, ' after the update'],
];

/** What a step does, without its title: the text two plans must agree on. */
function meaning(step: Step): string {
  const rest: Record<string, unknown> = { ...step };
  delete rest.title;
  return PROSE.reduce((text, [from, to]) => text.replace(from, to), canonical(rest));
}

/**
 * The scenarios whose order changed. Every pipeline's steps now come concept by concept (all DDL, then all accounts
 * and grants, then all Pub/Sub, then all functions, then all monitoring) instead of pipeline by pipeline, and the
 * shared accounts come beside booking's. Safe because the order still puts each resource after what it needs: tables
 * before the grants and Bronze subscriptions on them, accounts and custom roles before grants, topics and the agent's
 * token grant before the functions, each function before its invoker grant, subscription and schedule (the renderer
 * refuses a variable used before its capture), metrics before the policies and dashboards reading them; a teardown
 * removes project bindings before their accounts. Pipelines share no resource but those project-wide steps.
 */
const MULTISET = new Set(['teardown-all', 'teardown-all-delete-data']);

/** Booking's teardown now deletes its dashboard, which the deploy creates and the old teardown left behind. */
const ADDED: Readonly<Record<string, readonly string[]>> = {
  'teardown-all': ['Delete Cloud Monitoring dashboard offvia-pipeline'],
  'teardown-all-delete-data': ['Delete Cloud Monitoring dashboard offvia-pipeline'],
  'teardown-booking': ['Delete Cloud Monitoring dashboard offvia-pipeline'],
  'teardown-booking-delete-data': ['Delete Cloud Monitoring dashboard offvia-pipeline'],
};

const actions = (steps: readonly Step[]): string[] =>
  steps.filter((s) => s.kind !== 'note').map(meaning);

describe('deploy and teardown plans: the pinned dry runs', () => {
  for (const scenario of GOLDEN_SCENARIOS) {
    const multiset = MULTISET.has(scenario.name);
    it(`${scenario.argv.join(' ')}: the same commands${multiset ? '' : ' in the same order'}`, () => {
      const golden = readGolden(scenario);
      const plan = scenarioPlan(scenario);
      const added = ADDED[scenario.name] ?? [];
      assert.deepEqual(
        plan.steps.filter((s) => added.includes(s.title)).map((s) => s.title),
        added,
      );
      const now = actions(plan.steps.filter((s) => !added.includes(s.title)));
      const before = actions(golden.steps);
      if (multiset) assert.deepEqual([...now].sort(), [...before].sort());
      else assert.deepEqual(now, before);
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
