// The Cloud Monitoring dashboard in the deploy plan: its JSON file, the step that creates or updates it in the
// rendered (dry-run) plan, and charts that read only metrics the plan defines or Google Cloud provides.
import assert from 'node:assert/strict';
import { parseCli, planFor } from '../../../deploy/gcloud/cli';
import { DASHBOARD_VARIABLE, type MonitoringDashboard } from '../../../deploy/gcloud/dashboard';
import type { Plan } from '../../../deploy/gcloud/options';
import { renderPlan } from '../../../deploy/gcloud/steps';
import { BOOKING_DLQ_SUBSCRIPTION, BRONZE_SUBSCRIPTION } from '../../../deploy/local/resources';

const P = 'offvia-test';
const OUT_DIR = 'deploy/gcloud/generated/test';
const FILE = `${OUT_DIR}/dashboards/pipeline.json`;

describe('deploy plan: the Cloud Monitoring dashboard', () => {
  let plan: Plan;
  let dashboard: MonitoringDashboard;
  let script: string;
  before(() => {
    // The plan deploy.sh --dry-run prints for these flags.
    plan = planFor(
      // Booking's dashboard and metrics; every pipeline's are checked in gcloud-pipelines.test.ts.
      parseCli([
        'deploy',
        '--project',
        P,
        '--region',
        'europe-west1',
        '--pipeline',
        'booking',
        '--out-dir',
        OUT_DIR,
      ]),
    );
    const file = plan.files.find((f) => f.path === FILE);
    assert.ok(file, `${FILE} is generated`);
    dashboard = JSON.parse(file.content) as MonitoringDashboard;
    script = renderPlan(plan.header, plan.steps);
  });

  const filters = (): string[] =>
    dashboard.mosaicLayout.tiles.flatMap((t) =>
      t.widget.xyChart.dataSets.map((d) => d.timeSeriesQuery.timeSeriesFilter.filter),
    );

  it('is in the dry-run plan: looked up by display name, created or updated from its file, after the metrics', () => {
    assert.equal(dashboard.displayName, 'offvia-pipeline');
    assert.ok(
      script.includes(
        `${DASHBOARD_VARIABLE}="$(gcloud monitoring dashboards list \\\n    --project=${P} \\\n` +
          `    --filter='displayName="offvia-pipeline"'`,
      ),
      'looked up by display name',
    );
    assert.ok(
      script.includes(
        `retry gcloud monitoring dashboards update "\${${DASHBOARD_VARIABLE}}" \\\n` +
          `      --config-from-file=${FILE}`,
      ),
      'the dashboard found is updated from the file',
    );
    assert.ok(
      script.includes(
        `retry gcloud monitoring dashboards create \\\n      --config-from-file=${FILE}`,
      ),
      'else created from the file',
    );
    const metricsAt = script.indexOf('gcloud logging metrics create');
    const dashboardAt = script.indexOf('gcloud monitoring dashboards create');
    assert.ok(
      metricsAt > 0 && dashboardAt > metricsAt,
      'the metrics exist before a chart reads them',
    );
  });

  it('reads every log-based metric the plan creates, and only those of the user metrics', () => {
    const created = plan.files
      .filter((f) => f.path.includes('/metrics/'))
      .map((f) => (JSON.parse(f.content) as { name: string }).name);
    const used = [
      ...new Set(
        filters().flatMap((f) =>
          [...f.matchAll(/logging\.googleapis\.com\/user\/([A-Za-z0-9_-]+)/g)].map((m) => m[1]),
        ),
      ),
    ].sort();
    // The scheduler-errors metric has its own alert; every other log-based metric is charted.
    assert.deepEqual(used, created.filter((n) => !n.endsWith('scheduler-job-errors')).sort());
  });

  it("charts Pub/Sub's oldest unacked message age and dead letters of the right subscriptions", () => {
    const text = filters().join('\n');
    assert.ok(text.includes('pubsub.googleapis.com/subscription/oldest_unacked_message_age'));
    assert.ok(text.includes(`resource.label.subscription_id="${BRONZE_SUBSCRIPTION}"`));
    assert.ok(text.includes('eventarc-europe-west1-offvia-ingest-booking-.*'), text);
    assert.ok(text.includes('pubsub.googleapis.com/subscription/dead_letter_message_count'));
    assert.ok(
      text.includes(
        `num_undelivered_messages" AND resource.type="pubsub_subscription" AND resource.label.subscription_id=one_of("${BOOKING_DLQ_SUBSCRIPTION}","booking-events-bronze-dlq-hold")`,
      ),
    );
  });

  it('places the charts on the 12-column grid without overlap', () => {
    const { columns, tiles } = dashboard.mosaicLayout;
    assert.ok(tiles.length >= 6);
    const cells = new Set<string>();
    for (const t of tiles) {
      assert.ok(t.xPos >= 0 && t.xPos + t.width <= columns, t.widget.title);
      for (let x = t.xPos; x < t.xPos + t.width; x++) {
        for (let y = t.yPos; y < t.yPos + t.height; y++) {
          assert.ok(!cells.has(`${x},${y}`), `${t.widget.title} overlaps at ${x},${y}`);
          cells.add(`${x},${y}`);
        }
      }
      assert.ok(t.widget.title.length > 0);
      assert.ok(t.widget.xyChart.dataSets.length > 0, t.widget.title);
    }
  });
});
