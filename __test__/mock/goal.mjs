// A fresh active goal as a host writes it into `metadata.openchamber.goal` (every counter at 0).
// Shared by the tests, the fault suite and the benchmarks; `fields` overrides any default.
export function freshGoal(fields = {}) {
  const now = Date.now()
  return {
    id: 'goal-' + Math.random().toString(36).slice(2, 8),
    objective: 'Make the parser handle nested lists',
    objectiveFile: false,
    status: 'active',
    tokenBudget: null,
    tokensUsed: 0,
    turnsUsed: 0,
    blockedStreak: 0,
    auditFailStreak: 0,
    note: '',
    statusReason: '',
    lastAccountedMessageID: '',
    createdAt: now - 1000,
    updatedAt: now - 1000,
    ...fields,
  }
}
