import { build } from 'esbuild';
const root = process.argv[2];
const base = { entryPoints: [root + '/worker/adapters/deno/deno-serve.ts'], bundle: true, write: false, outfile: '/tmp/x.js', format: 'esm', platform: 'neutral', target: 'es2022', mainFields: ['module', 'main'], conditions: ['worker', 'browser', 'import', 'default'], minify: true, legalComments: 'none', logLevel: 'error' };
for (const [n, o] of [['base', {}], ['esnext', { target: 'esnext' }], ['utf8', { charset: 'utf8' }], ['es2020', {target:'es2020'}]]) {
  const r = await build({ ...base, ...o });
  console.log(n, r.outputFiles[0].contents.length);
}
