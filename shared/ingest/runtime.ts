// Composition root for ingestBooking: builds the real Google clients from configuration, once per instance.
import { BigQuery } from '@google-cloud/bigquery';
import { type IngestConfig, loadIngestConfig } from '../config/ingest-config';
import type { Env } from '../config/env';
import { Logger } from '../logging/logger';
import * as logs from '../logging/logs';
import { BigQueryRowWriter } from '../sinks/bigquery-writer';
import type { IngestDeps } from './ingest-booking';

/**
 * A BigQuery client for the configured project; pointed at the local emulator when BIGQUERY_EMULATOR_HOST is set
 * (then `autoRetry` is off: the emulator's 500s are not transient and would be retried for minutes).
 */
export function bigQueryClient(
  config: Pick<IngestConfig, 'projectId' | 'bigQueryEndpoint'>,
): BigQuery {
  return new BigQuery({
    ...(config.projectId ? { projectId: config.projectId } : {}),
    ...(config.bigQueryEndpoint ? { apiEndpoint: config.bigQueryEndpoint, autoRetry: false } : {}),
  });
}

/**
 * Reads the configuration from `env` and wires the real dependencies.
 * @throws ConfigError for a bad variable (fail fast at cold start).
 */
export function createIngestDeps(env: Env, logger = new Logger('ingestBooking')): IngestDeps {
  const config = loadIngestConfig(env);
  logs.configLoaded(logger, { ...config });
  return { config, logger, writer: new BigQueryRowWriter(bigQueryClient(config)), now: Date.now };
}
