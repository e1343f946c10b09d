// The project's files as `GET /file?path=<dir>` lists them (OpenCode 1.18.33): a test names the
// files of a directory (mock.setFiles), and the route answers one directory's entries
// [{name, path, absolute, type: 'file' | 'directory', ignored}] (a directory's `path` ends with
// '/'), with 500 for a path that is not a directory of the project, as OpenCode does.
import { HttpError } from './common.mjs';

const unknownError = () =>
  new HttpError(500, { name: 'UnknownError', data: { message: 'Unexpected server error. Check server logs for details.' } });

// A path relative to the project root, without './', leading or trailing '/' ('' is the root).
function relative(directory, path) {
  let p = String(path ?? '');
  const root = directory.replace(/\/+$/, '');
  if (p === root) return '';
  if (p.startsWith(`${root}/`)) p = p.slice(root.length + 1);
  else if (p.startsWith('/')) return null;
  p = p.replace(/^(\.\/)+/, '').replace(/^\.$/, '').replace(/\/+$/, '');
  if (p.split('/').includes('..')) return null;
  return p;
}

export function createFiles() {
  const trees = new Map(); // directory -> Set of relative file paths

  /** Sets the files of a project directory (relative paths; null removes them). */
  function set(directory, paths) {
    if (paths === null || paths === undefined) trees.delete(directory);
    else trees.set(directory, new Set(paths.map((p) => relative(directory, p)).filter(Boolean)));
  }

  /** GET /file?path=: the entries of one directory, or a 500 HttpError. */
  function list(directory, path) {
    const dir = relative(directory, path);
    if (dir === null) throw unknownError();
    const files = [...(trees.get(directory) ?? [])];
    const prefix = dir === '' ? '' : `${dir}/`;
    const inside = files.filter((f) => f.startsWith(prefix));
    if (dir !== '' && inside.length === 0) throw unknownError();
    const entries = new Map();
    for (const file of inside) {
      const rest = file.slice(prefix.length);
      const [name, ...deeper] = rest.split('/');
      const type = deeper.length ? 'directory' : 'file';
      const rel = `${prefix}${name}${type === 'directory' ? '/' : ''}`;
      entries.set(name, { name, path: rel, absolute: `${directory.replace(/\/+$/, '')}/${prefix}${name}`, type, ignored: false });
    }
    return [...entries.values()].sort((a, b) => (a.type === b.type ? a.name.localeCompare(b.name) : a.type === 'directory' ? -1 : 1));
  }

  return { set, list };
}
