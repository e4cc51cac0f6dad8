/** fast-check generators of hostile strings, shared by the hostile-input tests. */
import fc from 'fast-check';

/** Pieces that make strings look like paths, ids, escapes or terminal tricks. */
const PIECES = [
  '/',
  '\\',
  '..',
  '.',
  '\0',
  '%2e',
  '%2f',
  '~',
  'C:',
  ' ',
  '\t',
  '\n',
  '\r',
  '\u202e',
  '\u2028',
  '\ud800',
  'é',
  'Ｗ',
  '٣',
  '2026',
  '-W',
  '-W32',
  '-W53',
  '-0',
  '-1',
  '-01',
  '-999999',
  '-1000000',
  'episodes',
  'index',
  'weeks',
  'state.json',
  '.json',
  '*',
  '$(id)',
  '`id`',
  '--',
  '-',
  '--help',
  '--data-dir',
];

/** Concatenations of path/id pieces: `../2026-W32-1`, `2026-W32-0/..`, `%2e%2e/index` and worse. */
export const pathLike = fc.array(fc.constantFrom(...PIECES), { maxLength: 16 }).map((parts) => parts.join(''));

/** A valid-looking id with one character inserted, replaced or removed. */
export function nearValid(valid: string[]): fc.Arbitrary<string> {
  return fc
    .tuple(fc.constantFrom(...valid), fc.nat(), fc.string({ unit: 'binary', minLength: 0, maxLength: 3 }), fc.nat(2))
    .map(([v, at, insert, drop]) => {
      const i = at % (v.length + 1);
      return v.slice(0, i) + insert + v.slice(i + drop);
    });
}

/** Anything a user, a file or a vendor could hand us as a string, including lone surrogates and NUL. */
export const hostileString = fc.oneof(
  { weight: 3, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 3, arbitrary: pathLike },
  { weight: 3, arbitrary: nearValid(['2026-W32', '2026-W32-1', '2020-W53-0', '0001-W01-0', '9999-W52-999999']) },
  { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 200, maxLength: 5000 }) },
);
