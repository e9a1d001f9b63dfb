import { describe, expect, it } from 'vitest';
import { linkAttachmentOf } from './host-link-object.ts';

describe('a host link socket attachment read back after hibernation', () => {
  const base = { 'entity-id': 'laptop', since: '2026-12-01T00:00:00.000Z', wakes: 2 };

  it('keeps the features the host announced', () => {
    expect(linkAttachmentOf({ ...base, features: ['open-first'] })).toEqual({ ...base, features: ['open-first'] });
  });

  it('reads an attachment without features, or with features that are not a list of names, as one with none: the link still restores', () => {
    expect(linkAttachmentOf(base)).toEqual({ ...base, features: [] });
    expect(linkAttachmentOf({ ...base, features: 'open-first' })).toEqual({ ...base, features: [] });
    expect(linkAttachmentOf({ ...base, features: ['open-first', 7] })).toEqual({ ...base, features: ['open-first'] });
  });

  it('keeps the link\'s round trip, and reads one that is not a number of ms as none: the window then starts at its least', () => {
    expect(linkAttachmentOf({ ...base, features: [], rttMs: 42.5 })).toEqual({ ...base, features: [], rttMs: 42.5 });
    for (const rttMs of ['42', -1, Number.POSITIVE_INFINITY, null]) expect(linkAttachmentOf({ ...base, features: [], rttMs })).toEqual({ ...base, features: [] });
  });

  it('is not a link attachment without its verified entity id, time or wake count', () => {
    expect(linkAttachmentOf(null)).toBeNull();
    expect(linkAttachmentOf({ since: base.since, wakes: 0 })).toBeNull();
    expect(linkAttachmentOf({ ...base, wakes: '2' })).toBeNull();
  });
});
