/**
 * One error type for every parser at a boundary: a list of `path: message` problems.
 *
 * @module
 */
import * as z from './zod.ts';
import { LocalError, WireError } from './errors.ts';

export interface ValidationIssue {
  /** Dotted path into the input, `(root)` for the whole value. */
  path: string;
  message: string;
}

/** Thrown by every `parse*` function in Switchyard when the input does not fit its schema. */
export class ValidationError extends LocalError {
  override readonly name = 'ValidationError';
  readonly issues: readonly ValidationIssue[];

  constructor(what: string, issues: readonly ValidationIssue[]) {
    super('invalid-input', `Invalid ${what}: ${issues.map(formatIssue).join('; ')}`);
    this.issues = issues;
  }

  /** The same problem as a wire error with reason `invalid-request` (for link and HTTP replies). */
  toWireError(): WireError {
    return new WireError('invalid-request', this.message);
  }
}

export function formatIssue(issue: ValidationIssue): string {
  return `${issue.path}: ${issue.message}`;
}

export function joinPath(path: readonly PropertyKey[], prefix = ''): string {
  const parts = path.map((p) => (typeof p === 'number' ? `[${p}]` : String(p)));
  const joined = parts.reduce((acc, part) => (part.startsWith('[') || acc === '' ? acc + part : `${acc}.${part}`), prefix);
  return joined === '' ? '(root)' : joined;
}

/** Turns zod issues into `path: message` problems, naming unknown keys one by one. */
export function issuesFromZod(error: z.core.$ZodError, prefix = ''): ValidationIssue[] {
  const out: ValidationIssue[] = [];
  for (const issue of error.issues) {
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ path: joinPath([...issue.path, key], prefix), message: 'unknown key' });
      continue;
    }
    out.push({ path: joinPath(issue.path, prefix), message: issue.message });
  }
  return out;
}

/** `schema.safeParse` that throws `ValidationError` with every problem found (any zod 4 schema, mini or classic). */
export function parseWith<T>(schema: z.core.$ZodType<T>, input: unknown, what: string, prefix = ''): T {
  const result = z.safeParse(schema, input);
  if (result.success) return result.data;
  throw new ValidationError(what, issuesFromZod(result.error, prefix));
}
