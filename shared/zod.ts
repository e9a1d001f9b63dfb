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
