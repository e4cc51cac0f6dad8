import type * as http from 'node:http';
import type { AddressInfo } from 'node:net';

/** Listens on 127.0.0.1 only (0: any free port); resolves with the port. Every simulator binds so. */
export function listenLocal(server: http.Server, port: number): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve((server.address() as AddressInfo).port);
    });
  });
}
