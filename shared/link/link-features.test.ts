import { describe, expect, it } from 'vitest';
import { LINK_FEATURES, linkFeaturesOf } from './link-features.ts';

describe('linkFeaturesOf', () => {
  it('reads the features this code knows from the header, and none from an absent one', () => {
    expect([...linkFeaturesOf(LINK_FEATURES.join(','))]).toEqual([...LINK_FEATURES]);
    expect([...linkFeaturesOf(' open-first , later-feature,')]).toEqual(['open-first']);
    // A sidecar that marks its own answers says so; one that does not (older) leaves it out.
    expect(LINK_FEATURES).toContain('host-answers');
    expect([...linkFeaturesOf('open-first,open-reply,host-answers')]).toEqual(['open-first', 'open-reply', 'host-answers']);
    expect(linkFeaturesOf('open-first,open-reply').has('host-answers')).toBe(false);
    expect(linkFeaturesOf(undefined).size).toBe(0);
    expect(linkFeaturesOf(null).size).toBe(0);
    expect(linkFeaturesOf('').size).toBe(0);
  });
});
