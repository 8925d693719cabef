// Cost per million events from measured call counts and list prices, and a minimal always-on Dataflow job beside it.

/**
 * List prices in USD (us-central1 / US regional where a region matters), checked on 2026-11-29 against stored copies
 * of the services' pricing pages (no live network here): Cloud Run pricing (request-based billing, tier 1); BigQuery
 * pricing ("Streaming inserts (tabledata.insertAll)": $0.01 per 200 MB, rows at least 1 KB; Storage Write API $0.025
 * per GiB after 2 TiB a month); Pub/Sub pricing (throughput $40 per TiB, at least 1000 bytes per publish, push or pull
 * request; BigQuery subscriptions $50 per TiB, no free tier); Firestore pricing (Standard edition, US regional:
 * $0.03 / $0.09 / $0.01 per 100,000 document reads / writes / deletes); Dataflow pricing (streaming worker $0.069 per
 * vCPU-hour and $0.003557 per GiB-hour, Streaming Engine legacy data-processed billing $0.018 per GiB; standard
 * persistent disk $0.04 per GB-month). Re-check them before quoting a bill: prices change, and other regions differ.
 */
export const PRICES = {
  asOf: '2026-11-29 (list prices, us-central1 / US regional)',
  source:
    'Google Cloud pricing pages for Cloud Run (functions gen2), BigQuery, Pub/Sub, Firestore (Standard edition), Dataflow',
  /** Cloud Run request-based billing, tier 1: per request, per vCPU-second, per GiB-second. */
  runPerMillionRequests: 0.4,
  runPerVcpuSecond: 0.000024,
  runPerGibSecond: 0.0000025,
  /** BigQuery legacy streaming inserts (insertAll): per 200 MB, each row at least 1 KB. */
  bigQueryStreamingPer200Mb: 0.01,
  /** Firestore Native mode, regional: per 100,000 document reads / writes / deletes. */
  firestoreReadsPer100k: 0.03,
  firestoreWritesPer100k: 0.09,
  firestoreDeletesPer100k: 0.01,
  /** Pub/Sub throughput: per TiB published and per TiB delivered to each subscription, 1 KB minimum per message. */
  pubsubPerTib: 40,
  /** BigQuery subscription (Bronze): per TiB written, instead of the delivery charge. */
  pubsubBigQuerySubscriptionPerTib: 50,
  /** Dataflow streaming worker: per vCPU-hour, per GB-hour of memory, per GB-hour of persistent disk. */
  dataflowStreamingVcpuHour: 0.069,
  dataflowMemoryGbHour: 0.003557,
  dataflowPdGbHour: 0.000054,
  /** Dataflow Streaming Engine, usage-based billing: per GB of data processed. */
  dataflowStreamingEngineGb: 0.018,
  /** BigQuery Storage Write API: per GB (the lab's Silver/quarantine writes; first 2 TB a month free). */
  storageWriteApiGb: 0.025,
} as const;

/** What one event costs in calls, measured by the benchmark. */
export interface PerEventUsage {
  /** Instance time per event at the measured throughput (one instance, 1 vCPU, 512 MiB), seconds. */
  instanceSeconds: number;
  /** Billable BigQuery streaming bytes per event (rows ≥ 1 KB). */
  bigQueryBillableBytes: number;
  firestoreReads: number;
  firestoreWrites: number;
  /** Average Pub/Sub message size, bytes. */
  messageBytes: number;
}

/** One line of the cost table, USD per million events. */
export interface CostLine {
  readonly item: string;
  readonly usdPerMillion: number;
}

const TIB = 1024 ** 4;

/** Cost per million events of this system, by item; the function is sized as deployed (1 vCPU, 512 MiB). */
export function functionsCostPerMillion(u: PerEventUsage): CostLine[] {
  const m = 1_000_000;
  const billedMessage = Math.max(1000, u.messageBytes);
  return [
    { item: 'function invocations', usdPerMillion: PRICES.runPerMillionRequests },
    {
      item: 'function CPU + memory (1 vCPU, 0.5 GiB)',
      usdPerMillion:
        m * u.instanceSeconds * (PRICES.runPerVcpuSecond + 0.5 * PRICES.runPerGibSecond),
    },
    {
      item: 'BigQuery streaming inserts',
      usdPerMillion: ((m * u.bigQueryBillableBytes) / 200e6) * PRICES.bigQueryStreamingPer200Mb,
    },
    {
      item: 'Firestore reads + writes (window state)',
      usdPerMillion:
        ((m * u.firestoreReads) / 1e5) * PRICES.firestoreReadsPer100k +
        ((m * u.firestoreWrites) / 1e5) * PRICES.firestoreWritesPer100k,
    },
    {
      item: 'Pub/Sub publish + push delivery',
      usdPerMillion: ((2 * m * billedMessage) / TIB) * PRICES.pubsubPerTib,
    },
    {
      item: 'Pub/Sub BigQuery subscription (Bronze)',
      usdPerMillion: ((m * billedMessage) / TIB) * PRICES.pubsubBigQuerySubscriptionPerTib,
    },
  ];
}

/**
 * A minimal Dataflow streaming job, one n1-standard-1 worker (1 vCPU, 3.75 GB, 30 GB disk with Streaming Engine)
 * always on, at `eventsPerSecond`: the month's fixed cost spread over its events, plus the per-GB charges
 * (Streaming Engine, Storage Write API) and the same Pub/Sub publish and Bronze costs. USD per million events.
 */
export function dataflowCostPerMillion(eventsPerSecond: number, messageBytes: number): number {
  const hoursPerMonth = 730;
  const fixedPerMonth =
    hoursPerMonth *
    (PRICES.dataflowStreamingVcpuHour +
      3.75 * PRICES.dataflowMemoryGbHour +
      30 * PRICES.dataflowPdGbHour);
  const eventsPerMonth = eventsPerSecond * 3600 * hoursPerMonth;
  const billedMessage = Math.max(1000, messageBytes);
  const perEvent =
    (messageBytes / 1e9) * (PRICES.dataflowStreamingEngineGb + PRICES.storageWriteApiGb) +
    ((2 * billedMessage) / TIB) * PRICES.pubsubPerTib +
    (billedMessage / TIB) * PRICES.pubsubBigQuerySubscriptionPerTib;
  return (fixedPerMonth / eventsPerMonth) * 1e6 + perEvent * 1e6;
}
