//! Blocking file work (objective files, the audit trail, the settings file), a few jobs at a
//! time for the whole process.
//!
//! Every file call runs on tokio's blocking pool, and that pool starts a thread for each job that
//! finds no idle one. A burst of ticks (10,000 sessions going idle together in the scale bench)
//! then ran dozens of file jobs at once: up to 30 pool threads, each with its stack and glibc
//! allocator arena kept after the burst, and more of them the busier the machine was. Holding the
//! jobs to [`FILE_JOBS_AT_ONCE`] keeps the pool at that many threads; a file job takes
//! microseconds, so waiting for a slot costs the loop nothing it would notice.

use std::time::Duration;

use tokio::sync::Semaphore;

/// File jobs that may run at once in this process (all runtimes together).
pub const FILE_JOBS_AT_ONCE: usize = 2;

/// How long a caller waits for its file job, slot and run together. Past it the caller gets
/// `None`, as for an unreadable file: a hung file system (a dead network mount) must not hold a
/// control call or a write for ever. The job itself cannot be stopped; it keeps its slot until
/// it returns, so later jobs wait their own deadline and fail the same way.
pub const FILE_JOB_DEADLINE: Duration = Duration::from_secs(10);

static SLOTS: Semaphore = Semaphore::const_new(FILE_JOBS_AT_ONCE);

/// Runs `job` on the blocking pool once a slot is free; `None` when the job panicked or did not
/// end within [`FILE_JOB_DEADLINE`]. The slot is held by the job itself, so a caller that stops
/// waiting (a cancelled tick, the deadline) does not free it while the job still runs.
pub async fn run<T: Send + 'static>(job: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    run_within(FILE_JOB_DEADLINE, job).await
}

async fn run_within<T: Send + 'static>(deadline: Duration, job: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let waited = tokio::time::timeout(deadline, async {
        // The semaphore is never closed: acquiring only waits.
        let slot = SLOTS.acquire().await.ok()?;
        tokio::task::spawn_blocking(move || {
            let _slot = slot;
            job()
        })
        .await
        .ok()
    });
    waited.await.ok().flatten()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn at_most_the_slots_run_at_once() {
        let (running, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let jobs: Vec<_> = (0..40)
            .map(|n| {
                let (running, most) = (running.clone(), most.clone());
                tokio::spawn(run(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(std::time::Duration::from_millis(2));
                    running.fetch_sub(1, Ordering::SeqCst);
                    n
                }))
            })
            .collect();
        let mut done = Vec::new();
        for job in jobs {
            done.push(job.await.unwrap().expect("the job ran"));
        }
        assert_eq!(done, (0..40).collect::<Vec<_>>());
        let most = most.load(Ordering::SeqCst);
        assert!((1..=FILE_JOBS_AT_ONCE).contains(&most), "{most} jobs ran at once");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_caller_whose_job_cannot_run_in_time_gets_none() {
        // Both slots held by jobs that stay blocked until released (a hung file system).
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        let blocked = Arc::new(std::sync::Mutex::new(blocked));
        let started = Arc::new(AtomicUsize::new(0));
        let holders: Vec<_> = (0..FILE_JOBS_AT_ONCE)
            .map(|_| {
                let (blocked, started) = (blocked.clone(), started.clone());
                tokio::spawn(run(move || {
                    started.fetch_add(1, Ordering::SeqCst);
                    let _ = blocked.lock().map(|rx| rx.recv_timeout(std::time::Duration::from_secs(5)));
                }))
            })
            .collect();
        // Other tests share the slots: wait until both holders run.
        let wait_until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while started.load(Ordering::SeqCst) < FILE_JOBS_AT_ONCE && std::time::Instant::now() < wait_until {
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        // One holder waits on the channel, the other on its lock: both hold a slot.
        assert_eq!(started.load(Ordering::SeqCst), FILE_JOBS_AT_ONCE, "both holders run");
        let at = std::time::Instant::now();
        assert_eq!(run_within(std::time::Duration::from_millis(50), || 1).await, None);
        assert!(at.elapsed() < std::time::Duration::from_secs(2), "the caller stopped waiting at its deadline");
        for _ in 0..FILE_JOBS_AT_ONCE {
            release.send(()).unwrap();
        }
        for holder in holders {
            holder.await.unwrap();
        }
        assert_eq!(run(|| 2).await, Some(2), "the slots are free again");
    }

    #[tokio::test]
    async fn a_panicking_job_is_none_and_frees_its_slot() {
        assert_eq!(run(|| -> u8 { panic!("job failed") }).await, None);
        for _ in 0..FILE_JOBS_AT_ONCE + 1 {
            assert_eq!(run(|| 7).await, Some(7));
        }
    }
}
