// Types of the ESM entry (runtime.mjs): the declarations of the CommonJS entry, its types as types
// and exactly the values of lib/exports.json (a bare `export *` would turn the type-only names
// of runtime.d.ts back into values; __test__/exports.test.mjs checks the list).
export type * from './runtime.js'
export {
  createSessionGoalRuntime,
  createSessionAssistRuntime,
  buildGoalIntroText,
  createSessionGoal,
  registerSessionGoalRoutes,
  handleObjectiveRequest,
  createSessionGoalControl,
  writeObjective,
  readObjective,
  deleteObjective,
  writeSessionMetadataKey,
  goalRuntimeDefaults,
  intakePayloadTypes,
  inputRules,
  SessionGoalError,
} from './runtime.js'
import * as runtime from './runtime.js'
export default runtime
