import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import * as path from 'node:path';

/** Every path under `dir` with its content hash and mtime: a "nothing written" witness. */
export async function snapshotTree(dir: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  async function walk(d: string): Promise<void> {
    let entries;
    try {
      entries = await fs.readdir(d, { withFileTypes: true });
    } catch {
      return;
    }
    for (const e of entries) {
      const p = path.join(d, e.name);
      const st = await fs.lstat(p);
      if (e.isDirectory()) {
        out[path.relative(dir, p) + '/'] = 'dir';
        await walk(p);
      } else {
        const hash = createHash('sha256')
          .update(await fs.readFile(p))
          .digest('hex');
        out[path.relative(dir, p)] = `${hash} ${st.mtimeMs}`;
      }
    }
  }
  await walk(dir);
  return out;
}
