/**
 * Name rules shared by configs and wire requests. Names become path segments on the sidecar
 * (`machines/<entity-id>/…`) and parts of namespaced tool names, so they are deliberately narrow.
 *
 * @module
 */
import * as z from './zod.ts';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;

/** A server name: letters, digits, `_` and `-`; no dots, slashes or `..`. */
export const ServerNameSchema = z.string().check(z.regex(NAME, 'must be 1-64 letters, digits, "_" or "-", starting with a letter or digit'));

/** A host entity id, same alphabet plus `.` inside (never leading, so never `..` traversal). */
export const EntityIdSchema = z.string().check(
  z.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, { message: 'must be 1-128 letters, digits, ".", "_" or "-", starting with a letter or digit', abort: true }),
  z.refine((s) => !s.includes('..'), 'must not contain ".."'),
);

/** A trust profile reference: the file name of `trust-profiles/<ref>.json` without the extension. */
export const ProfileRefSchema = z.string().check(
  z.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, { message: 'must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit', abort: true }),
  z.refine((s) => !s.includes('..'), 'must not contain ".."'),
);

/** A trust profile revision as printed by `switchyard sidecar profiles`. */
export const RevisionSchema = z.string().check(z.regex(/^sha256:[0-9a-f]{64}$/, 'must be "sha256:" followed by 64 lowercase hex digits'));

/** An agent name, as in the worker config and the `agent` field of a connection request. */
export const AgentNameSchema = z.string().check(z.regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/, 'must be 1-64 letters, digits, ".", "_" or "-", starting with a letter or digit'));
