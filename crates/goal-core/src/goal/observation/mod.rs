//! What a tick reads before it decides: `observe` reads the session, its goal and live state;
//! a goal waiting on a failing request says so (`waiting`, with its pure `wait_rules`).

pub mod observe;
