/**
 * Build-time stand-in for zod's `locales/index.js` in `dist/worker.js`: English only (see
 * scripts/build.mjs). Error messages of the worker are English; the other locales cost ~250 KB.
 *
 * @module
 */
export { default as en } from 'zod/v4/locales/en.js';
