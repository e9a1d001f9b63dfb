import { describe, expect, it } from 'vitest';
import { withoutCredentials } from './audit-record.ts';

describe('withoutCredentials', () => {
  it('takes out the fragment, where implicit-flow tokens ride', () => {
    expect(withoutCredentials('https://api.example.com/x#access_token=FRAGSECRET')).toBe('https://api.example.com/x#[redacted]');
  });

  it('takes out all of a password that holds an @', () => {
    expect(withoutCredentials('https://user:p@ssW0RDSECRET@example.com/x')).toBe('https://[redacted]@example.com/x');
  });

  it('takes out userinfo, query and fragment together, and leaves a URI with none of them as written', () => {
    expect(withoutCredentials('https://bob:hunter2@api.example.com/doc?token=abc#part')).toBe('https://[redacted]@api.example.com/doc?[redacted]#[redacted]');
    expect(withoutCredentials('https://API.example.com/a/../b?')).toBe('https://api.example.com/b?[redacted]');
    for (const uri of ['test://static/resource/1', 'file:///home/u/a b.txt', 'https://Example.com', 'https://x.com/@user/post', 'ui://widget']) expect(withoutCredentials(uri)).toBe(uri);
  });

  it('redacts what no URL parser takes, up to the last @ before the path', () => {
    expect(withoutCredentials('https://u:p@ss@exa mple.com/x?k=S#F')).toBe('https://[redacted]@exa mple.com/x?[redacted]#[redacted]');
    expect(withoutCredentials('not a uri ?token=S #frag')).toBe('not a uri ?[redacted]#[redacted]');
  });
});
