/**
 * The modern wire shapes the host produces for a legacy server's answers live in
 * `shared/modern-results.ts`: the worker's edge-direct HTTP path produces the same ones.
 *
 * @module
 */
export * from '../../../shared/modern-results.ts';
