// Runs a command beside an S3 API server on loopback (s3rver): a free port
// on 127.0.0.1, a fresh data directory, one bucket. The command finds it in
// its environment:
//   DSTREAM_TEST_S3_ENDPOINT  http://127.0.0.1:PORT
//   DSTREAM_TEST_S3_BUCKET    the bucket (--bucket NAME, default dstream-test)
//   AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY   S3RVER, s3rver's own pair
//   DSTREAM_TEST_S3_DIRECTORY s3rver's data directory (its own file layout)
//   DSTREAM_TEST_S3_CONTROL_PID  this process: SIGUSR1 stops s3rver (an
//                             outage: connections cut, the port refuses),
//                             SIGUSR2 starts it again on the same port and
//                             directory; a test polls the port to see either
// Exits with the command's status; the server and its directory go either way.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import S3rver from 's3rver';

const usage = 'usage: with_s3rver.sh [--bucket NAME] COMMAND [ARG...]';
let args = process.argv.slice(2);
let bucket = 'dstream-test';
if (args[0] === '--bucket') {
  bucket = args[1];
  args = args.slice(2);
}
if (!bucket || args.length === 0) {
  console.error(usage);
  process.exit(2);
}

const directory = mkdtempSync(join(tmpdir(), 'dstream-s3rver-'));
const s3rverOn = (port) => new S3rver({
  address: '127.0.0.1',
  port,
  silent: true,
  directory,
  configureBuckets: [{ name: bucket, configs: [] }],
});
let server = s3rverOn(0);
let running = true;

// Outages on cue, one at a time: each signal waits for the one before.
let control = Promise.resolve();
async function stopForOutage() {
  if (!running) return;
  running = false;
  server.httpServer.closeAllConnections();
  await server.close();
}
async function startAfterOutage(port) {
  if (running) return;
  server = s3rverOn(port);
  await server.run();
  running = true;
}

let child = null;
async function finish(code) {
  try {
    if (running) await server.close();
  } finally {
    rmSync(directory, { recursive: true, force: true });
    process.exit(code);
  }
}
for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => (child ? child.kill(signal) : finish(128 + 2)));
}

try {
  const { port } = await server.run();
  process.on('SIGUSR1', () => { control = control.then(stopForOutage); });
  process.on('SIGUSR2', () => {
    control = control.then(() => startAfterOutage(port)).catch((e) => {
      console.error(`with_s3rver: s3rver did not start again on port ${port}: ${e.message}`);
    });
  });
  child = spawn(args[0], args.slice(1), {
    stdio: 'inherit',
    env: {
      ...process.env,
      DSTREAM_TEST_S3_ENDPOINT: `http://127.0.0.1:${port}`,
      DSTREAM_TEST_S3_BUCKET: bucket,
      DSTREAM_TEST_S3_DIRECTORY: directory,
      DSTREAM_TEST_S3_CONTROL_PID: String(process.pid),
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
    },
  });
  child.on('error', (e) => {
    console.error(`with_s3rver: cannot run ${args[0]}: ${e.message}`);
    finish(127);
  });
  child.on('exit', (code, signal) => finish(code ?? 128 + (signal === 'SIGKILL' ? 9 : 15)));
} catch (e) {
  console.error(`with_s3rver: s3rver did not start: ${e.message}`);
  await finish(1);
}
