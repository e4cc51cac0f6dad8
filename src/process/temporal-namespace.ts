/**
 * What the namespace must hold before a weekly run can work: the namespace itself and the custom search attributes the
 * workflows upsert. Without them `upsertSearchAttributes` fails the run's workflow task, which Temporal retries forever.
 * Used by the worker's start-up check and by `episodes cluster setup|check`.
 */
import type { ConnectionLike } from '@temporalio/client';
import type { SearchAttributeType } from '@temporalio/common';
import { encodeSearchAttributeIndexedValueType } from '@temporalio/common/lib/search-attributes';
import { PipelineError, ErrorType } from '../domain/errors';
import { EpisodeIdSearchAttribute, WeekIdSearchAttribute } from '../domain/names';

export const REQUIRED_SEARCH_ATTRIBUTES: readonly { name: string; type: SearchAttributeType }[] = [
  EpisodeIdSearchAttribute,
  WeekIdSearchAttribute,
];

export const SETUP_COMMAND = 'npx episodes cluster setup';

export interface SearchAttributeReport {
  present: string[];
  missing: string[];
  /** Registered under the right name with another type: setup cannot fix these, an operator must. */
  wrongType: { name: string; type: string }[];
}

const GRPC_NOT_FOUND = 5;
const GRPC_PERMISSION_DENIED = 7;
const GRPC_UNIMPLEMENTED = 12;

function grpcCode(e: unknown): number | undefined {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'number' ? code : undefined;
}

function message(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ');
}

/** Fails with one line when the namespace does not exist or the caller may not read it. */
export async function requireNamespace(connection: ConnectionLike, namespace: string): Promise<void> {
  try {
    await connection.workflowService.describeNamespace({ namespace });
  } catch (e) {
    throw namespaceError(e, namespace, 'read');
  }
}

export async function describeSearchAttributes(
  connection: ConnectionLike,
  namespace: string,
): Promise<SearchAttributeReport> {
  let custom: Record<string, number>;
  try {
    const r = await connection.operatorService.listSearchAttributes({ namespace });
    custom = r.customAttributes ?? {};
  } catch (e) {
    throw namespaceError(e, namespace, 'list the search attributes of');
  }
  const report: SearchAttributeReport = { present: [], missing: [], wrongType: [] };
  for (const key of REQUIRED_SEARCH_ATTRIBUTES) {
    const registered = custom[key.name];
    if (registered === undefined) report.missing.push(key.name);
    else if (registered === Number(encodeSearchAttributeIndexedValueType(key.type))) report.present.push(key.name);
    else report.wrongType.push({ name: key.name, type: typeName(registered) });
  }
  return report;
}

/** Registers the named attributes (Keyword) through the Operator service. */
export async function registerSearchAttributes(
  connection: ConnectionLike,
  namespace: string,
  names: readonly string[],
): Promise<void> {
  const searchAttributes: Record<string, number> = {};
  for (const key of REQUIRED_SEARCH_ATTRIBUTES) {
    const type = encodeSearchAttributeIndexedValueType(key.type);
    if (names.includes(key.name) && type !== undefined) searchAttributes[key.name] = type;
  }
  try {
    await connection.operatorService.addSearchAttributes({ namespace, searchAttributes });
  } catch (e) {
    throw namespaceError(e, namespace, 'add search attributes to', names);
  }
}

/** The worker's start-up check: one line naming what is missing and the command that fixes it. */
export async function requireNamespaceReady(connection: ConnectionLike, namespace: string): Promise<void> {
  await requireNamespace(connection, namespace);
  const report = await describeSearchAttributes(connection, namespace);
  if (report.missing.length > 0) {
    throw new PipelineError(
      ErrorType.NamespaceNotReady,
      `namespace ${namespace} lacks the search attribute${report.missing.length > 1 ? 's' : ''} ` +
        `${report.missing.join(', ')} (Keyword): run \`${SETUP_COMMAND}\` with the same TEMPORAL_* settings`,
    );
  }
  if (report.wrongType.length > 0) {
    throw new PipelineError(ErrorType.NamespaceNotReady, wrongTypeLine(namespace, report));
  }
}

export function wrongTypeLine(namespace: string, report: SearchAttributeReport): string {
  const list = report.wrongType.map((w) => `${w.name} is ${w.type}`).join(', ');
  return `namespace ${namespace}: ${list}, not Keyword; remove and re-create them, then run \`${SETUP_COMMAND}\``;
}

function namespaceError(e: unknown, namespace: string, action: string, names?: readonly string[]): PipelineError {
  const code = grpcCode(e);
  if (code === GRPC_NOT_FOUND) {
    return new PipelineError(ErrorType.NamespaceNotReady, `namespace ${namespace} does not exist`);
  }
  if (code === GRPC_PERMISSION_DENIED || code === GRPC_UNIMPLEMENTED) {
    const hint =
      names === undefined
        ? ''
        : `; ask an admin to add ${names.map((n) => `${n}=Keyword`).join(', ')} (Temporal Cloud: the UI or ` +
          '`tcld namespace search-attributes add`; self-hosted: `temporal operator search-attribute create`)';
    return new PipelineError(
      ErrorType.NamespaceNotReady,
      `permission denied: may not ${action} namespace ${namespace} (${message(e)})${hint}`,
    );
  }
  return new PipelineError(ErrorType.NamespaceNotReady, `cannot ${action} namespace ${namespace}: ${message(e)}`);
}

function typeName(indexed: number): string {
  const types: SearchAttributeType[] = ['TEXT', 'KEYWORD', 'INT', 'DOUBLE', 'BOOL', 'DATETIME', 'KEYWORD_LIST'];
  return types.find((t) => Number(encodeSearchAttributeIndexedValueType(t)) === indexed) ?? `type ${indexed}`;
}
