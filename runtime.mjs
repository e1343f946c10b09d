// ESM entry: the CommonJS entry (runtime.js) re-exported by name, so
// `import { createSessionGoal } from 'session-goal-runtime'` works as `require` does. ESM names
// are static, so they are written out: exactly the names of lib/exports.json, in its order
// (__test__/exports.test.mjs fails when they differ).
import runtime from './runtime.js'

export const {
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
  createEventFollower,
  writeSessionMetadataKey,
  goalRuntimeDefaults,
  intakePayloadTypes,
  inputRules,
  SessionGoalError,
} = runtime

export default runtime
