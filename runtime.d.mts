// Types of the ESM entry (runtime.mjs): the declarations of the CommonJS entry (runtime.d.ts),
// re-exported whole. runtime.d.ts declares exactly the values of lib/exports.json and every other
// name as a type only, and a re-export keeps each name as it is declared there
// (__test__/exports.test.mjs checks the list).
export * from './runtime.js'
import * as runtime from './runtime.js'
export default runtime
