/**
 * English messages for zod issues. zod/mini registers no locale (zod classic registers English on
 * its first schema), so without this every issue would read "Invalid input". Imported by the
 * modules that show zod's messages to a person: `validation.ts` (every `path: message`) and the
 * few that read `issue.message` themselves. The worker bundle keeps only this locale
 * (scripts/build.mjs).
 *
 * @module
 */
import * as z from 'zod/mini';
import en from 'zod/v4/locales/en.js';

z.config(en());
