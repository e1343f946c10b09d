// Types of the ESM entry (runtime.mjs): the same declarations as the CommonJS entry.
export * from './runtime.js'
import * as runtime from './runtime.js'
export default runtime
