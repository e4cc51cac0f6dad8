/**
 * Preloaded into a child process with `node --require`: records every fs call that names TRAP_SECRET_FILE (open, read,
 * stat, stream, ... through `fs` or `fs.promises`) and every outgoing socket connection, and writes what it saw to
 * TRAP_REPORT as the process exits. The migration tests use it to prove that a command reads no credentials and opens
 * no connection.
 */
// Default imports: the module objects themselves (a namespace import would be a copy that patching cannot reach).
import fs from 'node:fs';
import net from 'node:net';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const secret = path.resolve(process.env.TRAP_SECRET_FILE ?? '/nonexistent');
const reportFile = process.env.TRAP_REPORT;
const secretCalls: string[] = [];
const connections: string[] = [];

function namesSecret(arg: unknown): boolean {
  try {
    if (arg instanceof URL) return path.resolve(fileURLToPath(arg)) === secret;
    if (typeof arg === 'string' || Buffer.isBuffer(arg)) return path.resolve(arg.toString()) === secret;
  } catch {
    // Not a path.
  }
  return false;
}

type AnyFunction = (...args: unknown[]) => unknown;

function trapPaths(target: object, label: string): void {
  const record = target as Record<string, unknown>;
  for (const name of Object.keys(record)) {
    const original = record[name];
    if (typeof original !== 'function' || !/^[a-z]/.test(name)) continue;
    const trapped = function (this: unknown, ...args: unknown[]): unknown {
      if (args.slice(0, 2).some(namesSecret)) secretCalls.push(`${label}.${name}`);
      return (original as AnyFunction).apply(this, args);
    };
    // Keep properties such as realpath.native and util.promisify.custom.
    for (const key of Reflect.ownKeys(original)) {
      if (key === 'length' || key === 'name' || key === 'prototype') continue;
      const descriptor = Object.getOwnPropertyDescriptor(original, key);
      if (descriptor) Object.defineProperty(trapped, key, descriptor);
    }
    record[name] = trapped;
  }
}

trapPaths(fs, 'fs');
trapPaths(fs.promises, 'fs.promises');

const connect = Object.getOwnPropertyDescriptor(net.Socket.prototype, 'connect')?.value as AnyFunction;
net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
  connections.push(JSON.stringify(args[0]) ?? String(args[0]));
  return connect.apply(this, args);
} as typeof net.Socket.prototype.connect;

process.on('exit', () => {
  if (reportFile) fs.writeFileSync(reportFile, JSON.stringify({ secretCalls, connections }));
});
