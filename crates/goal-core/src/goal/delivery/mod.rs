//! Sending a continuation exactly once: the turn reserved in the record (`reserve`), the deliver
//! stage's post under an idempotent id (`deliver`, with the id and the post in `dispatch`), and
//! the reservation's echo watched for a lost update (`echo_watch`) with the reactions to it
//! (`echo`); a message stored but never answered is posted again under its own ids (`strand`,
//! with its pure `strand_rules`). The ids this runtime posted are kept (`own_posts`), so their
//! events are never taken for the user's activity.

pub mod deliver;
pub mod dispatch;
pub mod echo;
pub mod echo_watch;
pub mod own_posts;
pub mod reserve;
pub mod strand;
pub mod strand_rules;
