/**
 * The sidecar's user name rule: it selects `DIR/users/<user>/`, so it is one path segment and
 * never `..`. The same alphabet as the shared name rules (`shared/names.ts`); it lives here because
 * only the sidecar has users.
 *
 * @module
 */
import * as z from '../../shared/zod.ts';

export const UserNameSchema = z.string().check(
  z.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { message: 'must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit', abort: true }),
  z.refine((s) => !s.includes('..'), 'must not contain ".."'),
);
