/**
 * The file store's published price list: `<data dir>/vendor-prices.json` (0600, written atomically and durably; the
 * last worker to publish wins). Read without following a symlink and at most MAX_PUBLISHED_PRICES_BYTES.
 */
import { constants, promises as fs } from 'node:fs';
import * as path from 'node:path';
import { PipelineError, ErrorType } from '../domain/errors';
import { ensureDirDurable, parseJsonText, storageError, writeJsonDurable } from '../files/durable-fs';
import {
  MAX_PUBLISHED_PRICES_BYTES,
  publishedPricesSchema,
  type PublishedPrices,
  type PublishedPricesStore,
} from './published-prices';

export class FilePublishedPrices implements PublishedPricesStore {
  readonly description: string;
  readonly file: string;

  constructor(readonly dataDir: string) {
    this.file = path.join(dataDir, 'vendor-prices.json');
    this.description = `published vendor prices in ${this.file}`;
  }

  async publish(list: PublishedPrices): Promise<void> {
    await ensureDirDurable(this.dataDir);
    await writeJsonDurable(this.file, publishedPricesSchema.parse(list));
  }

  async read(): Promise<PublishedPrices | undefined> {
    let handle: fs.FileHandle;
    try {
      // O_NONBLOCK: a FIFO planted here cannot hold the reader.
      handle = await fs.open(this.file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') return undefined;
      if (code === 'ELOOP') throw this.corrupt('a symlink');
      throw storageError(`cannot read ${this.file}`, e);
    }
    try {
      const stat = await handle.stat();
      if (!stat.isFile()) throw this.corrupt('not a regular file');
      const bytes = Buffer.alloc(MAX_PUBLISHED_PRICES_BYTES + 1);
      const { bytesRead } = await handle.read(bytes, 0, bytes.length, 0);
      if (bytesRead > MAX_PUBLISHED_PRICES_BYTES) throw this.corrupt(`over ${MAX_PUBLISHED_PRICES_BYTES} bytes`);
      return parseJsonText(this.file, bytes.subarray(0, bytesRead).toString('utf8'), publishedPricesSchema);
    } finally {
      await handle.close();
    }
  }

  private corrupt(what: string): PipelineError {
    return new PipelineError(ErrorType.StoreCorrupt, `${this.file}: ${what}`, { file: this.file });
  }
}
