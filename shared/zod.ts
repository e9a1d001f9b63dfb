/**
 * zod for Switchyard: zod/mini with English messages. zod/mini registers no locale (zod classic
 * registers English on its first schema), so without it every issue would read "Invalid input".
 * Every schema module imports zod from here (the lint holds it), so no module that shows an
 * issue's message to a person can forget the locale. The bundles keep only this locale
 * (scripts/build.mjs).
 *
 * @module
 */
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';

z.config(en());

export * from 'zod/mini';

/*
 * `url` and `int` stand in for zod's checks of the same names (an explicit export wins over
 * `export *`): zod's bring its URL and number-format machinery, about 3 KB of dist/worker.js
 * (issue 17), for what these do on `superRefine`, which the schemas use anyway. Each raises the
 * issues zod's does, so the messages are the same, and leaves the value as zod's does;
 * shared/zod.test.ts holds them to zod's own over a corpus.
 */

/** `z.url(message)`: an absolute URL once trimmed; the value is kept trimmed and without tabs or newlines, as the URL parser reads it. */
export function url(message: string): z.core.$ZodCheck<string> {
  return z.superRefine((value: string, ctx) => {
    const trimmed = value.trim();
    if (URL.canParse(trimmed)) ctx.value = trimmed.replace(/[\t\n\r]/g, '');
    else ctx.addIssue({ code: 'invalid_format', format: 'url', input: value, message });
  });
}

/** `z.int(message?)`: a safe integer; a fraction ends the checks that follow, as zod's does. Documented as an integer (`npm run docs`). */
export function int(message?: string): z.core.$ZodCheck<number> {
  const check = z.superRefine((value: number, ctx) => {
    const issue = { input: value, ...(message !== undefined ? { message } : {}) };
    if (!Number.isInteger(value)) ctx.addIssue({ ...issue, code: 'invalid_type', expected: 'int', continue: false });
    else if (value > Number.MAX_SAFE_INTEGER) ctx.addIssue({ ...issue, code: 'too_big', origin: 'int', maximum: Number.MAX_SAFE_INTEGER, inclusive: true });
    else if (value < Number.MIN_SAFE_INTEGER) ctx.addIssue({ ...issue, code: 'too_small', origin: 'int', minimum: Number.MIN_SAFE_INTEGER, inclusive: true });
  });
  check._zod.onattach.push((schema) => {
    schema._zod.bag.format = 'safeint';
  });
  return check;
}
