//! The values the binding hands to JavaScript: typed answers (explain, history), the small-model
//! contract, notifications, snapshots and the event stream's status. Options (what JavaScript
//! hands in) live in `options/`; a goal's settings, and the goal record they are part of, in
//! `goal_settings.rs`.

pub mod answers;
pub mod explanation;
pub mod goal_parts;
pub mod notification;
pub mod nullable;
pub mod small_model;
pub mod snapshot;
pub mod stored_fields;
pub mod stream_status;
