// The package's public names come from one list, lib/exports.json: the CommonJS entry, the ESM
// entry and both declaration files must each offer exactly those values, and nothing internal.
import { describe, expect, it } from 'vitest'
import { createRequire } from 'node:module'
import fs from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'
import * as esm from '../runtime.mjs'

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
const listed = require('../lib/exports.json').exports
const names = listed.map((entry) => entry.name).sort()

// The value names a declaration file exports, as the TypeScript checker sees them. `typeof` a
// namespace import also shows names re-exported with `export type`, so each candidate is then
// imported by name and used as a value: the checker refuses the type-only ones (TS1361/TS1362).
// The checks share the files they parse (the TypeScript library, index.d.ts): parsing them is
// most of the cost, and four checks that each parsed them took over 30 s on a loaded machine.
const parsedFiles = new Map()
function declaredValues(entryFile) {
  const probe = path.join(root, `__exports_probe_${entryFile.replace(/\W/g, '_')}.ts`)
  const check = (source) => {
    const options = { strict: true, noEmit: true, skipDefaultLibCheck: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, types: [] }
    const host = ts.createCompilerHost(options)
    const readFile = host.readFile.bind(host)
    host.readFile = (file) => (path.resolve(file) === probe ? source : readFile(file))
    const fileExists = host.fileExists.bind(host)
    host.fileExists = (file) => path.resolve(file) === probe || fileExists(file)
    const getSourceFile = host.getSourceFile.bind(host)
    host.getSourceFile = (file, ...rest) => {
      if (path.resolve(file) === probe) return getSourceFile(file, ...rest)
      if (!parsedFiles.has(file)) parsedFiles.set(file, getSourceFile(file, ...rest))
      return parsedFiles.get(file)
    }
    const program = ts.createProgram([probe], options, host)
    return { program, diagnostics: ts.getPreEmitDiagnostics(program) }
  }
  const first = check(`import * as entry from './${entryFile}'\nexport const probe = entry\n`)
  const checker = first.program.getTypeChecker()
  const statement = first.program.getSourceFile(probe).statements.find(ts.isVariableStatement)
  const candidates = checker
    .getTypeAtLocation(statement.declarationList.declarations[0].name)
    .getProperties()
    .map((symbol) => symbol.name)
    .filter((name) => name !== 'default')
  const reads = candidates.map((name) => `export const read_${name} = ${name}\n`).join('')
  const second = check(`import { ${candidates.join(', ')} } from './${entryFile}'\n${reads}`)
  const notValues = new Set()
  const diagnostics = []
  for (const diagnostic of second.diagnostics) {
    const text = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')
    const refused = (diagnostic.code === 1361 || diagnostic.code === 1362) && /^'(\w+)' cannot be used as a value/.exec(text)
    if (refused) notValues.add(refused[1])
    else diagnostics.push(text)
  }
  return { values: candidates.filter((name) => !notValues.has(name)).sort(), diagnostics: [...first.diagnostics.map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')), ...diagnostics] }
}

describe('one list of public names (lib/exports.json)', () => {
  it('lists each name once, with a kind and a summary, OpenChamber\'s drop-in names among them', () => {
    expect(new Set(names).size).toBe(names.length)
    for (const entry of listed) {
      expect(['function', 'class', 'object'], entry.name).toContain(entry.kind)
      expect(entry.summary.length, entry.name).toBeGreaterThan(10)
    }
    const dropIn = listed.filter((entry) => entry.dropIn).map((entry) => entry.name).sort()
    expect(dropIn).toEqual(['buildGoalIntroText', 'createSessionAssistRuntime', 'createSessionGoal', 'createSessionGoalRuntime', 'registerSessionGoalRoutes'])
  })

  it('the CommonJS entry exports exactly the list, each of its kind', () => {
    const cjs = require('../runtime.js')
    expect(Object.keys(cjs).sort()).toEqual(names)
    for (const entry of listed) expect(typeof cjs[entry.name], entry.name).toBe(entry.kind === 'object' ? 'object' : 'function')
    for (const internal of ['__napiBindingTarget', 'createGoalControl', 'readObjectiveFile', 'writeObjectiveFile', 'deleteObjectiveFile', 'GoalControl', 'SessionGoalRuntime']) {
      expect(cjs, internal).not.toHaveProperty(internal)
    }
  })

  it('the ESM entry exports exactly the list, the same values', () => {
    const cjs = require('../runtime.js')
    expect(Object.keys(esm).filter((name) => name !== 'default').sort()).toEqual(names)
    // vitest's module runner may load runtime.js twice; compare kinds here (the install test
    // checks identity under Node's own loader).
    for (const name of names) expect(typeof esm[name], name).toBe(typeof cjs[name])
  })

  it('runtime.d.ts and runtime.d.mts declare exactly the listed values, and type-check', () => {
    for (const entryFile of ['runtime.js', 'runtime.mjs']) {
      const { values, diagnostics } = declaredValues(entryFile)
      expect(diagnostics, entryFile).toEqual([])
      expect(values, entryFile).toEqual(names)
    }
  })

  it('every listed name is documented in docs/api.md', () => {
    const api = fs.readFileSync(path.join(root, 'docs', 'api.md'), 'utf8')
    for (const name of names) expect(api, name).toContain(`\`${name}`)
  })
})
