//! What a tick reads before it decides: `observe` reads the session, its goal and live state;
//! `evidence` gathers the digest of the turns since the last audit and records the trail.

pub mod evidence;
pub mod observe;
