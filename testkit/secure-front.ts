/**
 * A production-shaped Temporal endpoint: Debian's nginx terminating TLS (a server certificate from a CA made here
 * with openssl), requiring a client certificate from that CA (`ssl_verify_client on`) and `Authorization: Bearer
 * <key>`, and passing gRPC (`grpc_pass`) to a dev server started WITHOUT any --search-attribute. Rejections are
 * gRPC-shaped (UNAUTHENTICATED with a message), as a gRPC gateway answers. Everything listens on 127.0.0.1 on free
 * ports, lives in one temp dir and is stopped by `stop()`.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs/promises';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { DEV_SERVER_EXTRA_ARGS, REPO_ROOT, temporalCliPath } from './temporal';

export const SERVER_NAME = 'temporal.test';
/** A second namespace, created at start, for the TOML-profile run (the first run prepares `default`). */
export const PROFILE_NAMESPACE = 'profiled';

export interface SecureFront {
  /** nginx's TLS listener. */
  address: string;
  /** The one accepted API key (random per run). */
  apiKey: string;
  dir: string;
  files: {
    ca: string;
    otherCa: string;
    clientCert: string;
    clientKey: string;
    rogueCert: string;
    rogueKey: string;
  };
  /** The standard TEMPORAL_* variables a worker or CLI host would set for this front. */
  standardEnv(overrides?: Record<string, string>): Record<string, string>;
  stop(): Promise<void>;
}

function openssl(cwd: string, ...args: string[]): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** A CA, a server certificate for SERVER_NAME, a client certificate; and another CA with its own client. */
async function makeCertificates(dir: string): Promise<SecureFront['files']> {
  const days = ['-days', '2'];
  for (const ca of ['ca', 'other-ca']) {
    openssl(
      dir,
      'req',
      '-x509',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      `${ca}.key`,
      '-out',
      `${ca}.crt`,
      ...days,
      '-subj',
      `/CN=episodes test ${ca}`,
    );
  }
  // v3 extensions: rustls (the worker's Rust core) refuses X.509 v1 certificates, which `x509 -req` makes by default.
  await fs.writeFile(path.join(dir, 'server.ext'), `subjectAltName=DNS:${SERVER_NAME}\nextendedKeyUsage=serverAuth\n`);
  await fs.writeFile(path.join(dir, 'client.ext'), 'basicConstraints=CA:FALSE\nextendedKeyUsage=clientAuth\n');
  const issue = (name: string, ca: string, ext: string) => {
    openssl(
      dir,
      'req',
      '-newkey',
      'rsa:2048',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=${name}`,
    );
    openssl(
      dir,
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      `${ca}.crt`,
      '-CAkey',
      `${ca}.key`,
      '-CAcreateserial',
      '-out',
      `${name}.crt`,
      ...days,
      '-extfile',
      ext,
    );
  };
  issue('server', 'ca', 'server.ext');
  issue('client', 'ca', 'client.ext');
  issue('rogue', 'other-ca', 'client.ext');
  const p = (f: string) => path.join(dir, f);
  return {
    ca: p('ca.crt'),
    otherCa: p('other-ca.crt'),
    clientCert: p('client.crt'),
    clientKey: p('client.key'),
    rogueCert: p('rogue.crt'),
    rogueKey: p('rogue.key'),
  };
}

export async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

async function waitForPort(port: number, child: ChildProcess, what: string, log: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${what} exited (${child.exitCode}): ${await log()}`);
    const open = await new Promise<boolean>((resolve) => {
      const s = net.connect({ host: '127.0.0.1', port }, () => {
        s.destroy();
        resolve(true);
      });
      s.on('error', () => resolve(false));
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`${what} not listening on ${port} after 60 s: ${await log()}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function nginxConfig(dir: string, listen: number, upstream: number, apiKey: string, f: SecureFront['files']): string {
  // 495/496 are nginx's "client certificate invalid / missing" (ssl_verify_client on); each rejection becomes a gRPC
  // status with a message, as a gRPC gateway answers, instead of an HTML page.
  const reject = (name: string, message: string) =>
    `location ${name} { default_type application/grpc; add_header grpc-status 16 always; ` +
    `add_header grpc-message "${message}" always; return 204; }`;
  return `
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/nginx-error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  map_hash_bucket_size 256;
  client_body_temp_path ${dir}/nginx-tmp;
  map $http_authorization $api_key_ok { "Bearer ${apiKey}" 1; default 0; }
  server {
    listen 127.0.0.1:${listen} ssl http2;
    ssl_certificate ${dir}/server.crt;
    ssl_certificate_key ${dir}/server.key;
    ssl_client_certificate ${f.ca};
    ssl_verify_client on;
    error_page 495 = @bad_client_cert;
    error_page 496 = @no_client_cert;
    error_page 418 = @bad_api_key;
    ${reject('@bad_client_cert', 'client certificate not trusted')}
    ${reject('@no_client_cert', 'client certificate required')}
    ${reject('@bad_api_key', 'invalid API key')}
    location / {
      if ($api_key_ok = 0) { return 418; }
      grpc_pass grpc://127.0.0.1:${upstream};
      grpc_read_timeout 120s;
    }
  }
}
`;
}

export async function startSecureFront(): Promise<SecureFront> {
  const nginx = execFileSync('bash', [path.join(REPO_ROOT, 'scripts', 'nginx-test-front.sh'), 'path'], {
    encoding: 'utf8',
  }).trim();
  // /tmp, traversable: as root, nginx's worker runs as nobody and must reach its temp path.
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'episodes-front-'));
  await fs.chmod(dir, 0o755);
  const children: ChildProcess[] = [];
  const stop = async () => {
    // SIGTERM: nginx's master then stops its worker (a SIGKILLed master would leave the worker serving).
    for (const c of children) {
      if (c.exitCode !== null || c.signalCode !== null) continue;
      const exited = new Promise((resolve) => c.once('exit', resolve));
      c.kill('SIGTERM');
      const timer = setTimeout(() => c.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    }
    await fs.rm(dir, { recursive: true, force: true });
  };
  try {
    const files = await makeCertificates(dir);
    const apiKey = `tk-${randomBytes(18).toString('hex')}-SECRET`;
    const [grpcPort, httpPort, metricsPort, frontPort] = [
      await freePort(),
      await freePort(),
      await freePort(),
      await freePort(),
    ];
    const devLog = path.join(dir, 'dev-server.log');
    const devOut = await fs.open(devLog, 'w');
    const dev = spawn(
      temporalCliPath(),
      [
        'server',
        'start-dev',
        '--headless',
        '--ip',
        '127.0.0.1',
        '--port',
        String(grpcPort),
        '--http-port',
        String(httpPort),
        '--metrics-port',
        String(metricsPort),
        '--db-filename',
        path.join(dir, 'dev.db'),
        '--namespace',
        PROFILE_NAMESPACE,
        '--log-level',
        'warn',
        ...DEV_SERVER_EXTRA_ARGS,
      ],
      { stdio: ['ignore', devOut.fd, devOut.fd] },
    );
    children.push(dev);
    await devOut.close();
    await waitForPort(grpcPort, dev, 'dev server', () => fs.readFile(devLog, 'utf8'));

    const conf = path.join(dir, 'nginx.conf');
    await fs.writeFile(conf, nginxConfig(dir, frontPort, grpcPort, apiKey, files));
    const nginxLog = path.join(dir, 'nginx-error.log');
    const front = spawn(nginx, ['-p', dir, '-c', conf, '-e', nginxLog, '-g', 'daemon off;'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    children.push(front);
    await waitForPort(frontPort, front, 'nginx', () => fs.readFile(nginxLog, 'utf8').catch(() => ''));

    const address = `127.0.0.1:${frontPort}`;
    return {
      address,
      apiKey,
      dir,
      files,
      standardEnv: (overrides = {}) => ({
        TEMPORAL_ADDRESS: address,
        TEMPORAL_NAMESPACE: 'default',
        TEMPORAL_API_KEY: apiKey,
        TEMPORAL_TLS: 'true',
        TEMPORAL_TLS_CLIENT_CERT_PATH: files.clientCert,
        TEMPORAL_TLS_CLIENT_KEY_PATH: files.clientKey,
        TEMPORAL_TLS_SERVER_CA_CERT_PATH: files.ca,
        TEMPORAL_TLS_SERVER_NAME: SERVER_NAME,
        ...overrides,
      }),
      stop,
    };
  } catch (e) {
    await stop();
    throw e;
  }
}

/** Variables a test process may inherit that would change what the process under test connects to. */
export function withoutTemporalVariables(): Record<string, string> {
  const blank: Record<string, string> = {};
  for (const k of Object.keys(process.env))
    if (k.startsWith('TEMPORAL_') && k !== 'TEMPORAL_CLI_RESOLVED') blank[k] = '';
  return blank;
}
