// The dashboard's numbers for a pipeline other than booking: its `status` plus, for telemetry, regional rankings.
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { PIPELINES } from '../pipelines';
import { query, type OpsContext } from '../ops/context';
import { cellText } from '../ops/output';
import { DEFAULT_PIPELINE } from '../ops/pipeline-choice';
import { tableName } from '../config/env';
import { collectStatus, type StatusReport } from '../ops/status';

/** One registered pipeline as the page's selector lists it (aggregations in definition order). */
export interface PipelineEntry {
  name: string;
  description: string;
  aggregations: string[];
}

/** What `GET /api/pipelines` returns: every registered pipeline, and the one the page shows first (booking). */
export interface PipelineList {
  pipelines: PipelineEntry[];
  default: string;
}

/** The registry as the selector lists it. */
export function pipelineList(registry: readonly AnyPipelineDefinition[] = PIPELINES): PipelineList {
  return {
    pipelines: registry.map((p) => ({
      name: p.name,
      description: p.description,
      aggregations: p.aggregations.map((a) => a.name),
    })),
    default: DEFAULT_PIPELINE,
  };
}

/** A device in a regional ranking: its highest reading in the window, °C, as exact decimal text. */
export interface RankedDevice {
  rank: number;
  deviceId: string;
  maxTemperatureC: string;
}

/** The newest settled ranking of one region: window bounds (epoch ms UTC) and Beam's pane timing. */
export interface RegionRanking {
  region: string;
  windowStartMs: number;
  windowEndMs: number;
  timing: string;
  devices: RankedDevice[];
}

/**
 * What `GET /api/pipeline/:name` returns: `collectStatus` for the look-back, the refresh interval (ms) and, for
 * telemetry, the newest settled ranking of each region in the look-back, by name (at most `maxRegions`).
 */
export interface PipelineDashboardData {
  status: StatusReport;
  refreshMs: number;
  regions: RegionRanking[];
}

/** The view of settled regional rankings (telemetry's reader view, sql/pipelines/telemetry/070). */
const REGION_SETTLED_VIEW = 'region_top_settled';

/**
 * Collects the page's numbers for `pipeline` (not booking: its page is `collectDashboard`).
 * @throws OpsError when a backend fails (the server answers 503 with the line)
 */
export async function collectPipelineDashboard(
  ctx: OpsContext,
  pipeline: AnyPipelineDefinition,
  sinceMs: number,
  nowMs: number,
  options: { refreshMs: number; maxRegions?: number },
): Promise<PipelineDashboardData> {
  const settled = pipeline.tables.views.find((v) => v.tableId === REGION_SETTLED_VIEW);
  const [status, regions] = await Promise.all([
    collectStatus(ctx, pipeline, sinceMs, nowMs),
    settled === undefined
      ? Promise.resolve([])
      : regionRankings(ctx, tableName(settled, ctx.projectId), sinceMs, options.maxRegions ?? 20),
  ]);
  return { status, refreshMs: options.refreshMs, regions };
}

/** The newest settled ranking of each region whose window starts at or after `sinceMs`. */
async function regionRankings(
  ctx: OpsContext,
  view: string,
  sinceMs: number,
  maxRegions: number,
): Promise<RegionRanking[]> {
  const rows = await query<{
    region: string;
    window_start: unknown;
    window_end: unknown;
    pane_timing: string;
    top_devices: { rank: unknown; device_id: unknown; max_temperature_c: unknown }[] | null;
  }>(
    ctx,
    `SELECT region, window_start, window_end, pane_timing, top_devices FROM (
       SELECT *, ROW_NUMBER() OVER (PARTITION BY region ORDER BY window_start DESC) AS newest
       FROM \`${view}\` WHERE window_start >= TIMESTAMP_MILLIS(@since_ms)
     ) WHERE newest = 1 ORDER BY region LIMIT ${maxRegions}`,
    { since_ms: sinceMs },
    { since_ms: 'INT64' },
  );
  return rows.map((r) => ({
    region: r.region,
    windowStartMs: Date.parse(cellText(r.window_start)),
    windowEndMs: Date.parse(cellText(r.window_end)),
    timing: r.pane_timing,
    devices: (r.top_devices ?? []).map((d) => ({
      rank: Number(d.rank),
      deviceId: String(d.device_id),
      maxTemperatureC: cellText(d.max_temperature_c),
    })),
  }));
}
