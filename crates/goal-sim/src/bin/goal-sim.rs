//! `goal-sim`: runs the simulator (`npm run sim -- …`).
//!
//! - `goal-sim --seeds N [--from S] [--jobs J]`: seeds S..S+N (default 10,000 from 1, on every
//!   core); exits 1 at a broken promise, printing the seed, its replay command and the shrunk
//!   world's trace.
//! - `goal-sim --seed S`: one world, its trace printed (`--no-shrink`: the world as drawn, not
//!   shrunk); `--mutation NAME` plants a defect; `GOAL_SIM_LOG=debug` adds the loop's log lines,
//!   `GOAL_SIM_FULL_TRACE=1` prints every step of a long trace.
//! - `goal-sim --mutate [--seeds N]`: each planted defect must be caught within the seeds.

use std::process::ExitCode;

use goal_sim::{run_seeds, run_world, shrunk, Failure, Mutation, Summary, World};

/// Steps of a trace printed in full; a longer one prints its first and last ones.
const TRACE_LINES: usize = 80;

struct Args {
    seeds: u64,
    from: u64,
    jobs: usize,
    seed: Option<u64>,
    mutate: bool,
    mutation: Option<Mutation>,
    quiet: bool,
    no_shrink: bool,
}

fn parse(args: &[String]) -> Result<Args, String> {
    let jobs = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(2);
    let mut parsed = Args {
        seeds: 10_000,
        from: 1,
        jobs,
        seed: None,
        mutate: false,
        mutation: None,
        quiet: false,
        no_shrink: false,
    };
    let mut iter = args.iter();
    while let Some(arg) = iter.next() {
        let mut value = |name: &str| iter.next().ok_or(format!("{name} needs a value"));
        let number = |text: &String, name: &str| {
            text.replace('_', "").parse::<u64>().map_err(|_| format!("{name} takes a number, not {text:?}"))
        };
        match arg.as_str() {
            "--seeds" => parsed.seeds = number(value("--seeds")?, "--seeds")?,
            "--from" => parsed.from = number(value("--from")?, "--from")?,
            "--jobs" => parsed.jobs = number(value("--jobs")?, "--jobs")?.max(1) as usize,
            "--seed" => parsed.seed = Some(number(value("--seed")?, "--seed")?),
            "--mutate" => parsed.mutate = true,
            "--quiet" => parsed.quiet = true,
            "--no-shrink" => parsed.no_shrink = true,
            "--mutation" => {
                let name = value("--mutation")?;
                let known: Vec<&str> = Mutation::ALL.iter().map(|(m, _)| m.name()).collect();
                parsed.mutation =
                    Some(Mutation::named(name).ok_or(format!("no mutation {name:?} (known: {})", known.join(", ")))?);
            }
            "--help" | "-h" => return Err(String::new()),
            other => return Err(format!("unknown option {other:?}")),
        }
    }
    Ok(parsed)
}

fn main() -> ExitCode {
    if let Ok(filter) = std::env::var("GOAL_SIM_LOG") {
        let filter = tracing_subscriber::EnvFilter::new(format!("session_goal={filter}"));
        tracing_subscriber::fmt().with_env_filter(filter).without_time().with_target(false).init();
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = match parse(&args) {
        Ok(args) => args,
        Err(problem) => {
            if !problem.is_empty() {
                eprintln!("goal-sim: {problem}");
            }
            eprintln!(
                "usage: goal-sim [--seeds N] [--from S] [--jobs J] | --seed S [--mutation NAME] | --mutate [--seeds N]"
            );
            return ExitCode::from(2);
        }
    };
    if let Some(seed) = args.seed {
        return replay(seed, args.mutation, args.no_shrink);
    }
    if args.mutate {
        return mutate(&args);
    }
    let summary = run_seeds(args.from, args.seeds, args.jobs, args.mutation);
    print_summary(&summary, args.mutation);
    match &summary.failure {
        Some(failure) => {
            print_failure(failure, args.mutation);
            ExitCode::FAILURE
        }
        None => ExitCode::SUCCESS,
    }
}

fn print_summary(summary: &Summary, mutation: Option<Mutation>) {
    let planted = mutation.map(|m| format!(" with {} planted", m.name())).unwrap_or_default();
    println!(
        "simulator: {} seeds{planted} in {:.1} s on the wall clock; {:.1} simulated hours; {} of {} goals settled; {} crossed writes of two hosts; {} paused at a person's request; {} wrap-ups posted, {} steady goals stopped by a limit after theirs; {}",
        summary.seeds,
        summary.wall.as_secs_f64(),
        summary.simulated_ms as f64 / 3_600_000.0,
        summary.settled,
        summary.goals,
        summary.crossed_writes,
        summary.person_pauses,
        summary.wrap_ups,
        summary.handoffs,
        if summary.failure.is_some() { "a promise broke" } else { "every promise held" }
    );
}

fn print_failure(failure: &Failure, mutation: Option<Mutation>) {
    let planted = mutation.map(|m| format!(" --mutation {}", m.name())).unwrap_or_default();
    println!("seed {} broke invariant ({}): {}", failure.seed, failure.violation.invariant, failure.violation.detail);
    println!("replay: npm run sim -- --seed {}{planted}", failure.seed);
    println!("shrunk world: {}", failure.shrunk.describe());
    for disturbance in &failure.shrunk.disturbances {
        println!("  at {} ms: {:?}", disturbance.at_ms, disturbance.what);
    }
    print_trace(&failure.steps);
}

fn print_trace(steps: &[(u64, String)]) {
    println!("trace ({} steps):", steps.len());
    let full = std::env::var_os("GOAL_SIM_FULL_TRACE").is_some();
    let shown: Vec<&(u64, String)> = if full || steps.len() <= TRACE_LINES {
        steps.iter().collect()
    } else {
        steps.iter().take(TRACE_LINES / 4).chain(steps.iter().skip(steps.len() - TRACE_LINES * 3 / 4)).collect()
    };
    for (index, (at, what)) in shown.iter().enumerate() {
        if !full && steps.len() > TRACE_LINES && index == TRACE_LINES / 4 {
            println!("  … {} steps …", steps.len() - TRACE_LINES);
        }
        println!("  {at:>8} ms  {what}");
    }
}

fn replay(seed: u64, mutation: Option<Mutation>, no_shrink: bool) -> ExitCode {
    let world = goal_sim::mutation::applied(World::draw(seed), mutation);
    println!("seed {seed}: {}", world.describe());
    let outcome = run_world(&world, true);
    match outcome.violations.first() {
        None => {
            print_trace(&outcome.steps);
            println!(
                "seed {seed}: every promise held ({} goals settled, {} simulated s)",
                outcome.settled,
                outcome.simulated_ms / 1000
            );
            ExitCode::SUCCESS
        }
        Some(violation) if no_shrink => {
            print_trace(&outcome.steps);
            println!("seed {seed} broke invariant ({}): {}", violation.invariant, violation.detail);
            ExitCode::FAILURE
        }
        Some(violation) => {
            print_failure(&shrunk(seed, violation.clone(), mutation), mutation);
            ExitCode::FAILURE
        }
    }
}

fn mutate(args: &Args) -> ExitCode {
    let mut missed = Vec::new();
    for (mutation, invariant) in Mutation::ALL {
        let summary = run_seeds(args.from, args.seeds, args.jobs, Some(mutation));
        match &summary.failure {
            Some(failure) if failure.violation.invariant == invariant => println!(
                "mutation {}: caught by seed {} as ({invariant}), shrunk trace of {} steps, after {} seeds",
                mutation.name(),
                failure.seed,
                failure.steps.len(),
                summary.seeds
            ),
            Some(failure) => {
                println!(
                    "mutation {}: seed {} broke ({}), not ({invariant})",
                    mutation.name(),
                    failure.seed,
                    failure.violation.invariant
                );
                missed.push(mutation.name());
            }
            None => {
                println!("mutation {}: NOT caught in {} seeds", mutation.name(), summary.seeds);
                missed.push(mutation.name());
            }
        }
        if !args.quiet {
            if let Some(failure) = &summary.failure {
                println!("  {}", failure.violation.detail);
            }
        }
    }
    if missed.is_empty() {
        println!("mutation check: every planted defect was caught");
        ExitCode::SUCCESS
    } else {
        println!("mutation check: not caught as its invariant: {}", missed.join(", "));
        ExitCode::FAILURE
    }
}
