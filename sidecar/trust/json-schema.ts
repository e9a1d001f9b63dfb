/**
 * The JSON Schema engine behind tool-call authorization (ajv).
 *
 * Profile authors write schemas over `{toolName, input}`. Most are plain draft-07 schemas; a schema
 * that declares `"$schema": "https://json-schema.org/draft/2020-12/schema"` is compiled with ajv's
 * 2020-12 dialect instead, because that is the dialect MCP tool input schemas use. `strict: false`
 * keeps unknown keywords (annotations such as `x-order`) from failing a profile. But a rule must
 * never be weaker, or wider, than it reads: ajv ignores an unknown keyword, and so a `format` it
 * does not check or a 2020-12 keyword in a draft-07 schema would let an allow rule pass anything
 * and a restricted one match everything. So every format ajv-formats checks is checked, and an
 * engine refuses to compile a schema naming another format or a keyword of the other dialect
 * (`engineOf`); `schemaProblem` compiles each schema, so a profile naming one is refused.
 *
 * ajv v8 registers every compiled schema that has an `$id`, and refuses a second schema with the
 * same `$id`. So profile checking only validates against the meta-schema (nothing registered), and
 * each authorizer compiles with engines of its own ({@link SchemaCompiler}).
 *
 * ajv is loaded on first use, synchronously (the profile's zod parse calls {@link schemaProblem}),
 * not when the sidecar starts: its module bodies cost the linked sidecar about 0.5 MiB of RSS, and
 * most profiles hold no schema (issue 17: the idle sidecar). In dist/sidecar.js `require` is
 * esbuild's, which bundles ajv and runs its module bodies at the first call (`sidecar-bundle.test.ts`
 * checks a profile's schemas there); from source (tsx, vitest) it is Node's, by `createRequire`.
 *
 * @module
 */
import { createRequire } from 'node:module';
import type { Ajv, AnySchema, ValidateFunction } from 'ajv';
import type { RegExpEngine, RegExpLike } from 'ajv/dist/types/index.js';
import { withEcmaScriptClasses } from './ecmascript-pattern.ts';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { FormatsPlugin } from 'ajv-formats';

interface AjvModules {
  Ajv: typeof Ajv;
  Ajv2020: typeof Ajv2020;
  addFormats: FormatsPlugin;
  RE2JS: Re2Module;
}

/** What this module uses of re2js: a compile that throws on a syntax it does not take, and ECMAScript syntax translated to RE2's. */
interface Re2Module {
  compile(pattern: string): { test(input: string): boolean };
  translateRegExp(pattern: string): string;
}

let loaded: AjvModules | undefined;

function ajv(): AjvModules {
  if (loaded !== undefined) return loaded;
  // Literal `require('…')` calls, so that esbuild sees and bundles both modules.
  const load = typeof require === 'function' ? undefined : createRequire(import.meta.url);
  const draft07 = (load ? load('ajv') : require('ajv')) as { Ajv: typeof Ajv };
  const draft2020 = (load ? load('ajv/dist/2020.js') : require('ajv/dist/2020.js')) as { Ajv2020: typeof Ajv2020 };
  const formats = (load ? load('ajv-formats') : require('ajv-formats')) as { default: FormatsPlugin };
  const re2 = (load ? load('re2js') : require('re2js')) as { RE2JS: Re2Module };
  loaded = { Ajv: draft07.Ajv, Ajv2020: draft2020.Ajv2020, addFormats: formats.default, RE2JS: re2.RE2JS };
  return loaded;
}

/** A JSON Schema as written in a profile file: an object or a boolean. */
export type JsonSchema = boolean | Readonly<Record<string, unknown>>;

/**
 * The formats a rule may name: those ajv-formats checks. It takes `password` and `binary` for
 * annotations (any string passes), so a rule naming them would hold less than it reads.
 */
const CHECKED_FORMATS = [
  'date', 'time', 'date-time', 'iso-time', 'iso-date-time', 'duration', 'uri', 'uri-reference', 'uri-template', 'url', 'email', 'hostname',
  'ipv4', 'ipv6', 'regex', 'uuid', 'json-pointer', 'json-pointer-uri-fragment', 'relative-json-pointer', 'byte', 'int32', 'int64', 'float', 'double',
] as const;

/** Keywords of the other dialect, which an engine of this one would ignore: a schema naming one is refused. */
const FOREIGN_KEYWORDS = {
  draft07: ['dependentRequired', 'dependentSchemas', 'maxContains', 'minContains', 'prefixItems', 'unevaluatedItems', 'unevaluatedProperties', '$dynamicRef', '$dynamicAnchor', '$recursiveRef', '$recursiveAnchor'],
  draft2020: ['additionalItems', 'dependencies', '$recursiveRef', '$recursiveAnchor'],
};

const DRAFT_2020 = 'https://json-schema.org/draft/2020-12/schema';

/** A keyword or format of a schema that its engine would not enforce. */
class UnenforcedSchema extends Error {}

/**
 * The regular expressions of `pattern` and `patternProperties`, matched in time linear in the
 * input (RE2's automata): a profile's pattern is matched against an agent's tool arguments in the
 * sidecar's one thread, where a backtracking `RegExp` (`^([a-z]+/?)*$` against 40 characters)
 * held every agent on the host for minutes. A pattern RE2 cannot match in linear time (a
 * lookahead, a back-reference) is refused when the profile is read, saying so.
 */
function linearRegExp(pattern: string): RegExpLike & { toString(): string } {
  let compiled: { test(input: string): boolean };
  // Compiled (never run) as ECMAScript first: a pattern is ECMAScript's, whatever RE2 would also take.
  new RegExp(pattern, 'u');
  try {
    compiled = ajv().RE2JS.compile(ajv().RE2JS.translateRegExp(withEcmaScriptClasses(pattern)));
  } catch (error) {
    const why = error instanceof Error ? error.message : String(error);
    throw new UnenforcedSchema(`pattern "${pattern}" cannot be matched in linear time: ${why}: write it without lookarounds or back-references`);
  }
  // ajv keys its compiled patterns by this string: one per pattern, as a RegExp's would be.
  return { test: (input) => compiled.test(input), toString: () => `/${pattern}/` };
}
linearRegExp.code = 'linearRegExp';

/**
 * An engine of one dialect that fails closed: ajv warns of a format it does not know (and only
 * of that, with `strict: false`) and then ignores it, so its warning throws; a keyword of the
 * other dialect, which ajv would ignore, throws when a schema uses it. Wherever the keyword is,
 * `$ref` targets included, since it is ajv's own compile that finds it.
 */
function engineOf(draft2020: boolean): Ajv | Ajv2020 {
  const logger = {
    log: () => {},
    error: () => {},
    warn: (message: unknown) => {
      throw new UnenforcedSchema(`${String(message)}, so the rule would not hold: use one of ${CHECKED_FORMATS.join(', ')}, or a pattern`);
    },
  };
  const options = { strict: false, allErrors: false, logger, code: { regExp: linearRegExp as RegExpEngine } };
  const engine = draft2020 ? new (ajv().Ajv2020)(options) : new (ajv().Ajv)(options);
  ajv().addFormats(engine, { formats: [...CHECKED_FORMATS] });
  const [foreign, fix] = draft2020
    ? [FOREIGN_KEYWORDS.draft2020, 'it is not a keyword of JSON Schema 2020-12, which this schema declares: write it the 2020-12 way']
    : [FOREIGN_KEYWORDS.draft07, `it is a keyword of JSON Schema 2020-12, which this schema does not declare: add "$schema": "${DRAFT_2020}"`];
  for (const keyword of foreign) {
    if (engine.getKeyword(keyword) !== false) continue;
    engine.addKeyword({
      keyword,
      compile: () => {
        throw new UnenforcedSchema(`"${keyword}" would be ignored, so the rule would not hold: ${fix}`);
      },
    });
  }
  return engine;
}

/** One ajv engine per dialect, created on first use. */
class Engines {
  #draft07: Ajv | undefined;
  #draft2020: Ajv2020 | undefined;

  for(schema: JsonSchema): Ajv | Ajv2020 {
    if (isDraft2020(schema)) return (this.#draft2020 ??= engineOf(true) as Ajv2020);
    return (this.#draft07 ??= engineOf(false) as Ajv);
  }
}

function isDraft2020(schema: JsonSchema): boolean {
  const dialect = typeof schema === 'object' ? schema['$schema'] : undefined;
  return typeof dialect === 'string' && dialect.includes('2020-12');
}

const shared = new Engines();

/**
 * Checks a schema against its dialect's meta-schema (without registering it anywhere).
 *
 * @param schema A JSON Schema (object or boolean).
 * @returns `undefined` when the schema is usable, otherwise the reason in sentence case.
 * @example Rejecting a schema with a wrong keyword type
 * ```ts
 * schemaProblem({ type: 12 }); // 'schema/type must be equal to one of the allowed values, …'
 * schemaProblem({ type: 'object' }); // undefined
 * ```
 */
export function schemaProblem(schema: JsonSchema): string | undefined {
  const engine = shared.for(schema);
  try {
    if (engine.validateSchema(schema as AnySchema) !== true) return engine.errorsText(engine.errors, { dataVar: 'schema' });
    // Compiled once here, by an engine of its own (an `$id` is registered once per engine), for
    // what only a compile finds: a `$ref` that resolves nowhere, a keyword or format not enforced.
    new Engines().for(schema).compile(schema as AnySchema);
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/** Compiles the schemas of one authorizer; `$id`s only need to be unique within it. */
export class SchemaCompiler {
  readonly #engines = new Engines();

  /**
   * @param schema A schema already checked with {@link schemaProblem}.
   * @returns A predicate saying whether a value satisfies the schema.
   * @throws Error when the schema cannot be compiled (an unresolvable `$ref`, for example).
   */
  compile(schema: JsonSchema): (value: unknown) => boolean {
    const validate: ValidateFunction = this.#engines.for(schema).compile(schema as AnySchema);
    return (value) => validate(value) === true;
  }
}
