// Entry points for Cloud Functions gen2: every registered pipeline's functions, from its definition.
import * as functions from '@google-cloud/functions-framework';
import { PIPELINES } from '../shared/pipelines';
import { registerPipelineFunctions } from '../shared/pipeline/runtime/entry-points';

/**
 * Every pipeline of the registry gets its functions from its definition (shared/pipeline/runtime/entry-points.ts):
 * booking's `ingestBooking`, `schemaSweep` and `fireWindows`, telemetry's `ingestTelemetry` and
 * `fireTelemetryWindows`. The dependencies of the function `FUNCTION_TARGET` names are built at cold start, from the
 * definition as `configure(process.env)` makes it, so a bad variable fails the instance's start.
 */
registerPipelineFunctions(functions, PIPELINES, process.env);
