// Type check of the installed package from CommonJS (compiled with --module nodenext, not run).
import pkg = require('session-goal-runtime')

const runtime = pkg.createSessionAssistRuntime({ openCode: { baseUrl: 'http://127.0.0.1:4096' } })
const stopped: Promise<void> = runtime.stop()
const intro: string = pkg.buildGoalIntroText(null)
// The event follower with OpenChamber's flat connection names.
const follower: pkg.EventFollower = pkg.createEventFollower({
  buildOpenCodeUrl: (path: string, prefix: string) => `http://127.0.0.1:4096${prefix}${path}`,
  getOpenCodeAuthHeaders: () => ({ authorization: 'Basic x' }),
  onStatus: ({ state, reason }: pkg.EventStreamStatus) => void [state, reason],
})
follower.close()
export = { stopped, intro, control: pkg.createSessionGoalControl }
