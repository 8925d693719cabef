// The Cloud Monitoring dashboard of a deployment: the log-based metrics of monitoring.ts and Pub/Sub's and Cloud
// Run's own metrics as charts, the JSON `gcloud monitoring dashboards create --config-from-file` reads.
import path from 'node:path';
import { ingestSubscriptionFilter, metricNames, type MonitoringTargets } from './monitoring';
import type { DeployOptions, GeneratedFile } from './options';
import { byDisplayName, type Step } from './steps';

/** Cloud Monitoring `Aggregation` of a chart's time series. */
interface ChartAggregation {
  readonly alignmentPeriod: string;
  readonly perSeriesAligner: string;
  readonly crossSeriesReducer?: string;
  readonly groupByFields?: readonly string[];
}

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
            readonly aggregation: ChartAggregation;
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

const perMinute = (groupBy: string[] = []): ChartAggregation => ({
  alignmentPeriod: '60s',
  perSeriesAligner: 'ALIGN_SUM',
  crossSeriesReducer: 'REDUCE_SUM',
  ...(groupBy.length > 0 ? { groupByFields: groupBy } : {}),
});

/**
 * The dashboard: quarantined messages by stage, bad-data rows, watermark lag, fireWindows runs (log-based metrics
 * of the deployment), the oldest unacked message age of the function and Bronze subscriptions, messages sent to
 * the dead-letter topic and waiting in its hold subscription (Pub/Sub), and the functions' requests by response
 * class (Cloud Run).
 */
export function monitoringDashboard(t: MonitoringTargets): MonitoringDashboard {
  const names = metricNames(t.prefix);
  const user = (name: string): string =>
    `metric.type="logging.googleapis.com/user/${name}" AND resource.type="cloud_run_revision"`;
  const subscriptionMetric = (metric: string, subscription: string): string =>
    `metric.type="pubsub.googleapis.com/subscription/${metric}" AND resource.type="pubsub_subscription" AND ` +
    `resource.label.subscription_id=${subscription}`;
  // Eventarc names the function's push subscription eventarc-REGION-SERVICE-NNN (as the alert policy matches it),
  // unless the plan creates the subscription itself.
  const functionSubscription = ingestSubscriptionFilter(t);
  const charts: Chart[] = [
    {
      title: 'Quarantined messages per minute, by error_stage',
      yLabel: 'messages / min',
      dataSets: [
        {
          timeSeriesQuery: {
            timeSeriesFilter: {
              filter: user(names.quarantined),
              aggregation: perMinute(['metric.label.error_stage']),
            },
          },
          plotType: 'STACKED_BAR',
          legendTemplate: '${metric.labels.error_stage}',
        },
      ],
    },
    {
      title: 'Rows written to the bad-data table per minute',
      yLabel: 'rows / min',
      dataSets: [
        {
          timeSeriesQuery: {
            timeSeriesFilter: { filter: user(names.badData), aggregation: perMinute() },
          },
          plotType: 'STACKED_BAR',
        },
      ],
    },
    {
      title: 'Watermark lag behind the clock (p50 and p99, at each fireWindows run)',
      yLabel: 'ms',
      dataSets: (['50', '99'] as const).map((p) => ({
        timeSeriesQuery: {
          timeSeriesFilter: {
            filter: user(names.watermarkLag),
            aggregation: {
              alignmentPeriod: '60s',
              perSeriesAligner: 'ALIGN_DELTA',
              crossSeriesReducer: `REDUCE_PERCENTILE_${p}`,
              groupByFields: ['metric.label.pipeline'],
            },
          },
        },
        plotType: 'LINE' as const,
        legendTemplate: `p${p} \${metric.labels.pipeline}`,
      })),
    },
    {
      title: 'Completed fireWindows runs per minute',
      yLabel: 'runs / min',
      dataSets: [
        {
          timeSeriesQuery: {
            timeSeriesFilter: {
              filter: user(names.fireWindowsRuns),
              aggregation: perMinute(['metric.label.pipeline']),
            },
          },
          plotType: 'LINE',
        },
      ],
    },
    {
      title: 'Oldest unacked message age (function and Bronze subscriptions)',
      yLabel: 'seconds',
      dataSets: [functionSubscription, q(t.bronzeSubscription)].map((subscription) => ({
        timeSeriesQuery: {
          timeSeriesFilter: {
            filter: subscriptionMetric('oldest_unacked_message_age', subscription),
            aggregation: { alignmentPeriod: '60s', perSeriesAligner: 'ALIGN_MAX' },
          },
        },
        plotType: 'LINE' as const,
        legendTemplate: '${resource.labels.subscription_id}',
      })),
    },
    {
      title: 'Dead letters: forwarded per minute, and waiting in the hold subscriptions',
      yLabel: 'messages',
      dataSets: [
        {
          // Counted on the subscriptions that forward (the function's push subscription and Bronze).
          timeSeriesQuery: {
            timeSeriesFilter: {
              filter:
                'metric.type="pubsub.googleapis.com/subscription/dead_letter_message_count" AND ' +
                'resource.type="pubsub_subscription"',
              aggregation: perMinute(['resource.label.subscription_id']),
            },
          },
          plotType: 'STACKED_BAR',
          legendTemplate: 'forwarded from ${resource.labels.subscription_id}',
        },
        {
          timeSeriesQuery: {
            timeSeriesFilter: {
              // Both hold subscriptions: the function's dead letters and the rows the Bronze subscription could
              // not write.
              filter: subscriptionMetric(
                'num_undelivered_messages',
                `one_of(${[t.deadLetterHoldSubscription, t.bronzeDeadLetterHoldSubscription].map(q).join(',')})`,
              ),
              aggregation: { alignmentPeriod: '60s', perSeriesAligner: 'ALIGN_MAX' },
            },
          },
          plotType: 'LINE',
          legendTemplate: 'waiting in ${resource.labels.subscription_id}',
        },
      ],
    },
    {
      title: 'Function requests per minute, by service and response class',
      yLabel: 'requests / min',
      dataSets: [
        {
          timeSeriesQuery: {
            timeSeriesFilter: {
              filter:
                'metric.type="run.googleapis.com/request_count" AND resource.type="cloud_run_revision" AND ' +
                `resource.label.service_name=one_of(${t.services.map(q).join(',')})`,
              aggregation: perMinute([
                'resource.label.service_name',
                'metric.label.response_code_class',
              ]),
            },
          },
          plotType: 'STACKED_BAR',
          legendTemplate: '${resource.labels.service_name} ${metric.labels.response_code_class}',
        },
      ],
    },
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
 * Adds the dashboard to a deploy plan: its JSON file in the out dir and one step that looks it up by display name
 * (`gcloud monitoring dashboards list`), then creates it or replaces its definition. Called after the log-based
 * metrics, which its charts read. `variable` is the plan variable of the lookup: one per dashboard (per pipeline).
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
