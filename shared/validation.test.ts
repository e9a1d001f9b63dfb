import { describe, expect, it } from 'vitest';
import * as z from 'zod/mini';
import { parseWith, ValidationError } from './validation.ts';

describe('parseWith', () => {
  // zod/mini registers no locale: without shared/zod.ts every message reads "Invalid input".
  // This file imports no zod classic (nor the MCP SDK, which would register English on its own).
  it('reports zod/mini issues in English as path: message', () => {
    const schema = z.strictObject({ port: z.number().check(z.int(), z.lte(65_535)), name: z.string() });
    try {
      parseWith(schema, { port: 70_000, name: 1, extra: true }, 'thing');
      expect.unreachable();
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationError);
      expect((error as ValidationError).issues).toEqual([
        { path: 'port', message: 'Too big: expected number to be <=65535' },
        { path: 'name', message: 'Invalid input: expected string, received number' },
        { path: 'extra', message: 'unknown key' },
      ]);
    }
  });
});
