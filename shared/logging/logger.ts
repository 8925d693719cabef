// Structured JSON logging in Cloud Logging's format: one JSON object per line on stdout (stderr for errors).

/** Cloud Logging severities we use (LogSeverity enum names). */
export type Severity = 'DEBUG' | 'INFO' | 'NOTICE' | 'WARNING' | 'ERROR' | 'CRITICAL';

/** Structured fields of a log entry; serialised as top-level JSON keys, which Cloud Logging puts in jsonPayload. */
export type LogFields = Record<string, unknown>;

/** One structured log entry as written: `severity` and `message` are read by Cloud Logging's agent. */
export interface LogEntry extends LogFields {
  severity: Severity;
  message: string;
  /** Cloud Logging's special key for user labels; we label every entry with the component that wrote it. */
  'logging.googleapis.com/labels': Record<string, string>;
  /** Wall-clock time of the entry, RFC 3339 UTC. */
  time: string;
}

/** Where entries go. The default writes JSON lines; tests pass an array-backed sink. */
export type LogSink = (entry: LogEntry) => void;

/** Writes a JSON line to stdout, or stderr for ERROR and above; falls back to a plain line if not serialisable. */
export const stdoutSink: LogSink = (entry) => {
  const line = safeStringify(entry);
  if (entry.severity === 'ERROR' || entry.severity === 'CRITICAL')
    process.stderr.write(line + '\n');
  else process.stdout.write(line + '\n');
};

function safeStringify(entry: LogEntry): string {
  try {
    return JSON.stringify(entry, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
  } catch (err) {
    // A cyclic field must not cost us the log line: keep severity and message, say why the rest is missing.
    return JSON.stringify({
      severity: entry.severity,
      message: entry.message,
      time: entry.time,
      logSerialisationError: String(err),
    });
  }
}

/**
 * A minimal structured logger. `component` becomes the `component` label (e.g. `ingestBooking`), so operators can
 * filter one function's lines; `now` is injected for deterministic tests (epoch ms).
 */
export class Logger {
  constructor(
    readonly component: string,
    private readonly sink: LogSink = stdoutSink,
    private readonly now: () => number = Date.now,
  ) {}

  /** Writes one entry. Never throws: logging must not turn a routed message into a redelivery. */
  write(severity: Severity, message: string, fields: LogFields = {}): void {
    const entry: LogEntry = {
      ...fields,
      severity,
      message,
      time: new Date(this.now()).toISOString(),
      'logging.googleapis.com/labels': { component: this.component },
    };
    try {
      this.sink(entry);
    } catch (err) {
      process.stderr.write(`log sink failed: ${String(err)}; entry: ${message}\n`);
    }
  }
}
