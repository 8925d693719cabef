// The dashboard's HTTP server (fastify): the page, its script and style, Chart.js from node_modules (no CDN: it works
// offline), and the JSON endpoints the page polls.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import { repositoryRoot, type OpsContext } from '../ops/context';
import { collectDashboard, type DashboardData } from './data';
import { PIPELINES } from '../pipelines';
import { choosePipeline, DEFAULT_PIPELINE } from '../ops/pipeline-choice';
import {
  collectPipelineDashboard,
  pipelineList,
  type PipelineDashboardData,
} from './pipeline-data';

/** The page's own files, in the source tree (the compiled build has no copy of them). */
const PUBLIC_DIR = path.join(repositoryRoot(), 'shared', 'dashboard', 'public');

/** Chart.js's UMD bundle: its package exports no path to it, so it is found beside the resolved entry. */
function chartJsBundle(): string {
  return path.join(path.dirname(require.resolve('chart.js')), 'chart.umd.min.js');
}

/**
 * Options of `startDashboard`: port (0 picks a free one), interface, the look-back of every number and the page's
 * refresh (ms), the clock (epoch ms), and what to call with each failed collection.
 */
export interface DashboardServerOptions {
  port: number;
  host: string;
  lookBackMs: number;
  refreshMs: number;
  now?: () => number;
  onError?: (err: unknown) => void;
}

/** A running dashboard: its page's URL; `close` also waits for the collections in flight. */
export interface RunningDashboard {
  readonly url: string;
  readonly server: FastifyInstance;
  close(): Promise<void>;
}

/**
 * Builds the fastify app (not listening): `GET /` the page, `GET /api/dashboard` booking's `DashboardData` as JSON
 * (503 with `{error}` when a backend fails), `GET /api/pipelines` the registered pipelines (the page's selector),
 * `GET /api/pipeline/:name` another pipeline's `PipelineDashboardData` (404 for a name not registered, 503 when a
 * backend fails), `GET /assets/*` the page's script, style and Chart.js.
 */
export function buildDashboardApp(
  ctx: OpsContext,
  options: DashboardServerOptions,
): FastifyInstance {
  const now = options.now ?? Date.now;
  const app = Fastify({ logger: false });
  // Read once at start: a missing file fails the start, not the first visitor.
  const js = 'text/javascript; charset=utf-8';
  const assets: Record<string, { body: Buffer; type: string }> = {
    'dashboard.js': { body: readFileSync(path.join(PUBLIC_DIR, 'dashboard.js')), type: js },
    'dashboard.css': {
      body: readFileSync(path.join(PUBLIC_DIR, 'dashboard.css')),
      type: 'text/css; charset=utf-8',
    },
    'chart.umd.min.js': { body: readFileSync(chartJsBundle()), type: js },
  };
  const page = readFileSync(path.join(PUBLIC_DIR, 'index.html'));

  app.get('/', async (_req, reply) => reply.type('text/html; charset=utf-8').send(page));
  // Browsers ask for it unprompted; an empty answer keeps a 404 out of the page's console.
  app.get('/favicon.ico', async (_req, reply) => reply.code(204).send());
  app.get<{ Params: { name: string } }>('/assets/:name', async (req, reply) => {
    const asset = assets[req.params.name];
    if (!asset) return reply.code(404).send({ error: `no asset ${req.params.name}` });
    return reply.type(asset.type).header('cache-control', 'no-cache').send(asset.body);
  });
  // Collections still running: close() waits for them, so the caller can then close the clients they use.
  const inFlight = new Set<Promise<DashboardData | PipelineDashboardData>>();
  app.addHook('onClose', async () => {
    await Promise.allSettled([...inFlight]);
  });
  /**
   * Sends the data `collect` gathers over the look-back ending now, or 503 with its one-line error (the page shows
   * it and keeps polling).
   */
  const answer = async (
    reply: FastifyReply,
    collect: (
      sinceMs: number,
      nowMs: number,
      options: { refreshMs: number },
    ) => Promise<DashboardData | PipelineDashboardData>,
  ): Promise<FastifyReply> => {
    const nowMs = now();
    const collecting = collect(nowMs - options.lookBackMs, nowMs, { refreshMs: options.refreshMs });
    inFlight.add(collecting);
    try {
      return reply.header('cache-control', 'no-store').send(await collecting);
    } catch (err) {
      options.onError?.(err);
      const message = err instanceof Error ? err.message.split('\n')[0] : String(err);
      return reply.code(503).send({ error: message, refreshMs: options.refreshMs });
    } finally {
      inFlight.delete(collecting);
    }
  };
  app.get('/api/dashboard', async (_req, reply) =>
    answer(reply, (...look) => collectDashboard(ctx, choosePipeline(DEFAULT_PIPELINE), ...look)),
  );
  app.get('/api/pipelines', async (_req, reply) =>
    reply.header('cache-control', 'no-store').send(pipelineList()),
  );
  app.get<{ Params: { name: string } }>('/api/pipeline/:name', async (req, reply) => {
    const pipeline = PIPELINES.find((p) => p.name === req.params.name);
    if (pipeline === undefined || pipeline.name === DEFAULT_PIPELINE) {
      // Booking's numbers are /api/dashboard; anything else is not a registered pipeline.
      return reply.code(404).send({
        error: `no pipeline ${JSON.stringify(req.params.name)} here (registered: ${PIPELINES.map((p) => p.name).join(', ')}; booking is /api/dashboard)`,
        refreshMs: options.refreshMs,
      });
    }
    return answer(reply, (...look) => collectPipelineDashboard(ctx, pipeline, ...look));
  });
  return app;
}

/**
 * Starts the dashboard on `options.host:options.port`.
 * @throws Error when the port cannot be bound (in use, no permission).
 */
export async function startDashboard(
  ctx: OpsContext,
  options: DashboardServerOptions,
): Promise<RunningDashboard> {
  const app = buildDashboardApp(ctx, options);
  await app.listen({ port: options.port, host: options.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address !== null ? address.port : options.port;
  return {
    url: `http://${options.host}:${port}/`,
    server: app,
    close: () => app.close(),
  };
}
