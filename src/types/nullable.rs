//! `Nullable<T>`: a field JavaScript sees as `T | null`, never absent. `Option<T>` leaves the key
//! out; the explain report promises `null` where a part is unknown (docs/causes.md).

use napi::bindgen_prelude::{Null, ToNapiValue};
use napi::sys;

/// A value or `null`.
#[derive(Debug, Default)]
pub struct Nullable<T>(pub Option<T>);

impl<T: ToNapiValue> ToNapiValue for Nullable<T> {
    unsafe fn to_napi_value(env: sys::napi_env, value: Self) -> napi::Result<sys::napi_value> {
        match value.0 {
            // SAFETY: the caller's `env` is passed on unchanged, as napi's own wrappers do.
            Some(inner) => unsafe { T::to_napi_value(env, inner) },
            // SAFETY: as above.
            None => unsafe { Null::to_napi_value(env, Null) },
        }
    }
}
