import { describe, expect, it } from 'vitest';
import { honouredFilter, parseSubscriptionFilter, passesFilter, tagged } from './subscription-filter.ts';

const EVERYTHING = { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true } };

describe('subscription filter', () => {
  it('requires params.notifications and names what is wrong in it', () => {
    expect(parseSubscriptionFilter({})).toMatchObject({ ok: false, problem: expect.stringContaining('params.notifications is missing') });
    expect(parseSubscriptionFilter({ notifications: { resourceSubscriptions: 'file:///a' } })).toMatchObject({ ok: false, problem: expect.stringContaining('params.notifications.resourceSubscriptions') });
    expect(parseSubscriptionFilter({ notifications: { toolsListChanged: true } })).toEqual({ ok: true, filter: { toolsListChanged: true } });
  });

  it('honours only the kinds the server announces, and URIs only with resources.subscribe', () => {
    const requested = { toolsListChanged: true, promptsListChanged: true, resourcesListChanged: false, resourceSubscriptions: ['a://x', 'a://x'] };
    expect(honouredFilter(requested, EVERYTHING)).toEqual({ toolsListChanged: true, promptsListChanged: true, resourceSubscriptions: ['a://x'] });
    expect(honouredFilter(requested, { tools: {}, prompts: { listChanged: true }, resources: { listChanged: true } })).toEqual({ promptsListChanged: true });
    expect(honouredFilter(requested, {})).toEqual({});
  });

  it('passes list changes by flag and resource updates for a watched URI or a sub-resource of it', () => {
    const filter = { toolsListChanged: true, resourceSubscriptions: ['file:///project', 'demo://one'] };
    expect(passesFilter(filter, 'notifications/tools/list_changed', undefined)).toBe(true);
    expect(passesFilter(filter, 'notifications/prompts/list_changed', undefined)).toBe(false);
    expect(passesFilter(filter, 'notifications/resources/updated', { uri: 'file:///project/config.json' })).toBe(true);
    expect(passesFilter(filter, 'notifications/resources/updated', { uri: 'file:///projectile' })).toBe(false);
    expect(passesFilter(filter, 'notifications/resources/updated', { uri: 'demo://one' })).toBe(true);
    expect(passesFilter(filter, 'notifications/message', { level: 'info' })).toBe(false);
  });

  it('tags a notification with its subscription id, keeping its other _meta', () => {
    expect(tagged('notifications/resources/updated', { uri: 'a://x', _meta: { k: 1 } }, 'sub')).toEqual({
      method: 'notifications/resources/updated',
      params: { uri: 'a://x', _meta: { k: 1, 'io.modelcontextprotocol/subscriptionId': 'sub' } },
    });
  });
});
