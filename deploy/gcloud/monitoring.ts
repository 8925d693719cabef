// Log-based metrics and alert policies as the JSON files gcloud reads. Log filters come from the log catalogue
// (shared/logging/logs.ts) itself, so renaming a log line breaks a test instead of silently zeroing a metric.
import { type LogEntry, Logger } from '../../shared/logging/logger';
import * as logs from '../../shared/logging/logs';

/** A log-based metric (Cloud Logging `LogMetric`). */
export interface LogMetric {
  readonly name: string;
  readonly description: string;
  /** Logging query language. */
  readonly filter: string;
  readonly metricDescriptor: {
    readonly metricKind: 'DELTA';
    readonly valueType: 'INT64' | 'DISTRIBUTION';
    readonly unit: string;
    readonly labels: readonly { key: string; valueType: 'STRING'; description: string }[];
  };
  readonly labelExtractors?: Readonly<Record<string, string>>;
  readonly valueExtractor?: string;
  readonly bucketOptions?: {
    readonly exponentialBuckets: { numFiniteBuckets: number; growthFactor: number; scale: number };
  };
}

/** One threshold condition of an alert policy (Cloud Monitoring `AlertPolicy.Condition`). */
export interface ThresholdCondition {
  readonly displayName: string;
  readonly conditionThreshold: {
    readonly filter: string;
    readonly aggregations: readonly Aggregation[];
    readonly denominatorFilter?: string;
    readonly denominatorAggregations?: readonly Aggregation[];
    readonly comparison: 'COMPARISON_GT';
    readonly thresholdValue: number;
    readonly duration: string;
    readonly trigger: { readonly count: number };
  };
}

/** An absence condition (Cloud Monitoring `AlertPolicy.Condition.conditionAbsent`): no data for `duration`. */
export interface AbsentCondition {
  readonly displayName: string;
  readonly conditionAbsent: {
    readonly filter: string;
    readonly aggregations: readonly Aggregation[];
    readonly duration: string;
    readonly trigger: { readonly count: number };
  };
}

/** Cloud Monitoring `Aggregation`. */
export interface Aggregation {
  readonly alignmentPeriod: string;
  readonly perSeriesAligner: string;
  readonly crossSeriesReducer?: string;
  readonly groupByFields?: readonly string[];
}

/** A Cloud Monitoring `AlertPolicy`; `displayName` is its identity for the deploy script (list → update). */
export interface AlertPolicy {
  readonly displayName: string;
  readonly documentation: { readonly content: string; readonly mimeType: 'text/markdown' };
  readonly userLabels: Readonly<Record<string, string>>;
  readonly combiner: 'OR';
  readonly enabled: true;
  readonly conditions: readonly (ThresholdCondition | AbsentCondition)[];
  readonly alertStrategy: { readonly autoClose: string };
  readonly notificationChannels: readonly string[];
}

/** What the metrics and policies are about. */
export interface MonitoringTargets {
  readonly prefix: string;
  readonly region: string;
  /** Cloud Run service names of all deployed functions. */
  readonly services: readonly string[];
  /** Cloud Run service name of the Pub/Sub-triggered function. */
  readonly ingestService: string;
  /** Cloud Run service name of fireWindows when it is deployed (its runs get an absence alert). */
  readonly fireWindowsService?: string;
  /** Cloud Scheduler job ids (`resource.labels.job_id`) whose failed attempts are counted. */
  readonly schedulerJobs: readonly string[];
  /** The plan's own ingest subscription; absent: Eventarc's `eventarc-REGION-SERVICE-NNN`, matched by pattern. */
  readonly ingestSubscription?: string;
  readonly bronzeSubscription: string;
  readonly deadLetterHoldSubscription: string;
  /** The subscription that keeps the Bronze BigQuery subscription's dead letters (rows BigQuery refused). */
  readonly bronzeDeadLetterHoldSubscription: string;
  /** `projects/P/notificationChannels/ID`; empty: incidents show in the console only. */
  readonly notificationChannels: readonly string[];
}

/** Alert thresholds: starting points for Offvia's volume (bookings, not clicks); tune them here and redeploy. */
export const THRESHOLDS = {
  /** Quarantined messages per second, per error_stage, over 5 minutes: 0.1/s is 30 rejects in 5 minutes. */
  quarantinePerSecond: 0.1,
  /** Oldest unacked message, seconds. Healthy delivery acks in seconds; 10 minutes means stuck or failing. */
  oldestUnackedSeconds: 600,
  /** Share of 5xx responses of a function over 5 minutes (thrown errors: redeliveries, failed sweeps). */
  errorRatio: 0.05,
  /** Rows written to the bad-data table in 10 minutes: any is an operator's problem. */
  badDataRows: 0,
  /** 99th percentile watermark lag, ms: twice the lab's 5 minutes of allowed lateness. */
  watermarkLagMs: 600_000,
  /** No completed fireWindows run for this long (Cloud Scheduler calls it every minute): 10 missed runs. */
  fireWindowsAbsentSeconds: 600,
  /** Failed Cloud Scheduler attempts (ERROR log entries) in 10 minutes: any is a broken schedule (OIDC, 4xx/5xx). */
  schedulerErrors: 0,
  /**
   * Events dropped from the window aggregates as too late, per pipeline, in 10 minutes: any is an event in Silver
   * that gold misses (allowed lateness passed, or the window's trigger finished).
   */
  droppedLateEvents: 0,
} as const;

/** The message and outcome of one catalogue line, by calling it with a capturing logger. */
function catalogued(emit: (log: Logger) => void): { message: string; outcome: string } {
  const entries: LogEntry[] = [];
  emit(
    new Logger(
      'catalogue',
      (entry) => entries.push(entry),
      () => 0,
    ),
  );
  const [entry] = entries;
  if (entry === undefined || entries.length !== 1 || typeof entry.outcome !== 'string') {
    throw new Error(
      'a catalogue line used for a metric must write exactly one entry with an outcome',
    );
  }
  return { message: entry.message, outcome: entry.outcome };
}

const q = (text: string): string => JSON.stringify(text);

/** `(resource.labels.service_name="a" OR …)` for log filters. */
function servicesLogFilter(services: readonly string[]): string {
  return `(${services.map((s) => `resource.labels.service_name=${q(s)}`).join(' OR ')})`;
}

/** A log line, by its catalogue message and outcome (a message alone may be reused with another outcome). */
function lineFilter(line: { message: string; outcome: string }): string {
  return `jsonPayload.message=${q(line.message)} AND jsonPayload.outcome=${q(line.outcome)}`;
}

/** Metric names, by what they count. */
export function metricNames(prefix: string): {
  quarantined: string;
  badData: string;
  watermarkLag: string;
  fireWindowsRuns: string;
  schedulerErrors: string;
  droppedLate: string;
} {
  return {
    droppedLate: `${prefix}dropped-late-events`,
    quarantined: `${prefix}quarantined-messages`,
    badData: `${prefix}bad-data-rows`,
    watermarkLag: `${prefix}watermark-lag`,
    fireWindowsRuns: `${prefix}fire-windows-runs`,
    schedulerErrors: `${prefix}scheduler-job-errors`,
  };
}

/** `resource.labels.job_id="a" OR …` of the scheduler jobs. */
function schedulerJobsLogFilter(jobs: readonly string[]): string {
  return `resource.type="cloud_scheduler_job" AND (${jobs.map((j) => `resource.labels.job_id=${q(j)}`).join(' OR ')})`;
}

/** The monitoring filter value matching the ingest function's subscription id (MonitoringTargets.ingestSubscription). */
export function ingestSubscriptionFilter(t: MonitoringTargets): string {
  return t.ingestSubscription === undefined
    ? `monitoring.regex.full_match(${q(`eventarc-${t.region}-${t.ingestService}-.*`)})`
    : q(t.ingestSubscription);
}

/** A DELTA metric's descriptor, with string labels `[key, description]`. */
function descriptor(
  valueType: LogMetric['metricDescriptor']['valueType'],
  unit: string,
  ...labels: [string, string][]
): LogMetric['metricDescriptor'] {
  return {
    metricKind: 'DELTA',
    valueType,
    unit,
    labels: labels.map(([key, description]) => ({
      key,
      valueType: 'STRING' as const,
      description,
    })),
  };
}

const PIPELINE_LABEL: [string, string] = ['pipeline', 'Windowed pipeline (jsonPayload.pipeline)'];

/** The log-based metrics. */
export function logMetrics(t: MonitoringTargets): LogMetric[] {
  const names = metricNames(t.prefix);
  const ours = `resource.type="cloud_run_revision" AND ${servicesLogFilter(t.services)}`;
  // malformedTrigger also says outcome=quarantine and follows messageQuarantined for the same message,
  // so the metric counts the quarantine line only.
  const quarantined = catalogued((log) =>
    logs.messageQuarantined(log, { messageId: 'm' }, 'PARSE_JSON', 'r', 't'),
  );
  // One outcome=bad_data line per bad-data row, but for three announcing a row whose badDataWritten follows.
  const badData = catalogued((log) => logs.badDataWritten(log, { messageId: 'm' }, 't', 't'));
  // Every completed fireWindows run logs this line, with watermark_lag_ms whenever there is a watermark.
  const fireWindowsRun = catalogued((log) =>
    logs.fireWindowsDone(log, { processingTimeMs: 1, watermarkMs: 0 }),
  );
  // One line per element left out of a window as too late (a redelivery of it is a duplicate, not a second drop).
  const droppedLate = catalogued((log) =>
    logs.windowElementDropped(
      log,
      { message_id: 'm', event_id: 'e', event_time: 't', drop_reason: 'r', watermark_ms: 0 },
      { pipeline: 'p', key: 'k', windowStartMs: 0, windowEndMs: 1 },
    ),
  );
  const announcements = [
    catalogued((log) => logs.rowRejectedBySink(log, { messageId: 'm' }, 't', 'i', 'e')),
    catalogued((log) => logs.driftRowTooLarge(log, { messageId: 'm' }, 't', 2, 1)),
    catalogued((log) =>
      logs.driftRowRejectedAtIngest(
        log,
        { messageId: 'm' },
        { eventId: 'e', table: 't', error: 'x' },
      ),
    ),
  ];
  const metrics: LogMetric[] = [
    {
      name: names.quarantined,
      description:
        'Messages quarantined by ingestBooking, by error_stage (shared/logging/logs.ts messageQuarantined)',
      filter: `${ours} AND ${lineFilter(quarantined)}`,
      metricDescriptor: descriptor('INT64', '1', [
        'error_stage',
        'Validation stage that rejected the message',
      ]),
      labelExtractors: { error_stage: 'EXTRACT(jsonPayload.error_stage)' },
    },
    {
      name: names.badData,
      description: 'Rows written to the bad-data table (outcome=bad_data lines, one per row)',
      filter:
        `${ours} AND jsonPayload.outcome=${q(badData.outcome)} AND ` +
        `NOT (${announcements.map((a) => `jsonPayload.message=${q(a.message)}`).join(' OR ')})`,
      metricDescriptor: descriptor('INT64', '1'),
    },
    {
      name: names.watermarkLag,
      description:
        'Watermark lag in ms (processing time minus watermark), logged by every completed fireWindows run ' +
        '(shared/logging/logs.ts fireWindowsDone), so a stuck watermark keeps reporting a growing lag',
      filter: `${ours} AND ${lineFilter(fireWindowsRun)} AND jsonPayload.watermark_lag_ms:*`,
      metricDescriptor: descriptor('DISTRIBUTION', 'ms', PIPELINE_LABEL),
      labelExtractors: { pipeline: 'EXTRACT(jsonPayload.pipeline)' },
      valueExtractor: 'EXTRACT(jsonPayload.watermark_lag_ms)',
      // 100 ms … ~14 minutes in doublings, then overflow.
      bucketOptions: { exponentialBuckets: { numFiniteBuckets: 14, growthFactor: 2, scale: 100 } },
    },
    {
      name: names.fireWindowsRuns,
      description:
        'Completed fireWindows runs (fireWindowsDone lines); the absence alert fires when they stop',
      filter: `${ours} AND ${lineFilter(fireWindowsRun)}`,
      metricDescriptor: descriptor('INT64', '1', PIPELINE_LABEL),
      labelExtractors: { pipeline: 'EXTRACT(jsonPayload.pipeline)' },
    },
    {
      name: names.droppedLate,
      description:
        'Events dropped from the window aggregates as too late (shared/logging/logs.ts windowElementDropped), by ' +
        'pipeline and drop_reason; they are in Silver, gold misses them',
      filter: `${ours} AND ${lineFilter(droppedLate)}`,
      metricDescriptor: descriptor('INT64', '1', PIPELINE_LABEL, [
        'drop_reason',
        'EXPIRED_WINDOW (allowed lateness passed) or CLOSED_WINDOW (the trigger finished)',
      ]),
      labelExtractors: {
        pipeline: 'EXTRACT(jsonPayload.pipeline)',
        drop_reason: 'EXTRACT(jsonPayload.drop_reason)',
      },
    },
  ];
  if (t.schedulerJobs.length > 0) {
    metrics.push({
      name: names.schedulerErrors,
      description:
        'Failed Cloud Scheduler attempts of our jobs (severity >= ERROR: OIDC 401/403, function 5xx, deadline)',
      filter: `${schedulerJobsLogFilter(t.schedulerJobs)} AND severity>=ERROR`,
      metricDescriptor: descriptor('INT64', '1', ['job_id', 'Cloud Scheduler job id']),
      labelExtractors: { job_id: 'EXTRACT(resource.labels.job_id)' },
    });
  }
  return metrics;
}

const userMetric = (name: string, resourceType = 'cloud_run_revision'): string =>
  `metric.type="logging.googleapis.com/user/${name}" AND resource.type=${q(resourceType)}`;

/** A Cloud Monitoring `Aggregation` (the fields in the API's order; an absent reducer leaves the series apart). */
function agg(period: string, aligner: string, reducer?: string, groupBy?: string[]): Aggregation {
  return {
    alignmentPeriod: period,
    perSeriesAligner: aligner,
    ...(reducer === undefined ? {} : { crossSeriesReducer: reducer }),
    ...(groupBy === undefined ? {} : { groupByFields: groupBy }),
  };
}

/** A condition holding while the series (with `ratio`: `filter` ÷ denominator) is above the threshold for `duration`. */
function above(
  displayName: string,
  filter: string,
  aggregations: Aggregation[],
  thresholdValue: number,
  duration: string,
  ratio?: { denominatorFilter: string; denominatorAggregations: Aggregation[] },
): ThresholdCondition {
  return {
    displayName,
    conditionThreshold: {
      filter,
      aggregations,
      ...ratio,
      comparison: 'COMPARISON_GT',
      thresholdValue,
      duration,
      trigger: { count: 1 },
    },
  };
}

/** The alert policies, one file each. */
export function alertPolicies(t: MonitoringTargets): AlertPolicy[] {
  const names = metricNames(t.prefix);
  const policy = (
    id: string,
    runbook: string,
    conditions: (ThresholdCondition | AbsentCondition)[],
  ): AlertPolicy => ({
    displayName: `${t.prefix}${id}`,
    documentation: { content: runbook, mimeType: 'text/markdown' },
    userLabels: { app: 'offvia', managed_by: 'deploy-gcloud' },
    combiner: 'OR',
    enabled: true,
    conditions,
    alertStrategy: { autoClose: '1800s' },
    notificationChannels: [...t.notificationChannels],
  });
  const subscription = (metric: string, id: string): string =>
    'resource.type="pubsub_subscription" AND ' +
    `metric.type="pubsub.googleapis.com/subscription/${metric}" AND ` +
    `resource.label.subscription_id=${id}`;
  const oldestUnacked = (what: string, id: string): ThresholdCondition =>
    above(
      `Oldest unacked message age, ${what} subscription`,
      subscription('oldest_unacked_message_age', id),
      [agg('60s', 'ALIGN_MAX')],
      THRESHOLDS.oldestUnackedSeconds,
      '300s',
    );
  const requests = `metric.type="run.googleapis.com/request_count" AND resource.type="cloud_run_revision" AND resource.label.service_name=one_of(${t.services.map(q).join(',')})`;
  const rate = (groupBy: string): Aggregation[] => [
    agg('300s', 'ALIGN_RATE', 'REDUCE_SUM', [groupBy]),
  ];

  const policies: AlertPolicy[] = [
    policy(
      'quarantine-rate',
      'Messages are being quarantined faster than usual for one `error_stage`. Bad data is acknowledged and kept ' +
        'in `offvia_quarantine.poisoned_events` (and Bronze): nothing is lost, but a producer is probably sending ' +
        'a broken or changed contract. Query the quarantine table by `error_stage` and `error_reason` for the ' +
        'last hour, then contact the producer.',
      [
        above(
          'Quarantined messages per second, by error_stage',
          userMetric(names.quarantined),
          rate('metric.label.error_stage'),
          THRESHOLDS.quarantinePerSecond,
          '300s',
        ),
      ],
    ),
    policy(
      'oldest-unacked-message-age',
      'A subscription of `booking-events` is not keeping up: the function subscription (Eventarc) is failing or ' +
        'throttled, or the Bronze BigQuery subscription cannot write. Check the function error rate and logs ' +
        '(`outcome: retry`), BigQuery and Firestore health, and the Bronze subscription state in the console.',
      [
        oldestUnacked('function', ingestSubscriptionFilter(t)),
        oldestUnacked('Bronze', q(t.bronzeSubscription)),
      ],
    ),
    policy(
      'dead-letters',
      'Messages reached the dead-letter topic after the maximum delivery attempts: `ingestBooking` kept failing ' +
        `for an infrastructure reason. They wait in the subscription \`${t.deadLetterHoldSubscription}\`; Bronze ` +
        'also has them. Fix the cause, then replay them (republish to `booking-events`). Messages in ' +
        `\`${t.bronzeDeadLetterHoldSubscription}\` are ones the Bronze subscription could not write to ` +
        '`offvia_bronze.raw_bookings` (a permission or the table): fix it, then republish them to `booking-events`.',
      [
        ['the dead-letter subscription', t.deadLetterHoldSubscription],
        ["the Bronze subscription's dead-letter subscription", t.bronzeDeadLetterHoldSubscription],
      ].map(([what = '', id = '']) =>
        above(
          `Undelivered messages in ${what}`,
          subscription('num_undelivered_messages', q(id)),
          [agg('60s', 'ALIGN_MAX')],
          0,
          '0s',
        ),
      ),
    ),
    policy(
      'function-error-rate',
      'A function answers 5xx: `ingestBooking` threw (Pub/Sub redelivers; see `outcome: retry` lines) or a ' +
        'sweep failed (`schema_sweep_failed`). Usually BigQuery or Firestore is unavailable or a permission is ' +
        'missing; the function logs name the operation.',
      [
        above(
          'Share of 5xx responses, by function',
          `${requests} AND metric.label.response_code_class="5xx"`,
          rate('resource.label.service_name'),
          THRESHOLDS.errorRatio,
          '300s',
          {
            denominatorFilter: requests,
            denominatorAggregations: rate('resource.label.service_name'),
          },
        ),
      ],
    ),
    policy(
      'bad-data-volume',
      'Rows were written to `offvia_quarantine.bad_data`: valid events BigQuery refused, or rows whose schema ' +
        'change did not land within the retry budget. Read `error` and `target_dest` there.',
      [
        above(
          'Rows written to the bad-data table in 10 minutes',
          userMetric(names.badData),
          [agg('600s', 'ALIGN_DELTA', 'REDUCE_SUM')],
          THRESHOLDS.badDataRows,
          '0s',
        ),
      ],
    ),
    policy(
      'watermark-lag',
      'The watermark is far behind processing time: windows are not closing, so on-time panes are late. Check ' +
        'that Cloud Scheduler calls `fireWindows` every minute and that it succeeds.',
      [
        above(
          'Watermark lag p99, by pipeline',
          userMetric(names.watermarkLag),
          [agg('300s', 'ALIGN_PERCENTILE_99', 'REDUCE_MAX', ['metric.label.pipeline'])],
          THRESHOLDS.watermarkLagMs,
          '300s',
        ),
      ],
    ),
    policy(
      'dropped-late',
      'Events were dropped from the window aggregates as too late: they are in Silver, gold misses them. ' +
        '`offvia status` and the dashboard list the windows and the reason (`EXPIRED_WINDOW`: the allowed ' +
        'lateness had passed; `CLOSED_WINDOW`: the trigger had finished); the log lines ' +
        '(`outcome: dropped_late`) name each event, its event time and the watermark. A burst after an outage ' +
        'means the watermark moved on without the delayed events: restate the windows from Silver ' +
        '(`offvia gold restate`). A steady trickle means producers send later than the allowed lateness.',
      [
        above(
          'Events dropped as late in 10 minutes, by pipeline and reason',
          userMetric(names.droppedLate),
          [
            agg('600s', 'ALIGN_DELTA', 'REDUCE_SUM', [
              'metric.label.pipeline',
              'metric.label.drop_reason',
            ]),
          ],
          THRESHOLDS.droppedLateEvents,
          '0s',
        ),
      ],
    ),
  ];
  if (t.fireWindowsService !== undefined) {
    policies.push(
      policy(
        'fire-windows-absent',
        'No `fireWindows` run completed for 10 minutes: the watermark does not move and windows do not close, ' +
          'and the watermark-lag alert cannot see it (the lag is logged by completed runs). Check the Cloud ' +
          'Scheduler job (paused? failing? see the scheduler-job-errors alert), then `fireWindows` logs ' +
          '(`fire_windows_failed`, `fire_windows_busy`: a lease held by a stuck run).',
        [
          {
            displayName: 'No completed fireWindows run',
            conditionAbsent: {
              filter: userMetric(names.fireWindowsRuns),
              aggregations: [agg('300s', 'ALIGN_DELTA', 'REDUCE_SUM', ['metric.label.pipeline'])],
              duration: `${THRESHOLDS.fireWindowsAbsentSeconds}s`,
              trigger: { count: 1 },
            },
          },
        ],
      ),
    );
  }
  if (t.schedulerJobs.length > 0) {
    policies.push(
      policy(
        'scheduler-job-errors',
        'A Cloud Scheduler job could not call its function: 401/403 (OIDC token refused: the scheduler service ' +
          'account lost `run.invoker`, or the audience/URL changed), 5xx or a deadline. Read ' +
          '`gcloud logging read \'resource.type="cloud_scheduler_job" AND severity>=ERROR\'`; ' +
          'a paused job logs nothing (`gcloud scheduler jobs describe` shows `state: PAUSED`; the ' +
          'fire-windows-absent alert catches it for fireWindows).',
        [
          above(
            'Failed Cloud Scheduler attempts in 10 minutes, by job',
            userMetric(names.schedulerErrors, 'cloud_scheduler_job'),
            [agg('600s', 'ALIGN_DELTA', 'REDUCE_SUM', ['metric.label.job_id'])],
            THRESHOLDS.schedulerErrors,
            '0s',
          ),
        ],
      ),
    );
  }
  return policies;
}
