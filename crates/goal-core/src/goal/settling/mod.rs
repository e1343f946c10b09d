//! Ending or pausing a goal and saying so: the status write (`settle`), the notification
//! (`notify`), the audit trail (`trail`), the cause table (`causes`) and the operator's console
//! lines (`operator`).

pub mod causes;
pub mod notify;
pub mod operator;
pub mod settle;
pub mod trail;
