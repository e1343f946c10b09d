// The goals page: plain JavaScript on Tauri's global API (`withGlobalTauri`), no bundler.
// It lists the directory's goals through the `list_goals` command, reloads when Rust emits
// `goals-changed`, and pauses or resumes a goal with the row's button.
const { invoke } = window.__TAURI__.core
const { listen } = window.__TAURI__.event

const rows = document.getElementById('goals')
const message = document.getElementById('message')

function cell(text, className) {
  const td = document.createElement('td')
  td.textContent = text
  if (className) td.className = className
  return td
}

function criteriaText(goal) {
  return goal.criteriaTotal === 0 ? 'no criteria' : `${goal.criteriaMet}/${goal.criteriaTotal} criteria met`
}

function actionButton(goal) {
  const td = document.createElement('td')
  const action = goal.status === 'active' ? 'pause' : goal.status === 'paused' ? 'resume' : null
  if (!action) return td
  const button = document.createElement('button')
  button.textContent = action === 'pause' ? 'Pause' : 'Resume'
  button.dataset.action = action
  button.dataset.session = goal.sessionId
  button.addEventListener('click', () => act(action, goal.sessionId, button))
  td.append(button)
  return td
}

function row(goal) {
  const tr = document.createElement('tr')
  tr.dataset.session = goal.sessionId
  const session = cell(goal.title || goal.sessionId)
  session.title = goal.objective
  const cause = goal.cause ? `${goal.cause}${goal.fix ? ' — ' + goal.fix : ''}` : ''
  tr.append(
    session,
    cell(goal.status + (goal.working ? ' (working)' : ''), `status status-${goal.status}`),
    cell(String(goal.turns)),
    cell(criteriaText(goal)),
    cell(goal.note),
    cell(cause, 'fix'),
    actionButton(goal),
  )
  return tr
}

let loading = null
let again = false
// One load at a time; events that arrive meanwhile ask for one more.
async function load() {
  if (loading) {
    again = true
    return loading
  }
  loading = (async () => {
    do {
      again = false
      try {
        const list = await invoke('list_goals')
        document.getElementById('directory').textContent = list.directory
        rows.replaceChildren(...list.goals.map(row))
        if (list.goals.length === 0) rows.replaceChildren(Object.assign(document.createElement('tr'), { innerHTML: '<td colspan="7">No goals in this directory.</td>' }))
      } catch (error) {
        message.textContent = `Could not list goals: ${error}`
      }
    } while (again)
  })()
  try {
    await loading
  } finally {
    loading = null
  }
}

async function act(action, sessionId, button) {
  button.disabled = true
  message.textContent = ''
  try {
    await invoke(action === 'pause' ? 'pause_goal' : 'resume_goal', { sessionId })
  } catch (error) {
    message.textContent = `Could not ${action} the goal: ${error}`
  }
  await load()
}

// Test hooks: these events come only from src/test_control.rs, which runs only when the app
// is started with TAURI_GOALS_TEST_CONTROL=1. A click goes through the button itself. The page
// answers a read only once every listener is in place, so a test that got an answer can click.
async function listenForTests() {
  await listen('test:click', ({ payload }) => {
    const button = document.querySelector(`button[data-action="${payload.action}"][data-session="${CSS.escape(payload.sessionId)}"]`)
    if (button) button.click()
    else message.textContent = `No ${payload.action} button for ${payload.sessionId}`
  })
  await listen('test:read-page', ({ payload }) => invoke('report_page_text', { tag: payload.tag, text: document.body.innerText }))
  // The policy comes with the page as a response header, which the page cannot read: it shows in
  // the report of something the policy refuses (eval), which carries the whole policy.
  await listen('test:read-policy', async ({ payload }) => {
    const refused = new Promise((resolve) => {
      document.addEventListener('securitypolicyviolation', (event) => resolve(event.originalPolicy), { once: true })
      setTimeout(() => resolve(''), 2000)
    })
    try {
      ;(0, eval)('0')
    } catch {
      // Refused, as it must be: the report follows.
    }
    return invoke('report_page_text', { tag: payload.tag, text: await refused })
  })
}

listen('goals-changed', () => load())
listenForTests()
load()
