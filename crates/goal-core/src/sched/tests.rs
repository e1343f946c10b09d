//! The scheduler's tests: timers, follow-ups, retries, invalidation, stop, concurrency, and the
//! liveness rules (the sweep's status replaces a remembered busy; a stuck tick is cancelled).

mod basics {
    use crate::sched::actor::TIMER_LEAD;
    use crate::sched::*;
    use crate::time::clock::now_ms;
    use parking_lot::Mutex;
    use std::sync::atomic::AtomicBool;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::Duration;

    /// A job that records when it ran and returns scripted outcomes; it can be held open.
    struct Recorder {
        runs: Mutex<Vec<(String, u32, tokio::time::Instant)>>,
        outcomes: Mutex<Vec<TickOutcome>>,
        hold: AtomicBool,
        release: tokio::sync::Notify,
        generations: Mutex<Vec<Generation>>,
    }

    impl Recorder {
        fn new(outcomes: Vec<TickOutcome>) -> Arc<Recorder> {
            Arc::new(Recorder {
                runs: Mutex::new(Vec::new()),
                outcomes: Mutex::new(outcomes),
                hold: AtomicBool::new(false),
                release: tokio::sync::Notify::new(),
                generations: Mutex::new(Vec::new()),
            })
        }
        fn count(&self) -> usize {
            self.runs.lock().len()
        }
    }

    struct Job2(Arc<Recorder>);

    impl Job for Job2 {
        fn run(&self, start: TickStart) -> TickFuture {
            let recorder = self.0.clone();
            Box::pin(async move {
                recorder.runs.lock().push((start.session_id, start.attempt, tokio::time::Instant::now()));
                recorder.generations.lock().push(start.generation);
                if recorder.hold.load(Ordering::SeqCst) {
                    recorder.release.notified().await;
                }
                let mut outcomes = recorder.outcomes.lock();
                if outcomes.is_empty() {
                    TickOutcome::Done
                } else {
                    outcomes.remove(0)
                }
            })
        }
        fn quiet(&self) -> Duration {
            Duration::from_millis(100)
        }
        fn max_attempts(&self) -> u32 {
            4
        }
    }

    fn start(recorder: &Arc<Recorder>) -> Scheduler {
        Scheduler::start(Arc::new(Job2(recorder.clone())), &tokio::runtime::Handle::current())
    }

    /// A scheduler whose job holds every run open, with one run of session `s` started.
    async fn holding_a_tick_of_s() -> (Arc<Recorder>, Scheduler) {
        let recorder = Recorder::new(vec![]);
        recorder.hold.store(true, Ordering::SeqCst);
        let scheduler = start(&recorder);
        scheduler.arm("s", "", Duration::from_millis(10), ArmMode::Replace);
        tokio::time::sleep(Duration::from_millis(20)).await;
        settle().await;
        (recorder, scheduler)
    }

    async fn settle() {
        for _ in 0..20 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn idle_rearm_replaces_and_busy_clears() {
        let recorder = Recorder::new(vec![]);
        let scheduler = start(&recorder);
        scheduler.arm("s", "/d", Duration::from_millis(100), ArmMode::Replace);
        tokio::time::sleep(Duration::from_millis(60)).await;
        scheduler.arm("s", "/d", Duration::from_millis(100), ArmMode::Replace);
        tokio::time::sleep(Duration::from_millis(60)).await;
        assert_eq!(recorder.count(), 0, "re-arm pushed the deadline out");
        tokio::time::sleep(Duration::from_millis(60)).await;
        settle().await;
        assert_eq!(recorder.count(), 1);
        scheduler.arm("s", "/d", Duration::from_millis(100), ArmMode::Replace);
        settle().await;
        scheduler.clear("s");
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_eq!(recorder.count(), 1, "busy cleared the timer");
    }

    #[tokio::test(start_paused = true)]
    async fn kickoff_modes() {
        let recorder = Recorder::new(vec![]);
        let scheduler = start(&recorder);
        scheduler.arm("s", "", Duration::from_millis(15_000), ArmMode::Replace);
        scheduler.arm("s", "", Duration::from_millis(3_000), ArmMode::IfNothingPending);
        tokio::time::sleep(Duration::from_millis(5_000)).await;
        assert_eq!(recorder.count(), 0, "a fresh kickoff never replaces a pending idle timer");
        scheduler.arm("s", "", Duration::from_millis(250), ArmMode::Earliest);
        tokio::time::sleep(Duration::from_millis(300)).await;
        settle().await;
        assert_eq!(recorder.count(), 1, "a resume kickoff replaces a longer timer");
    }

    #[tokio::test(start_paused = true)]
    async fn no_kickoff_while_busy_and_an_idle_replaces_a_pending_one() {
        let recorder = Recorder::new(vec![]);
        let scheduler = start(&recorder);
        scheduler.busy("s", "/d");
        scheduler.arm("s", "", Duration::from_millis(100), ArmMode::IfNothingPending);
        tokio::time::sleep(Duration::from_millis(500)).await;
        settle().await;
        assert_eq!(recorder.count(), 0, "a kickoff armed during a turn would fire right after it");

        // The idle ends the busy state: its quiet window applies, and a kickoff that arrives after
        // it does not shorten it.
        scheduler.idle("s", "", Duration::from_millis(1_000));
        scheduler.arm("s", "", Duration::from_millis(100), ArmMode::IfNothingPending);
        tokio::time::sleep(Duration::from_millis(900)).await;
        settle().await;
        assert_eq!(recorder.count(), 0, "the idle's quiet window holds");
        tokio::time::sleep(Duration::from_millis(200)).await;
        settle().await;
        assert_eq!(recorder.count(), 1);

        // A pending kickoff on an idle session is replaced by the idle's longer window.
        scheduler.arm("t", "", Duration::from_millis(100), ArmMode::IfNothingPending);
        scheduler.idle("t", "", Duration::from_millis(1_000));
        tokio::time::sleep(Duration::from_millis(500)).await;
        settle().await;
        assert_eq!(recorder.runs.lock().iter().filter(|r| r.0 == "t").count(), 0, "the idle replaced the kickoff");
        tokio::time::sleep(Duration::from_millis(600)).await;
        settle().await;
        assert_eq!(recorder.runs.lock().iter().filter(|r| r.0 == "t").count(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn wakeups_during_a_tick_make_exactly_one_follow_up() {
        let (recorder, scheduler) = holding_a_tick_of_s().await;
        assert_eq!(recorder.count(), 1);
        for _ in 0..5 {
            scheduler.arm("s", "", Duration::from_millis(100), ArmMode::Replace);
        }
        settle().await;
        recorder.hold.store(false, Ordering::SeqCst);
        recorder.release.notify_one();
        tokio::time::sleep(Duration::from_millis(1_000)).await;
        settle().await;
        assert_eq!(recorder.count(), 2);
        assert_eq!(scheduler.stats().follow_ups.load(Ordering::Relaxed), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn retries_back_off_and_are_bounded() {
        let recorder = Recorder::new(vec![TickOutcome::Retry; 10]);
        let scheduler = start(&recorder);
        scheduler.arm("s", "", Duration::from_millis(1), ArmMode::Replace);
        tokio::time::sleep(Duration::from_millis(3_000)).await;
        settle().await;
        let runs = recorder.runs.lock().clone();
        assert_eq!(runs.len(), 5, "first run plus four retries");
        let gaps: Vec<u128> = runs.windows(2).map(|w| (w[1].2 - w[0].2).as_millis()).collect();
        // Each timer is aimed TIMER_LEAD early (exact here: the test's clock is paused).
        let lead = TIMER_LEAD.as_millis();
        assert_eq!(gaps, vec![100 - lead, 200 - lead, 400 - lead, 800 - lead]);
        let attempts: Vec<u32> = runs.iter().map(|r| r.1).collect();
        assert_eq!(attempts, vec![0, 1, 2, 3, 4]);
        // A run that still failed after the last retry is not dropped, and never polled faster:
        // the doubling goes on to the cap (10 s) and stays there.
        tokio::time::sleep(Duration::from_millis(40_000)).await;
        settle().await;
        let runs = recorder.runs.lock().clone();
        assert_eq!(runs.len(), 11, "ten retries, then the scripted outcomes end");
        let gaps: Vec<u128> = runs.windows(2).map(|w| (w[1].2 - w[0].2).as_millis() + lead).collect();
        assert_eq!(gaps, vec![100, 200, 400, 800, 1_600, 3_200, 6_400, 10_000, 10_000, 10_000]);
        assert_eq!(runs[10].1, 10);
    }

    #[tokio::test(start_paused = true)]
    async fn user_activity_invalidates_a_running_tick() {
        let (recorder, scheduler) = holding_a_tick_of_s().await;
        let generation = recorder.generations.lock()[0].clone();
        assert!(generation.is_current());
        scheduler.user_activity("s", 0.0);
        settle().await;
        assert!(generation.is_current(), "an old message does not invalidate");
        scheduler.user_activity("s", now_ms() + 1.0);
        settle().await;
        assert!(!generation.is_current());
        recorder.release.notify_one();
    }

    #[tokio::test(start_paused = true)]
    async fn stop_ends_everything() {
        let recorder = Recorder::new(vec![]);
        let scheduler = start(&recorder);
        for i in 0..100 {
            scheduler.arm(&format!("s{i}"), "", Duration::from_millis(50), ArmMode::Replace);
        }
        settle().await;
        assert_eq!(scheduler.stats().armed.load(Ordering::Relaxed), 100);
        scheduler.stop().await;
        tokio::time::sleep(Duration::from_millis(200)).await;
        assert_eq!(recorder.count(), 0);
        assert_eq!(scheduler.stats().armed.load(Ordering::Relaxed), 0);
        scheduler.arm("late", "", Duration::from_millis(1), ArmMode::Replace);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert_eq!(recorder.count(), 0);
    }
}

mod liveness {
    use crate::sched::facts::Seen;
    use crate::sched::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    /// A job whose ticks end with a scripted outcome, or never end (`hang`).
    struct Scripted {
        runs: AtomicUsize,
        outcome: TickOutcome,
        hang: bool,
    }

    impl Job for Scripted {
        fn run(&self, start: TickStart) -> TickFuture {
            self.runs.fetch_add(1, Ordering::SeqCst);
            let (outcome, hang) = (self.outcome, self.hang);
            Box::pin(async move {
                start.watch.enter("deliver", Duration::from_secs(5));
                if hang {
                    std::future::pending::<()>().await;
                }
                outcome
            })
        }
        fn quiet(&self) -> Duration {
            Duration::from_millis(100)
        }
        fn max_attempts(&self) -> u32 {
            4
        }
        fn first_stage(&self) -> (&'static str, Duration) {
            ("observe", Duration::from_secs(10))
        }
    }

    fn scripted(outcome: TickOutcome, hang: bool) -> Arc<Scripted> {
        Arc::new(Scripted { runs: AtomicUsize::new(0), outcome, hang })
    }

    fn goal() -> (crate::record::GoalRevision, crate::record::GoalStatus) {
        let goal =
            crate::record::Goal::from_value(&serde_json::json!({"id": "g", "status": "active", "objective": "o"}))
                .unwrap();
        (goal.revision(), goal.status)
    }

    fn sighting(session: &str) -> GoalSighting {
        let (revision, status) = goal();
        GoalSighting {
            session: session.into(),
            directory: "/d".into(),
            seen: Seen::Scan(revision, status),
            arm: None,
            arm_if_changed: None,
        }
    }

    async fn settle() {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_continued_session_that_went_busy_and_lost_its_idle_is_armed_by_the_sweep_reading_it_idle() {
        let job = scripted(TickOutcome::Continued, false);
        let scheduler = Scheduler::start(job.clone(), &tokio::runtime::Handle::current());
        scheduler.arm("s", "/d", Duration::ZERO, ArmMode::Replace);
        tokio::time::sleep(Duration::from_millis(5)).await;
        settle().await;
        assert_eq!(job.runs.load(Ordering::SeqCst), 1);
        // The continuation's turn started (busy); its idle never comes.
        scheduler.busy("s", "/d");
        tokio::time::sleep(Duration::from_secs(60)).await;
        settle().await;
        assert_eq!(job.runs.load(Ordering::SeqCst), 1, "busy: nothing looks");
        assert!(scheduler.session("s").is_none(), "the view shows no tick once it ended");
        // A sweep that reads it busy changes nothing; one that reads it idle arms it.
        scheduler.swept(sighting("s"), true, Duration::from_millis(100));
        tokio::time::sleep(Duration::from_secs(1)).await;
        settle().await;
        assert_eq!(job.runs.load(Ordering::SeqCst), 1);
        scheduler.swept(sighting("s"), false, Duration::from_millis(100));
        tokio::time::sleep(Duration::from_millis(150)).await;
        settle().await;
        assert_eq!(job.runs.load(Ordering::SeqCst), 2, "the sweep's idle replaced the remembered busy");
        // The busy is forgotten: the look for a turn that never starts is armed after the
        // continuation (a remembered busy would have held it back).
        assert!(scheduler.session("s").and_then(|s| s.due_in_ms).is_some());
    }

    /// The silence watch's side of the scheduler: a session remembered busy is due a status read
    /// after `BUSY_RECHECK` while events flow and after `DOWN_RECHECK` while the stream is down,
    /// only with an active goal; a read showing it idle arms it, one showing it busy confirms it.
    #[tokio::test(start_paused = true)]
    async fn a_busy_session_whose_idle_was_lost_is_re_read_and_armed() {
        use crate::sched::silence::{BUSY_RECHECK, DOWN_RECHECK};
        let job = scripted(TickOutcome::Done, false);
        let clock = crate::time::clock::Clock::following_runtime(1_000_000.0);
        let facts = crate::sched::facts::SessionFactsView::default();
        let scheduler = Scheduler::start_with(job.clone(), &tokio::runtime::Handle::current(), facts, clock);
        scheduler.busy("s", "/d");
        scheduler.busy("nogoal", "/d");
        settle().await;
        assert!(scheduler.recheck(true).await.is_empty(), "nothing is due at once");
        tokio::time::sleep(DOWN_RECHECK).await;
        assert!(scheduler.recheck(true).await.is_empty(), "no active goal known: never read");
        scheduler.goal_seen(sighting("s"));
        settle().await;
        assert_eq!(scheduler.recheck(true).await, vec![("/d".to_string(), vec!["s".to_string()])]);
        assert!(scheduler.recheck(true).await.is_empty(), "asked for: confirmed now");
        // Still working: read again only after the flowing interval.
        scheduler.status_read("s", true, Duration::from_millis(100));
        tokio::time::sleep(BUSY_RECHECK - Duration::from_secs(1)).await;
        assert!(scheduler.recheck(false).await.is_empty());
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(scheduler.recheck(false).await.len(), 1);
        // Idle: armed once, and no longer remembered busy.
        scheduler.status_read("s", false, Duration::from_millis(100));
        tokio::time::sleep(Duration::from_millis(150)).await;
        settle().await;
        assert_eq!(job.runs.load(Ordering::SeqCst), 1, "the lost idle was found");
        tokio::time::sleep(BUSY_RECHECK).await;
        assert!(scheduler.recheck(false).await.is_empty(), "no longer busy");
        scheduler.stop().await;
        assert!(scheduler.recheck(true).await.is_empty(), "a stopped scheduler answers empty");
    }

    #[tokio::test(start_paused = true)]
    async fn a_sweep_never_arms_a_session_with_a_timer_or_a_tick() {
        let job = scripted(TickOutcome::Done, false);
        let scheduler = Scheduler::start(job.clone(), &tokio::runtime::Handle::current());
        scheduler.arm("s", "/d", Duration::from_secs(30), ArmMode::Replace);
        scheduler.swept(sighting("s"), false, Duration::from_millis(100));
        tokio::time::sleep(Duration::from_secs(1)).await;
        settle().await;
        assert_eq!(job.runs.load(Ordering::SeqCst), 0, "the pending timer stays the next look");
        assert!(scheduler.session("s").and_then(|s| s.due_in_ms).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn a_tick_past_its_stages_bounds_is_cancelled_counted_and_looked_at_again_with_backoff() {
        let job = scripted(TickOutcome::Done, true);
        let scheduler = Scheduler::start(job.clone(), &tokio::runtime::Handle::current());
        scheduler.arm("s", "/d", Duration::ZERO, ArmMode::Replace);
        tokio::time::sleep(Duration::from_secs(14)).await;
        settle().await;
        assert!(scheduler.session("s").is_some_and(|s| s.ticking), "inside 10 s + 5 s it runs on");
        assert_eq!(scheduler.snapshot().ticks_timed_out, 0);
        tokio::time::sleep(Duration::from_millis(1_020)).await;
        settle().await;
        assert_eq!(scheduler.snapshot().ticks_timed_out, 1);
        let view = scheduler.session("s").expect("a retry is armed");
        assert!(!view.ticking && view.due_in_ms.is_some() && view.attempt == 1);
        tokio::time::sleep(Duration::from_millis(200)).await;
        settle().await;
        assert_eq!(job.runs.load(Ordering::SeqCst), 2, "looked at again after the first backoff");
        scheduler.stop().await;
    }
}

mod concurrency {
    use crate::sched::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::atomic::Ordering;
    use std::sync::Arc;
    use std::time::Duration;

    /// Records how many runs overlap.
    struct CountingJob {
        running: Arc<AtomicUsize>,
        peak: Arc<AtomicUsize>,
        done: Arc<AtomicUsize>,
        limit: usize,
    }

    impl Job for CountingJob {
        fn run(&self, _start: TickStart) -> TickFuture {
            let (running, peak, done) = (self.running.clone(), self.peak.clone(), self.done.clone());
            Box::pin(async move {
                let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                peak.fetch_max(now, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(5)).await;
                running.fetch_sub(1, Ordering::SeqCst);
                done.fetch_add(1, Ordering::SeqCst);
                TickOutcome::Done
            })
        }
        fn quiet(&self) -> Duration {
            Duration::from_millis(10)
        }
        fn max_attempts(&self) -> u32 {
            4
        }
        fn max_concurrent(&self) -> usize {
            self.limit
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_burst_of_wake_ups_runs_every_tick_but_never_more_than_the_limit_at_once() {
        let job = CountingJob { running: Arc::default(), peak: Arc::default(), done: Arc::default(), limit: 4 };
        let (peak, done) = (job.peak.clone(), job.done.clone());
        let scheduler = Scheduler::start(Arc::new(job), &tokio::runtime::Handle::current());
        for index in 0..40 {
            scheduler.arm(&format!("ses_{index}"), "/tmp/project", Duration::ZERO, ArmMode::Replace);
        }
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while done.load(Ordering::SeqCst) < 40 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(done.load(Ordering::SeqCst), 40, "every fired tick ran");
        assert_eq!(peak.load(Ordering::SeqCst), 4, "never more than the limit at once");
        assert_eq!(scheduler.stats().ticks.load(Ordering::Relaxed), 40);
        scheduler.stop().await;
    }
}
