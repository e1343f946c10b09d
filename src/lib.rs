//! napi binding (being written).
