/** Scratch directories for tests: private (mkdtemp, 0700) under the system temp dir, removed when their file ends. */
import { mkdtempSync, promises as fs } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { atEndOfEachFile } from './end-of-file';

const made: string[] = [];

atEndOfEachFile(async () => {
  for (const dir of made.splice(0)) await fs.rm(dir, { recursive: true, force: true });
});

/** A new directory `<tmp>/<prefix>XXXXXX`, removed at the end of the test file that made it. */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  made.push(dir);
  return dir;
}
