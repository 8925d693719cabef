// Local stand-in for the Bronze BigQuery subscriptions (--write-metadata): pulls every registered pipeline's Bronze
// subscription and streams each message into its Bronze table with the metadata columns, insertId = message id. A
// message is acked only after its row was written; a failed write nacks it, so Pub/Sub redelivers it.
import { writeFile } from 'node:fs/promises';
import { BigQuery, type Table } from '@google-cloud/bigquery';
import { PubSub, type Message, type Subscription } from '@google-cloud/pubsub';
import type { AnyPipelineDefinition } from '../../shared/pipeline/definition';
import { PIPELINES } from '../../shared/pipelines';
import { positiveIntFromEnv, projectIdFromEnv, subscriptionPath } from './resources';

/** One Bronze subscription and the table it writes to. */
export interface BronzeRoute {
  readonly pipeline: string;
  readonly subscription: string;
  readonly datasetId: string;
  readonly tableId: string;
}

/** The Bronze routes of the pipelines that have Bronze (a Bronze table and subscription), in registry order. */
export function bronzeRoutes(pipelines: readonly AnyPipelineDefinition[]): BronzeRoute[] {
  const routes: BronzeRoute[] = [];
  for (const p of pipelines) {
    const subscription = p.pubsub.subscriptions.bronze;
    const table = p.tables.bronze;
    if (subscription === null || table === null) continue;
    routes.push({ pipeline: p.name, subscription, ...table });
  }
  return routes;
}

/** A raw_bookings row exactly as a BigQuery subscription with --write-metadata writes it. */
export interface BronzeRow {
  /** Full subscription path: projects/P/subscriptions/S. */
  subscription_name: string;
  message_id: string;
  /** Publish time in RFC 3339 with microseconds (BigQuery TIMESTAMP precision). */
  publish_time: string;
  /** The message data as text (the column is STRING). */
  data: string;
  /** JSON text of the attributes map. */
  attributes: string;
}

/** The Bronze row for a message; pure, so the column mapping is testable without Pub/Sub. */
export function bronzeRowFor(
  subscriptionName: string,
  message: Pick<Message, 'id' | 'data' | 'attributes' | 'publishTime'>,
): BronzeRow {
  return {
    subscription_name: subscriptionName,
    message_id: message.id,
    // PreciseDate prints nanoseconds; BigQuery keeps microseconds.
    publish_time: message.publishTime.toISOString().replace(/(\.\d{6})\d*Z$/, '$1Z'),
    data: message.data.toString('utf8'),
    attributes: JSON.stringify(message.attributes ?? {}),
  };
}

function log(severity: 'INFO' | 'WARNING' | 'ERROR', message: string, context: object = {}): void {
  const line = JSON.stringify({ severity, component: 'bronze-standin', message, ...context });
  if (severity === 'INFO') console.log(line);
  else console.error(line);
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/**
 * Collects messages for a short time and writes them in one insertAll call (about 20 ms a call on the emulator,
 * so one call per message would cap throughput), then acks or nacks the whole batch.
 */
class BronzeWriter {
  private pending: Message[] = [];
  private timer: NodeJS.Timeout | undefined;
  private readonly inFlight = new Set<Promise<void>>();

  constructor(
    private readonly table: Table,
    private readonly subscriptionName: string,
    private readonly maxBatchRows: number,
    private readonly maxBatchDelayMs: number,
    private readonly nackDelayMs: number,
  ) {}

  add(message: Message): void {
    this.pending.push(message);
    if (this.pending.length >= this.maxBatchRows) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.maxBatchDelayMs);
  }

  /** Writes what is pending and waits for every write in flight. */
  async drain(): Promise<void> {
    this.flush();
    await Promise.all(this.inFlight);
  }

  private flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.pending;
    this.pending = [];
    if (batch.length === 0) return;
    const write = this.write(batch).finally(() => this.inFlight.delete(write));
    this.inFlight.add(write);
  }

  private async write(batch: Message[]): Promise<void> {
    const rows = batch.map((message) => ({
      insertId: message.id,
      json: bronzeRowFor(this.subscriptionName, message),
    }));
    try {
      await this.table.insert(rows, { raw: true });
    } catch (error) {
      // insertAll without skipInvalidRows writes no row of a call that has an invalid one, so the whole batch is
      // redelivered; the per-row errors (PartialFailureError.errors) go to the log for the operator.
      const rowErrors = (error as { errors?: unknown }).errors;
      log('ERROR', 'Bronze insert failed; messages nacked for redelivery', {
        error: errorText(error),
        rowErrors,
        messageIds: batch.map((message) => message.id),
        deliveryAttempts: batch.map((message) => message.deliveryAttempt),
      });
      // A pull subscription redelivers a nack at once; waiting a little avoids a hot retry loop while, say, the
      // table is missing (a BigQuery subscription backs off too).
      setTimeout(() => {
        for (const message of batch) message.nack();
      }, this.nackDelayMs);
      return;
    }
    for (const message of batch) message.ack();
  }
}

/** A route's running parts: the subscription and the writer that batches its rows. */
interface RunningRoute {
  readonly route: BronzeRoute;
  readonly subscription: Subscription;
  readonly writer: BronzeWriter;
}

async function main(): Promise<void> {
  const projectId = projectIdFromEnv();
  const bigquery = new BigQuery({ projectId, autoRetry: false });
  const pubsub = new PubSub({ projectId });
  const running: RunningRoute[] = [];

  for (const route of bronzeRoutes(PIPELINES)) {
    const subscriptionName = subscriptionPath(projectId, route.subscription);
    const table = bigquery.dataset(route.datasetId).table(route.tableId);
    const subscription = pubsub.subscription(route.subscription, {
      flowControl: { maxMessages: 1000, allowExcessMessages: false },
    });
    // Fail at start, with a clear message, rather than nack every message later.
    const [tableExists] = await table.exists();
    if (!tableExists)
      throw new Error(
        `table ${route.datasetId}.${route.tableId} does not exist (apply the ${route.pipeline} DDL first)`,
      );
    const [subscriptionExists] = await subscription.exists();
    if (!subscriptionExists)
      throw new Error(`subscription ${subscriptionName} does not exist (run setup-pubsub first)`);
    running.push({
      route,
      subscription,
      writer: new BronzeWriter(
        table,
        subscriptionName,
        positiveIntFromEnv('OFFVIA_BRONZE_MAX_BATCH_ROWS', 500),
        positiveIntFromEnv('OFFVIA_BRONZE_MAX_BATCH_DELAY_MS', 50),
        positiveIntFromEnv('OFFVIA_BRONZE_NACK_DELAY_MS', 1000),
      ),
    });
  }

  for (const { route, subscription, writer } of running) {
    subscription.on('message', (message: Message) => writer.add(message));
    subscription.on('error', (error: unknown) => {
      log('ERROR', 'Bronze subscription stream failed; stopping', {
        subscription: route.subscription,
        error: errorText(error),
      });
      process.exit(1);
    });
  }

  let stopping = false;
  const stop = (signal: string): void => {
    if (stopping) return;
    stopping = true;
    log('INFO', `received ${signal}; writing pending rows and closing`);
    for (const { subscription } of running) subscription.removeAllListeners('message');
    Promise.all(
      running.map(({ writer, subscription }) => writer.drain().then(() => subscription.close())),
    )
      .then(() => pubsub.close())
      .then(
        () => process.exit(0),
        (error: unknown) => {
          log('ERROR', 'shutdown failed', { error: errorText(error) });
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));

  for (const { route } of running) {
    log('INFO', 'Bronze stand-in listening', {
      subscription: subscriptionPath(projectId, route.subscription),
      table: `${route.datasetId}.${route.tableId}`,
    });
  }
  const readyFile = process.env.OFFVIA_BRONZE_READY_FILE;
  if (readyFile) await writeFile(readyFile, `${process.pid}\n`);
}

if (require.main === module) {
  main().catch((error: unknown) => {
    log('ERROR', 'Bronze stand-in failed to start', { error: errorText(error) });
    process.exit(1);
  });
}
