// A TCP gate in front of an emulator, so the stack can take the emulator down atomically: on SIGUSR1 it drops every
// connection and refuses new ones; on SIGUSR2 it accepts again. The reliability harness's Firestore outage uses it,
// so no commit is acknowledged between the emulator's export and its stop.
// Usage: node --import tsx deploy/local/tcp-gate.ts LISTEN_PORT BACKEND_PORT (both on 127.0.0.1).
import { writeFile } from 'node:fs/promises';
import net from 'node:net';

const [listenPort, backendPort] = process.argv.slice(2).map(Number);
if (!Number.isInteger(listenPort) || !Number.isInteger(backendPort)) {
  console.error('usage: tcp-gate.ts LISTEN_PORT BACKEND_PORT');
  process.exit(2);
}

const open = new Set<net.Socket>();
let server: net.Server | undefined;

function log(message: string): void {
  console.log(JSON.stringify({ component: 'tcp-gate', listenPort, backendPort, message }));
}

/** Accepts connections and pipes each to a new connection to the backend. */
function listen(): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.createServer((client) => {
      const backend = net.connect(backendPort ?? 0, '127.0.0.1');
      open.add(client);
      open.add(backend);
      const close = (): void => {
        client.destroy();
        backend.destroy();
        open.delete(client);
        open.delete(backend);
      };
      client.on('error', close).on('close', close);
      backend.on('error', close).on('close', close);
      client.pipe(backend);
      backend.pipe(client);
    });
    s.once('error', reject);
    s.listen(listenPort, '127.0.0.1', () => {
      server = s;
      resolve();
    });
  });
}

/** Refuses new connections and destroys every open one, both sides, at once. */
function cut(): void {
  server?.close();
  server = undefined;
  const n = open.size / 2;
  for (const socket of open) socket.destroy();
  open.clear();
  log(`cut: ${n} connections dropped, refusing new ones`);
}

// While closed the gate has no server or socket to keep the event loop alive; it must still wait for SIGUSR2.
setInterval(() => undefined, 60_000);

process.on('SIGUSR1', cut);
process.on('SIGUSR2', () => {
  if (server) return;
  listen().then(
    () => log('open again'),
    (error: unknown) => {
      log(`cannot listen again: ${String(error)}`);
      process.exit(1);
    },
  );
});
process.on('SIGTERM', () => {
  cut();
  process.exit(0);
});

listen().then(
  async () => {
    log('listening');
    const readyFile = process.env.OFFVIA_GATE_READY_FILE;
    if (readyFile) await writeFile(readyFile, `${process.pid}\n`);
  },
  (error: unknown) => {
    log(`cannot listen: ${String(error)}`);
    process.exit(1);
  },
);
