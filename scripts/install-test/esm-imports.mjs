// Installed package, ESM: every documented export imported by name (a missing one is a link
// error before this runs), and the list checked against what `require` gives.
import { createRequire } from 'node:module'
import {
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
} from 'session-goal-runtime'
// A host that imports one name only (OpenChamber's routes import two).
import { buildGoalIntroText as introOnly } from 'session-goal-runtime'

const imported = {
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
}
const required = createRequire(import.meta.url)('session-goal-runtime')
const documented = Object.keys(required).sort()
const missing = documented.filter((name) => !(name in imported))
if (missing.length) throw new Error(`exports not covered by the ESM check: ${missing.join(', ')}`)
const extra = Object.keys(imported).filter((name) => !(name in required))
if (extra.length) throw new Error(`ESM names require does not give: ${extra.join(', ')}`)
for (const [name, value] of Object.entries(imported)) {
  // inputRules is a namespace of functions (the core's input rules); every other export is a function or class.
  if (typeof value !== (name === 'inputRules' ? 'object' : 'function')) throw new Error(`ESM export ${name} is ${typeof value}`)
  if (value !== required[name]) throw new Error(`ESM export ${name} differs from the CommonJS one`)
}
if (introOnly(1000) !== buildGoalIntroText(1000) || !introOnly(1000).includes('1000 tokens')) throw new Error('buildGoalIntroText')
console.log(`esm: ${Object.keys(imported).length} named exports import (${documented.length} documented)`)
