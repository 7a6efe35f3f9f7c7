//! The command line of the bench: which rows, how long, how many rounds.

use std::time::Duration;

pub(crate) const USAGE: &str = "usage: cargo bench --bench ledger [-- --quick | \
                     --warm-up-time SECONDS | --measurement-time SECONDS | \
                     --grind ROW REQUESTS] [FILTER]";

/// How long each cell warms up and is measured, and how much the untimed passes do.
pub(crate) struct Settings {
    pub(crate) mode: &'static str,
    /// A filter given to `cargo bench` that does not name this bench, which then runs nothing.
    pub(crate) filtered_out: Option<String>,
    pub(crate) warm_up: Duration,
    pub(crate) measurement: Duration,
    pub(crate) rounds: usize,
    /// Requests per row in the pass that counts allocations.
    pub(crate) counted_requests: u64,
    /// Atomic adds per thread in each round of the contention figures.
    pub(crate) adds: u64,
    /// Only send this many requests to the row of this index, untimed, from one thread: a
    /// run for callgrind to count the instructions of (`load-scripts/bench/ledger-grind.sh`).
    pub(crate) grind: Option<(usize, u64)>,
}

impl Settings {
    pub(crate) fn full() -> Self {
        Self {
            mode: "full",
            filtered_out: None,
            warm_up: Duration::from_secs(1),
            measurement: Duration::from_secs(4),
            rounds: 20,
            counted_requests: 10_000,
            adds: 10_000_000,
            grind: None,
        }
    }

    pub(crate) fn quick() -> Self {
        Self {
            mode: "quick",
            filtered_out: None,
            warm_up: Duration::from_millis(100),
            measurement: Duration::from_millis(500),
            rounds: 5,
            counted_requests: 10_000,
            adds: 5_000_000,
            grind: None,
        }
    }

    /// Without `--bench` (`cargo test --benches`), a smoke run: every row and check, briefly.
    pub(crate) fn smoke() -> Self {
        Self {
            mode: "smoke (no --bench)",
            filtered_out: None,
            warm_up: Duration::ZERO,
            measurement: Duration::from_millis(20),
            rounds: 2,
            counted_requests: 1_000,
            adds: 10_000,
            grind: None,
        }
    }

    pub(crate) fn from_args(mut args: impl Iterator<Item = String>) -> Result<Self, String> {
        let (mut bench, mut quick, mut warm_up, mut measurement) = (false, false, None, None);
        let mut filters = Vec::new();
        let mut grind = None;
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--bench" => bench = true,
                "--quick" => quick = true,
                "--warm-up-time" => warm_up = Some(seconds(args.next())?),
                "--measurement-time" => measurement = Some(seconds(args.next())?),
                "--grind" => grind = Some((number(args.next())?, number(args.next())?)),
                "--help" | "-h" => return Err(USAGE.to_owned()),
                other if other.starts_with('-') => {
                    return Err(format!("unknown argument `{other}`\n{USAGE}"))
                }
                filter => filters.push(filter.to_owned()),
            }
        }
        let mut settings = match (bench, quick) {
            (_, true) => Self::quick(),
            (true, false) => Self::full(),
            (false, false) => Self::smoke(),
        };
        if warm_up.is_some() || measurement.is_some() {
            settings.mode = "custom";
        }
        settings.warm_up = warm_up.unwrap_or(settings.warm_up);
        settings.measurement = measurement.unwrap_or(settings.measurement);
        settings.grind = grind;
        if !filters.is_empty() && !filters.iter().any(|f| "ledger".contains(f.as_str())) {
            settings.filtered_out = Some(filters.join(" "));
        }
        Ok(settings)
    }
}

fn number<T: std::str::FromStr>(value: Option<String>) -> Result<T, String> {
    let value = value.ok_or_else(|| format!("a number is missing\n{USAGE}"))?;
    value
        .parse()
        .map_err(|_| format!("`{value}` is not a whole number\n{USAGE}"))
}

fn seconds(value: Option<String>) -> Result<Duration, String> {
    let value = value.ok_or_else(|| format!("a number of seconds is missing\n{USAGE}"))?;
    value
        .parse::<f64>()
        .ok()
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .ok_or_else(|| format!("`{value}` is not a number of seconds\n{USAGE}"))
}
