// The Cloud Monitoring dashboard of a deployment: the log-based metrics of monitoring.ts and Pub/Sub's and Cloud
// Run's own metrics as charts, the JSON `gcloud monitoring dashboards create --config-from-file` reads.
import path from 'node:path';
import {
  type Aggregation,
  ingestSubscriptionFilter,
  metricNames,
  type MonitoringTargets,
} from './monitoring';
import type { DeployOptions, GeneratedFile } from './options';
import { byDisplayName, type Step } from './steps';

/** One tile of a `mosaicLayout` holding an `xyChart` (Cloud Monitoring `Dashboard` API). */
export interface ChartTile {
  readonly xPos: number;
  readonly yPos: number;
  readonly width: number;
  readonly height: number;
  readonly widget: {
    readonly title: string;
    readonly xyChart: {
      readonly dataSets: readonly {
        readonly timeSeriesQuery: {
          readonly timeSeriesFilter: {
            readonly filter: string;
            readonly aggregation: Aggregation;
          };
        };
        readonly plotType: 'LINE' | 'STACKED_BAR' | 'STACKED_AREA';
        readonly legendTemplate?: string;
      }[];
      readonly chartOptions: { readonly mode: 'COLOR' };
      readonly yAxis: { readonly label: string; readonly scale: 'LINEAR' };
    };
  };
}

/** The `Dashboard` resource as the deploy plan writes it (`displayName` is its identity: list → update). */
export interface MonitoringDashboard {
  readonly displayName: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly mosaicLayout: { readonly columns: number; readonly tiles: readonly ChartTile[] };
}

const q = (text: string): string => JSON.stringify(text);
/** Columns of the mosaic grid; each chart is half of it wide. */
const COLUMNS = 12;
const TILE = { width: 6, height: 4 };

/** A chart's definition before it is placed on the grid. */
interface Chart {
  title: string;
  yLabel: string;
  dataSets: ChartTile['widget']['xyChart']['dataSets'];
}

const perMinute = (groupBy: string[] = []): Aggregation => ({
  alignmentPeriod: '60s',
  perSeriesAligner: 'ALIGN_SUM',
  crossSeriesReducer: 'REDUCE_SUM',
  ...(groupBy.length > 0 ? { groupByFields: groupBy } : {}),
});

type DataSet = Chart['dataSets'][number];

/** One data set of a chart: `filter`'s series aggregated, plotted, and labelled by `legendTemplate` when given. */
function series(
  filter: string,
  aggregation: Aggregation,
  plotType: DataSet['plotType'],
  legendTemplate?: string,
): DataSet {
  return {
    timeSeriesQuery: { timeSeriesFilter: { filter, aggregation } },
    plotType,
    ...(legendTemplate === undefined ? {} : { legendTemplate }),
  };
}

const MAX_PER_MINUTE: Aggregation = { alignmentPeriod: '60s', perSeriesAligner: 'ALIGN_MAX' };

/**
 * The dashboard: quarantined messages by stage, bad-data rows, watermark lag, fireWindows runs (log-based metrics),
 * the oldest unacked message age, dead letters forwarded and waiting (Pub/Sub), and requests by class (Cloud Run).
 */
export function monitoringDashboard(t: MonitoringTargets): MonitoringDashboard {
  const names = metricNames(t.prefix);
  const user = (name: string): string =>
    `metric.type="logging.googleapis.com/user/${name}" AND resource.type="cloud_run_revision"`;
  const subscriptionMetric = (metric: string, subscription: string): string =>
    `metric.type="pubsub.googleapis.com/subscription/${metric}" AND resource.type="pubsub_subscription" AND ` +
    `resource.label.subscription_id=${subscription}`;
  const chart = (title: string, yLabel: string, ...dataSets: DataSet[]): Chart => ({
    title,
    yLabel,
    dataSets,
  });
  const charts: Chart[] = [
    chart(
      'Quarantined messages per minute, by error_stage',
      'messages / min',
      series(
        user(names.quarantined),
        perMinute(['metric.label.error_stage']),
        'STACKED_BAR',
        '${metric.labels.error_stage}',
      ),
    ),
    chart(
      'Rows written to the bad-data table per minute',
      'rows / min',
      series(user(names.badData), perMinute(), 'STACKED_BAR'),
    ),
    chart(
      'Watermark lag behind the clock (p50 and p99, at each fireWindows run)',
      'ms',
      ...(['50', '99'] as const).map((p) =>
        series(
          user(names.watermarkLag),
          {
            alignmentPeriod: '60s',
            perSeriesAligner: 'ALIGN_DELTA',
            crossSeriesReducer: `REDUCE_PERCENTILE_${p}`,
            groupByFields: ['metric.label.pipeline'],
          },
          'LINE',
          `p${p} \${metric.labels.pipeline}`,
        ),
      ),
    ),
    chart(
      'Completed fireWindows runs per minute',
      'runs / min',
      series(user(names.fireWindowsRuns), perMinute(['metric.label.pipeline']), 'LINE'),
    ),
    chart(
      'Oldest unacked message age (function and Bronze subscriptions)',
      'seconds',
      ...[ingestSubscriptionFilter(t), q(t.bronzeSubscription)].map((subscription) =>
        series(
          subscriptionMetric('oldest_unacked_message_age', subscription),
          MAX_PER_MINUTE,
          'LINE',
          '${resource.labels.subscription_id}',
        ),
      ),
    ),
    chart(
      'Dead letters: forwarded per minute, and waiting in the hold subscriptions',
      'messages',
      // Forwarded: counted on the subscriptions that forward (the function's and Bronze's).
      series(
        'metric.type="pubsub.googleapis.com/subscription/dead_letter_message_count" AND ' +
          'resource.type="pubsub_subscription"',
        perMinute(['resource.label.subscription_id']),
        'STACKED_BAR',
        'forwarded from ${resource.labels.subscription_id}',
      ),
      series(
        subscriptionMetric(
          'num_undelivered_messages',
          `one_of(${[t.deadLetterHoldSubscription, t.bronzeDeadLetterHoldSubscription].map(q).join(',')})`,
        ),
        MAX_PER_MINUTE,
        'LINE',
        'waiting in ${resource.labels.subscription_id}',
      ),
    ),
    chart(
      'Function requests per minute, by service and response class',
      'requests / min',
      series(
        'metric.type="run.googleapis.com/request_count" AND resource.type="cloud_run_revision" AND ' +
          `resource.label.service_name=one_of(${t.services.map(q).join(',')})`,
        perMinute(['resource.label.service_name', 'metric.label.response_code_class']),
        'STACKED_BAR',
        '${resource.labels.service_name} ${metric.labels.response_code_class}',
      ),
    ),
    chart(
      'Events dropped as late per minute, by pipeline and reason (in Silver, missing from gold)',
      'events / min',
      series(
        user(names.droppedLate),
        perMinute(['metric.label.pipeline', 'metric.label.drop_reason']),
        'STACKED_BAR',
        '${metric.labels.pipeline} ${metric.labels.drop_reason}',
      ),
    ),
  ];
  return {
    displayName: `${t.prefix}pipeline`,
    labels: { app: 'offvia', managed_by: 'deploy-gcloud' },
    mosaicLayout: {
      columns: COLUMNS,
      tiles: charts.map((c, i) => ({
        xPos: (i % 2) * TILE.width,
        yPos: Math.floor(i / 2) * TILE.height,
        width: TILE.width,
        height: TILE.height,
        widget: {
          title: c.title,
          xyChart: {
            dataSets: c.dataSets,
            chartOptions: { mode: 'COLOR' },
            yAxis: { label: c.yLabel, scale: 'LINEAR' },
          },
        },
      })),
    },
  };
}

/** Plan variable holding the dashboard's resource name when it already exists. */
export const DASHBOARD_VARIABLE = 'MONITORING_DASHBOARD';

/**
 * Adds the dashboard to a deploy plan, after the metrics its charts read: its JSON file, and a step that finds it by
 * display name into `variable` (one per pipeline), then creates it or replaces its definition.
 */
export function addMonitoringDashboard(
  o: DeployOptions,
  targets: MonitoringTargets,
  steps: Step[],
  files: GeneratedFile[],
  variable: string = DASHBOARD_VARIABLE,
): void {
  const p = `--project=${o.project}`;
  const dashboard = monitoringDashboard(targets);
  // The booking dashboard keeps its file name; another pipeline's is named like its display name.
  const base =
    variable === DASHBOARD_VARIABLE ? 'pipeline' : dashboard.displayName.slice(o.namePrefix.length);
  const file = path.posix.join(o.outDir, 'dashboards', `${base}.json`);
  files.push({ path: file, content: `${JSON.stringify(dashboard, null, 2)}\n` });
  steps.push(
    byDisplayName(
      `Cloud Monitoring dashboard ${dashboard.displayName}`,
      'monitoring dashboards',
      variable,
      dashboard.displayName,
      p,
      `--config-from-file=${file}`,
    ),
  );
}
