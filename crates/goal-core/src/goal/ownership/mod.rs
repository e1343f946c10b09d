//! The ownership stage, first in a tick: a goal belongs to one session. `lineage` holds the
//! pure rules (a fork's copy, the owner's stamp), `owner_scan` reads the session list that
//! tells which session first carried a goal (one list per directory in flight, its backoff
//! planned by the pure `list_rules`), `list_gate` holds the one backoff every session list of a
//! directory shares (owner lists, the sweep, the recovery scan), and `adopt` makes a copy this
//! session's own.

pub mod adopt;
pub mod lineage;
pub mod list_gate;
pub mod list_rules;
pub mod owner_scan;
