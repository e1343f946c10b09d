// Types of the package entry (runtime.js). The native API and its documentation are generated
// into index.d.ts by @napi-rs/cli; this file re-exports them and adds the JavaScript helpers.
export * from './index'
