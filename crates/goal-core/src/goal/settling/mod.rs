//! Ending, pausing or holding a goal and saying so: the status write (`settle`), the
//! notification (`notify`), the audit trail (`trail`), the cause table (`causes`), the operator's
//! console lines (`operator`), and the cause of a goal whose tick waits on a failing request
//! (`waiting`, with its pure `wait_rules`; written by the ownership and observe stages alike).

pub mod causes;
pub mod notify;
pub mod operator;
pub mod settle;
pub mod trail;
pub mod wait_rules;
pub mod waiting;
