// The dashboard's numbers for a registered pipeline other than booking: `offvia --pipeline NAME status`
// (collectStatus, the one source of its counts) plus, for telemetry, the settled regional rankings.
import type { AnyPipelineDefinition } from '../pipeline/definition';
import { PIPELINES } from '../pipelines';
import { query, type OpsContext } from '../ops/context';
import { cellText } from '../ops/output';
import { DEFAULT_PIPELINE, qualifiedTable } from '../ops/pipeline-choice';
import { collectStatus, type StatusReport } from '../ops/status';

/** One registered pipeline as the page's selector lists it. */
export interface PipelineEntry {
  name: string;
  description: string;
  /** Aggregation names, in definition order. */
  aggregations: string[];
}

/** What `GET /api/pipelines` returns: every registered pipeline, and the one the page shows first. */
export interface PipelineList {
  pipelines: PipelineEntry[];
  /** `booking`: the page's default view is booking's, as before the registry. */
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

/** A device in a regional ranking. */
export interface RankedDevice {
  rank: number;
  deviceId: string;
  /** Highest reading in the window, °C, exact decimal text. */
  maxTemperatureC: string;
}

/** The latest settled ranking of one region (the newest window at least 2 min behind the watermark). */
export interface RegionRanking {
  region: string;
  /** Window bounds, epoch ms UTC. */
  windowStartMs: number;
  windowEndMs: number;
  /** Beam's pane timing of the ranking's pane. */
  timing: string;
  devices: RankedDevice[];
}

/** What `GET /api/pipeline/:name` returns. */
export interface PipelineDashboardData {
  /** `collectStatus` for the look-back: every count the page prints comes from here. */
  status: StatusReport;
  /** How often the page asks again, ms. */
  refreshMs: number;
  /**
   * Telemetry: the newest settled ranking per region with a window in the look-back, regions in name order (at
   * most `maxRegions`); empty for other pipelines.
   */
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
      : regionRankings(
          ctx,
          qualifiedTable(settled, ctx.projectId),
          sinceMs,
          options.maxRegions ?? 20,
        ),
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
