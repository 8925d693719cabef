// The dropped-late log metric counts one line per element the windows leave out as too late (evaluated over the
// lines the real pipeline emits in the lab scenario), labelled by pipeline and reason, and the deploy plan creates
// it and an alert policy on it, grouped by pipeline and reason.
import assert from 'node:assert/strict';
import { alertPolicies, logMetrics } from '../../../deploy/gcloud/monitoring';
import { buildDeployPlan } from '../../../deploy/gcloud/deploy-plan';
import { REPO_ROOT, readRepoFacts } from '../../../deploy/gcloud/cli';
import type { LogEntry } from '../../../shared/logging/logger';
import { memoryBookingWindows, runLabWindowScenario } from '../../support/booking-windows';
import { MONITORING_TARGETS, OPTIONS, P } from '../../support/deploy-plans';

const TARGETS = MONITORING_TARGETS;

/** The `jsonPayload.K="V"` clauses of a filter, as a predicate on in-process lines (the resource part is not theirs). */
function matches(filter: string, line: LogEntry): boolean {
  const clauses = [...filter.matchAll(/jsonPayload\.(\w+)="((?:[^"\\]|\\.)*)"/g)];
  assert.ok(clauses.length >= 2, filter);
  return clauses.every(
    ([, key = '', value = '']) =>
      (line as unknown as Record<string, unknown>)[key] === JSON.parse(`"${value}"`),
  );
}

describe('deploy: the dropped-late metric and alert', () => {
  const metric = logMetrics(TARGETS).find((m) => m.name === 'offvia-dropped-late-events');
  const policy = alertPolicies(TARGETS).find((p) => p.displayName === 'offvia-dropped-late');

  it('counts each event the windows drop as late once, by pipeline and drop reason', async () => {
    assert.ok(metric);
    const lines: LogEntry[] = [];
    const { windows, sink, clock, store } = memoryBookingWindows({}, { logs: lines });
    const run = await runLabWindowScenario(sink, windows, clock);
    assert.equal(run.outcomes.e6, 'dropped');
    const counted = lines.filter((l) => matches(metric.filter, l));
    const dropped = (await store.readDropped()).reduce((n, d) => n + d.count, 0);
    assert.equal(dropped, 1);
    assert.equal(counted.length, dropped, 'one line per dropped event, none for its redelivery');
    assert.deepEqual(
      metric.metricDescriptor.labels.map((l) => l.key),
      ['pipeline', 'drop_reason'],
    );
    const line = counted[0] as unknown as Record<string, unknown>;
    assert.equal(line.drop_reason, 'EXPIRED_WINDOW');
    assert.equal(line.pipeline, windows.config.pipeline);
    assert.ok(typeof line.window_start === 'string' && typeof line.window_end === 'string');
    assert.equal(metric.labelExtractors?.drop_reason, 'EXTRACT(jsonPayload.drop_reason)');
    assert.equal(metric.labelExtractors?.pipeline, 'EXTRACT(jsonPayload.pipeline)');
  });

  it('alerts on any dropped-late event in 10 minutes, per pipeline and reason', () => {
    assert.ok(policy && metric);
    const [condition] = policy.conditions;
    assert.ok(condition && 'conditionThreshold' in condition);
    const t = condition.conditionThreshold;
    assert.match(t.filter, /logging\.googleapis\.com\/user\/offvia-dropped-late-events/);
    assert.equal(t.thresholdValue, 0);
    assert.deepEqual(t.aggregations[0]?.groupByFields, [
      'metric.label.pipeline',
      'metric.label.drop_reason',
    ]);
    assert.match(policy.documentation.content, /offvia gold restate/);
  });

  it('is in the deploy plan: the metric and the policy', () => {
    const plan = buildDeployPlan(OPTIONS, readRepoFacts(REPO_ROOT, P, OPTIONS.bqLocation));
    const titles = plan.steps.map((s) => s.title);
    assert.ok(titles.includes('Log-based metric offvia-dropped-late-events'), 'metric step');
    assert.ok(titles.includes('Alert policy offvia-dropped-late'), 'policy step');
    const file = plan.files.find((f) => f.path.endsWith('/policies/dropped-late.json'));
    assert.ok(file);
    assert.equal(
      (JSON.parse(file.content) as { displayName: string }).displayName,
      'offvia-dropped-late',
    );
  });
});
