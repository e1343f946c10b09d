// The static catalog the mock serves (GET /command, /config, /provider, /config/providers,
// /agent), built once from the start options, and the command template rules of POST /command.
import { clone } from './common.mjs';

const DEFAULT_COMMANDS = [
  { name: 'init', description: 'create/update AGENTS.md', template: 'Please analyze this codebase and create an AGENTS.md file. $ARGUMENTS' },
  { name: 'review', description: 'review changes', template: 'Review the current changes: $ARGUMENTS', agent: 'plan' },
];

const DEFAULT_AGENTS = [
  { name: 'build', description: 'The default agent.', mode: 'primary', native: true, permission: [], options: {} },
  { name: 'plan', description: 'Plan mode. Read-only.', mode: 'primary', native: true, permission: [], options: {} },
  { name: 'general', description: 'General-purpose subagent.', mode: 'subagent', native: true, permission: [], options: {} },
];

/** A full OpenCode Model from a partial one (missing fields get neutral defaults). */
export function defaultModel(providerID, id, partial = {}, baseURL = '') {
  return {
    id,
    providerID,
    api: { id, url: baseURL, npm: '@ai-sdk/openai-compatible' },
    name: id,
    family: '',
    status: 'active',
    options: {},
    headers: {},
    release_date: '2025-01-01',
    variants: {},
    ...partial,
    capabilities: {
      temperature: true, reasoning: false, attachment: false, toolcall: true,
      input: { text: true, audio: false, image: false, video: false, pdf: false },
      output: { text: true, audio: false, image: false, video: false, pdf: false },
      interleaved: false,
      ...partial.capabilities,
    },
    cost: { input: 0, output: 0, cache: { read: 0, write: 0 }, ...partial.cost },
    limit: { context: 64000, output: 4096, ...partial.limit },
  };
}

/** A full OpenCode Provider from `{id, name?, options?, models?}` (default: one "mock-model"). */
export function normalizeProvider(p) {
  const options = clone(p.options) ?? {};
  const models = {};
  for (const [id, m] of Object.entries(p.models ?? { 'mock-model': { name: 'Mock Model' } })) {
    models[id] = defaultModel(p.id, id, m ?? {}, options.baseURL ?? '');
  }
  return { id: p.id, name: p.name ?? p.id, source: p.source ?? 'config', env: p.env ?? [], options, models };
}

/** The placeholders a command template uses ($ARGUMENTS, $1, ...), in first-use order. */
export function commandHints(template) {
  const hints = [];
  for (const m of String(template).matchAll(/\$(ARGUMENTS|\d+)/g)) if (!hints.includes(m[0])) hints.push(m[0]);
  return hints;
}

/**
 * The prompt text of a command, as OpenCode expands it: $ARGUMENTS takes the whole argument
 * string; $1..$N take words, the highest one taking the rest; without placeholders the arguments
 * follow the template after a blank line.
 */
export function expandTemplate(template, args) {
  const text = String(template ?? '');
  const argv = String(args ?? '').trim() ? String(args).trim().split(/\s+/) : [];
  if (text.includes('$ARGUMENTS')) return text.replaceAll('$ARGUMENTS', String(args ?? ''));
  const positions = [...text.matchAll(/\$(\d+)/g)].map((m) => Number(m[1]));
  if (positions.length) {
    const max = Math.max(...positions);
    return text.replace(/\$(\d+)/g, (_, n) =>
      Number(n) === max ? argv.slice(n - 1).join(' ') : argv[n - 1] ?? '');
  }
  return argv.length ? `${text}\n\n${args}` : text;
}

/** `'provider/model'` → {providerID, modelID}; anything else → undefined. */
export function parseModelString(m) {
  if (typeof m !== 'string' || !m.includes('/')) return undefined;
  const i = m.indexOf('/');
  return { providerID: m.slice(0, i), modelID: m.slice(i + 1) };
}

function normalizeCommand(c) {
  return {
    name: c.name,
    ...(c.description !== undefined ? { description: c.description } : {}),
    ...(c.agent !== undefined ? { agent: c.agent } : {}),
    ...(c.model !== undefined ? { model: c.model } : {}),
    source: c.source ?? 'command',
    template: c.template ?? '',
    ...(c.subtask !== undefined ? { subtask: c.subtask } : {}),
    hints: c.hints ?? commandHints(c.template ?? ''),
  };
}

/**
 * The catalog from the start options `commands`, `providers`, `agents`, `config` and `connected`.
 * Readers get copies; the catalog itself never changes.
 */
export function createCatalog(options = {}) {
  const commands = (options.commands ?? DEFAULT_COMMANDS).map(normalizeCommand);
  const providers = (options.providers ?? [{ id: 'mock', name: 'Mock' }]).map(normalizeProvider);
  const providerDefaults = Object.fromEntries(
    providers.filter((p) => Object.keys(p.models).length).map((p) => [p.id, Object.keys(p.models)[0]]),
  );
  const agents = options.agents ?? DEFAULT_AGENTS;
  return {
    commandList: () => clone(commands),
    command: (name) => commands.find((c) => c.name === name),
    config: () => clone(options.config ?? {}),
    providerList: () => ({ all: clone(providers), default: clone(providerDefaults), connected: options.connected ?? providers.map((p) => p.id) }),
    configProviders: () => ({ providers: clone(providers), default: clone(providerDefaults) }),
    agents: () => clone(agents),
  };
}
