/**
 * What `episodes verify` and the migration pre-flight report: one problem per finding, with a stable code that tests
 * and scripts match on (never the message), and the episode and file it concerns.
 */
export const ProblemCode = {
  // Stored files that cannot be read or do not match their schema.
  StateSchema: 'state-schema',
  StateMissing: 'state-missing',
  HistorySchema: 'history-schema',
  IndexSchema: 'index-schema',
  UnexpectedEntry: 'unexpected-entry',
  // Identity and uniqueness.
  IdMismatch: 'id-mismatch',
  DuplicateSequence: 'duplicate-sequence',
  DuplicateAllocationKey: 'duplicate-allocation-key',
  // File store structure: index/weeks (the commit point) against episodes/<id>/.
  DirectoryNotIndexed: 'directory-not-indexed',
  IndexedWithoutState: 'indexed-without-state',
  IndexStateMismatch: 'index-state-mismatch',
  KeyIndexMissing: 'key-index-missing',
  // Media.
  MediaPathInvalid: 'media-path-invalid',
  MediaMissing: 'media-missing',
  MediaNotRegularFile: 'media-not-regular-file',
  MediaSizeMismatch: 'media-size-mismatch',
  MediaHashMismatch: 'media-hash-mismatch',
  // Money.
  StepKeyMismatch: 'step-key-mismatch',
  LedgerUnknownJob: 'ledger-unknown-job',
  LedgerTotalMismatch: 'ledger-total-mismatch',
  LedgerCurrencyMismatch: 'ledger-currency-mismatch',
  ChargeWithoutRemoteJob: 'charge-without-remote-job',
  // History against live state.
  HistoryMissing: 'history-missing',
  HistoryWithoutEpisode: 'history-without-episode',
  HistoryStateMismatch: 'history-state-mismatch',
  // Migrated episodes against the preserved legacy evidence.
  EvidenceMissing: 'evidence-missing',
  EvidenceMismatch: 'evidence-mismatch',
  // Legacy (week-v1) data not migrated yet, and what stops its migration.
  LegacyUnmigrated: 'legacy-unmigrated',
  LegacyStateInvalid: 'legacy-state-invalid',
  LegacyNotCompleted: 'legacy-not-completed',
  LegacyUnrepresentable: 'legacy-unrepresentable',
  LegacyHistoryInvalid: 'legacy-history-invalid',
  LegacyHistoryMismatch: 'legacy-history-mismatch',
  MigrationTargetTaken: 'migration-target-taken',
  MigrationJournalMismatch: 'migration-journal-mismatch',
  // Command arguments.
  EpisodeNotFound: 'episode-not-found',
  StoreUnreadable: 'store-unreadable',
} as const;
export type ProblemCode = (typeof ProblemCode)[keyof typeof ProblemCode];

export interface Problem {
  code: ProblemCode;
  episode_id?: string;
  /** Absolute path of the file or directory concerned. */
  file?: string;
  message: string;
}

export function problem(
  code: ProblemCode,
  message: string,
  where: { episode_id?: string; file?: string } = {},
): Problem {
  return {
    code,
    ...(where.episode_id === undefined ? {} : { episode_id: where.episode_id }),
    ...(where.file === undefined ? {} : { file: where.file }),
    message,
  };
}

/** One line per problem: `code episode file: message` (a dash where there is no episode or file). */
export function formatProblem(p: Problem): string {
  return `${p.code} ${p.episode_id ?? '-'} ${p.file ?? '-'}: ${p.message.replace(/\s+/g, ' ')}`;
}

export function sortProblems(problems: readonly Problem[]): Problem[] {
  const key = (p: Problem) => `${p.episode_id ?? ''}\u0000${p.file ?? ''}\u0000${p.code}\u0000${p.message}`;
  return [...problems].sort((a, b) => (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0));
}
