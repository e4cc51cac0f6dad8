/**
 * Wall time spent in each fs call (callback, promise and synchronous APIs), for the profile child only. It must be
 * loaded before anything else touches `fs` (graceful-fs, used by proper-lockfile, copies the fs functions when it
 * loads), so it is the child's first import. Recording is off until `traceOn()`. Calls may overlap (an allocation
 * flushes three files at once), so besides each call's own time it keeps the time during which at least one call
 * was under way (`traceBusyMs`): what is left of the wall time is JavaScript and event-loop hops.
 */
import fs from 'node:fs';

const totals = new Map<string, { ms: number; calls: number }>();
let enabled = false;
let active = 0;
let busySince = 0;
let busyMs = 0;

function begin(): number {
  const now = performance.now();
  if (active++ === 0) busySince = now;
  return now;
}

function record(name: string, start: number): void {
  const now = performance.now();
  if (--active === 0) busyMs += now - busySince;
  const t = totals.get(name) ?? { ms: 0, calls: 0 };
  t.ms += now - start;
  t.calls++;
  totals.set(name, t);
}

type Fn = (this: unknown, ...args: unknown[]) => unknown;

function wrapCallbackApi(target: Record<string, unknown>, name: string): void {
  const original = target[name];
  if (typeof original !== 'function') return;
  const orig = original as Fn;
  const wrapped = function (this: unknown, ...args: unknown[]): unknown {
    const callback = args.at(-1);
    if (!enabled || typeof callback !== 'function') return orig.apply(this, args);
    const start = begin();
    args[args.length - 1] = function (this: unknown, ...results: unknown[]) {
      record(`fs.${name}`, start);
      return (callback as Fn).apply(this, results);
    };
    return orig.apply(this, args);
  };
  copyExtras(orig, wrapped);
  target[name] = wrapped;
}

function wrapPromiseApi(target: Record<string, unknown>, name: string, label: string): void {
  const original = target[name];
  if (typeof original !== 'function') return;
  const orig = original as (this: unknown, ...args: unknown[]) => Promise<unknown>;
  target[name] = async function (this: unknown, ...args: unknown[]): Promise<unknown> {
    if (!enabled) return orig.apply(this, args);
    const start = begin();
    try {
      return await orig.apply(this, args);
    } finally {
      record(label, start);
    }
  };
}

function wrapSyncApi(target: Record<string, unknown>, name: string, label: string): void {
  const original = target[name];
  if (typeof original !== 'function') return;
  const orig = original as Fn;
  const wrapped = function (this: unknown, ...args: unknown[]): unknown {
    if (!enabled) return orig.apply(this, args);
    const start = begin();
    try {
      return orig.apply(this, args);
    } finally {
      record(label, start);
    }
  };
  copyExtras(orig, wrapped);
  target[name] = wrapped;
}

/** Keeps fs.realpath.native and the promisify hints that some fs functions carry. */
function copyExtras(from: Fn, to: Fn): void {
  for (const key of Reflect.ownKeys(from)) {
    if (key === 'length' || key === 'name' || key === 'prototype') continue;
    const descriptor = Object.getOwnPropertyDescriptor(from, key);
    if (descriptor) Object.defineProperty(to, key, descriptor);
  }
}

const callbackNames = [
  'open',
  'close',
  'read',
  'write',
  'fsync',
  'fdatasync',
  'rename',
  'mkdir',
  'rmdir',
  'stat',
  'lstat',
  'fstat',
  'utimes',
  'chmod',
  'chown',
  'unlink',
  'realpath',
  'readFile',
  'writeFile',
  'readdir',
];
for (const name of callbackNames) wrapCallbackApi(fs, name);

const syncNames = [
  'openSync',
  'closeSync',
  'readSync',
  'writeSync',
  'fsyncSync',
  'renameSync',
  'mkdirSync',
  'rmdirSync',
  'rmSync',
  'statSync',
  'lstatSync',
  'fstatSync',
  'utimesSync',
  'chmodSync',
  'fchmodSync',
  'unlinkSync',
  'realpathSync',
  'readFileSync',
  'writeFileSync',
  'readdirSync',
];
const syncApi = fs as unknown as Record<string, unknown>;
for (const name of syncNames) wrapSyncApi(syncApi, name, `fs.${name}`);
wrapSyncApi(fs.realpathSync as unknown as Record<string, unknown>, 'native', 'fs.realpathSync.native');

const promiseNames = [
  'open',
  'readFile',
  'writeFile',
  'rename',
  'mkdir',
  'rmdir',
  'rm',
  'stat',
  'lstat',
  'unlink',
  'readdir',
  'utimes',
  'chmod',
  'realpath',
];
const promises = fs.promises as unknown as Record<string, unknown>;
for (const name of promiseNames) wrapPromiseApi(promises, name, `fs.promises.${name}`);

// FileHandle is not exported; its prototype is reachable from any open handle, so patch it on the first open.
let handlePatched = false;
const promiseOpen = promises.open as (...args: unknown[]) => Promise<object>;
promises.open = async function (...args: unknown[]): Promise<object> {
  const handle = await promiseOpen(...args);
  if (!handlePatched) {
    handlePatched = true;
    const proto = Object.getPrototypeOf(handle) as Record<string, unknown>;
    for (const name of ['sync', 'datasync', 'close', 'writeFile', 'readFile', 'write', 'read', 'stat']) {
      wrapPromiseApi(proto, name, `FileHandle.${name}`);
    }
  }
  return handle;
};

export function traceOn(): void {
  enabled = true;
}

export function traceOff(): void {
  enabled = false;
}

export function traceTotals(): Map<string, { ms: number; calls: number }> {
  return new Map([...totals].map(([k, v]) => [k, { ...v }]));
}

/** Time during which at least one traced call was under way. */
export function traceBusyMs(): number {
  return busyMs;
}
