import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
// @ts-expect-error plain JS build script
import { GENERATED, renderStatusAssets } from '../../scripts/status-assets.mjs';
import { STATUS_PAGE_CSS, STATUS_PAGE_SCRIPT } from './status-page-assets.generated.ts';

describe('status page assets', () => {
  it('the generated module is what scripts/status-assets.mjs makes of the asset files now (run npm run build after editing them)', () => {
    const current = readFileSync(GENERATED as string, 'utf8') === (renderStatusAssets as () => string)();
    expect(current, 'worker/status/status-page-assets.generated.ts is stale: run npm run build (or node scripts/status-assets.mjs)').toBe(true);
  });

  it('holds the asset files verbatim', () => {
    expect(STATUS_PAGE_SCRIPT).toBe(readFileSync(new URL('./assets/status-page.js', import.meta.url), 'utf8'));
    expect(STATUS_PAGE_CSS).toBe(readFileSync(new URL('./assets/status-page.css', import.meta.url), 'utf8'));
  });
});
