/**
 * The package's version, from its `package.json`: bundled into `dist/switchyard.js` and the
 * workstation's single `sidecar.js`, which runs without the package beside it.
 *
 * @module
 */
import packageJson from '../package.json' with { type: 'json' };

export const VERSION: string = packageJson.version;
