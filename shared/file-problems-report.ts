/**
 * How every config problem is reported, by `check`, the CLI's starts and reloads, and each
 * worker entry (Deno, Workers): the file (or variable) with its count and kind, then one
 * indented `path: message` line per problem, so an operator reads one format wherever the config
 * is refused.
 *
 * @module
 */
import { formatIssue, type ValidationIssue } from './validation.ts';

/** The report's heading and one indented `path: message` line per problem. */
export function describeFileProblems(file: string, kind: string, issues: readonly ValidationIssue[]): string {
  const heading = `${file}: ${issues.length} problem${issues.length === 1 ? '' : 's'} (${kind})`;
  return [heading, ...issues.map((issue) => `  ${formatIssue(issue)}`)].join('\n');
}
