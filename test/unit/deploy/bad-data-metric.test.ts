// The offvia-bad-data-rows log metric counts one line per bad-data row, on every path that writes one: its filter is
// evaluated over the log lines the real code emits.
import assert from 'node:assert/strict';
import { logMetrics } from '../../../deploy/gcloud/monitoring';
import type { LogEntry } from '../../../shared/logging/logger';
import { MONITORING_TARGETS } from '../../support/deploy-plans';
import { bookingPayload } from '../../support/drift-fixtures';
import { driftRig } from '../../support/drift-rig';

const T0 = Date.UTC(2026, 9, 7, 14, 10, 30);

/**
 * The metric's filter applied to structured lines: it has the shape `… AND jsonPayload.outcome="X" AND NOT
 * (jsonPayload.message="A" OR …)`; the resource part does not apply to lines written in-process.
 */
function countedByMetric(filter: string, lines: readonly LogEntry[]): number {
  const outcome = /jsonPayload\.outcome="([^"]+)"/.exec(filter)?.[1];
  assert.ok(outcome, `no outcome clause in ${filter}`);
  const not = /NOT \((.*)\)$/.exec(filter)?.[1] ?? '';
  const excluded = [...not.matchAll(/jsonPayload\.message="((?:[^"\\]|\\.)*)"/g)].map(
    (m) => JSON.parse(`"${m[1] ?? ''}"`) as string,
  );
  return lines.filter((l) => l.outcome === outcome && !excluded.includes(l.message)).length;
}

describe('deploy: the bad-data-rows log metric', () => {
  const metric = logMetrics(MONITORING_TARGETS).find((m) => m.name === 'offvia-bad-data-rows');

  it('counts a row the drift gate sends to bad data at ingest (permanent schema error) once', async () => {
    assert.ok(metric);
    const { route, lines } = driftRig({ startMs: T0 });
    const { out } = await route(bookingPayload(1, { 'bad-name': 2 }), 'm1', T0);
    assert.equal(out.action, 'bad_data');
    assert.equal(
      countedByMetric(metric.filter, lines),
      1,
      JSON.stringify(lines.map((l) => l.message)),
    );
  });
});
