// ESM entry: the CommonJS entry (runtime.js) re-exported by name, so
// `import { createSessionGoal } from 'session-goal-runtime'` works as `require` does. Node's
// static detection of CommonJS names cannot see through runtime.js's spread of the native
// binding, hence the explicit list; __test__/package.test.mjs checks it against runtime.js.
import runtime from './runtime.js'

export const {
  buildGoalIntroText,
  createGoalControl,
  createSessionAssistRuntime,
  createSessionGoal,
  createSessionGoalControl,
  createSessionGoalRuntime,
  deleteObjective,
  deleteObjectiveFile,
  GoalControl,
  GoalError,
  goalRuntimeDefaults,
  handleObjectiveRequest,
  inputRules,
  intakePayloadTypes,
  readObjective,
  readObjectiveFile,
  registerSessionGoalRoutes,
  SessionAssistRuntime,
  SessionGoalRuntime,
  writeObjective,
  writeObjectiveFile,
  writeSessionMetadataKey,
} = runtime

export default runtime
