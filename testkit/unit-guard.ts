/**
 * Loaded (`mocha --require`) by scripts/run-tests.mjs for the files of test/unit alone: the unit tier opens no
 * socket and starts no process, so it runs anywhere, on every Node. A file that does is an integration test; this
 * makes that a failure with the file's name instead of a convention.
 */
// The modules themselves, not an import's copy of their exports: the guard replaces their functions for every caller.
// eslint-disable-next-line @typescript-eslint/no-require-imports
import childProcess = require('node:child_process');
// eslint-disable-next-line @typescript-eslint/no-require-imports
import net = require('node:net');

function refuse(what: string): () => never {
  return () => {
    throw new Error(`the unit tier starts no server and no process (${what}): move this file to test/integration`);
  };
}

net.Server.prototype.listen = refuse('net.Server.listen');
net.Socket.prototype.connect = refuse('net.Socket.connect');
const cp = childProcess as unknown as Record<string, unknown>;
for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork']) {
  cp[name] = refuse(`child_process.${name}`);
}
