//! The tables the bench prints, and the contended-add measurement behind its projection.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread;

use crate::settings::Settings;
use crate::{together, Family, Figure, Row, Timed, BARE, CATCH_PANIC, FAULTLINE};

pub(crate) fn print_scaling(rows: &[&dyn Row], figures: &[[Figure; 2]], rounds: usize) {
    println!(
        "\n### (a) ns per request (best of {rounds} rounds), and throughput with a second thread\n"
    );
    println!("| row | 1 thread | 2 threads | throughput 2 threads ÷ 1 thread | median ÷ best round (1 / 2 threads) | waiting for a CPU in the best round |");
    println!("|---|---:|---:|---:|---:|---:|");
    for (row, [one, two]) in rows.iter().zip(figures) {
        println!(
            "| {} | {:.1} | {:.1} | {:.2}× | {:.2} / {:.2} | {} / {} |",
            row.name(),
            one.best,
            two.best,
            one.best / two.best,
            one.noise(),
            two.noise(),
            one.waited(),
            two.waited()
        );
    }
}

pub(crate) fn print_ratios(families: &[Family], figures: &[[Figure; 2]]) {
    println!("\n### (b) faultline ÷ the same service without it, ns per request (best rounds)\n");
    println!("| ratio | 1 thread | 2 threads |");
    println!("|---|---:|---:|");
    for (f, (family, _)) in families.iter().enumerate() {
        let cells = &figures[f * 3..f * 3 + 3];
        for (against, name) in [(CATCH_PANIC, "CatchPanicLayer"), (BARE, "bare")] {
            let ratio = |t: usize| cells[FAULTLINE][t].best / cells[against][t].best;
            println!(
                "| {family}: faultline ÷ {name} | {:.2}× | {:.2}× |",
                ratio(0),
                ratio(1)
            );
        }
    }
    // The facade rows follow the families' rows, one per family from the first.
    let facade = &figures[families.len() * 3..];
    for (f, with) in facade.iter().enumerate() {
        let without = &figures[f * 3 + FAULTLINE];
        let ratio = |t: usize| with[t].best / without[t].best;
        println!(
            "| {}: faultline + metrics facade ÷ faultline | {:.2}× (+{:.1} ns) | {:.2}× (+{:.1} ns) |",
            families[f].0,
            ratio(0),
            with[0].best - without[0].best,
            ratio(1),
            with[1].best - without[1].best
        );
    }
}

pub(crate) fn print_allocations(rows: &[&dyn Row], requests: u64) {
    println!("\n### (c) heap allocations per request ({requests} requests per row, one thread, untimed)\n");
    println!("| row | allocations | reallocations | bytes allocated |");
    println!("|---|---:|---:|---:|");
    for row in rows {
        let counted = row.count_allocations(requests);
        let per = |n: u64| n as f64 / requests as f64;
        println!(
            "| {} | {:.2} | {:.2} | {:.0} |",
            row.name(),
            per(counted.allocations),
            per(counted.reallocations),
            per(counted.bytes)
        );
    }
}

/// A counter alone on its cache line (128 bytes: adjacent-line prefetch pairs 64-byte lines).
#[repr(align(128))]
#[derive(Default)]
struct Line(AtomicU64);

/// `adds` relaxed adds from each of `counters.len()` threads at once.
fn add_from_threads(counters: &[&AtomicU64], adds: u64) -> Timed {
    together(counters.len(), |t| {
        let counter = black_box(counters[t]);
        for _ in 0..adds {
            counter.fetch_add(1, Ordering::Relaxed);
        }
    })
}

pub(crate) fn print_atomics(settings: &Settings) {
    let lines = [Line::default(), Line::default()];
    let (a, b) = (&lines[0].0, &lines[1].0);
    let cases: [(&str, Vec<&AtomicU64>); 3] = [
        ("one thread alone", vec![a]),
        ("two threads, each on its own 128-byte line", vec![a, b]),
        ("two threads, one shared line", vec![a, a]),
    ];
    let rounds = settings.rounds.min(10);
    let mut rounds_of = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        for (case, (_, counters)) in cases.iter().enumerate() {
            lines
                .iter()
                .for_each(|line| line.0.store(0, Ordering::Relaxed));
            let timed = add_from_threads(counters, settings.adds);
            let total: u64 = lines
                .iter()
                .map(|line| line.0.load(Ordering::Relaxed))
                .sum();
            assert_eq!(total, settings.adds * counters.len() as u64, "lost adds");
            rounds_of[case].push(timed.per(settings.adds));
        }
    }
    let figures: Vec<Figure> = rounds_of.into_iter().map(Figure::of).collect();
    println!(
        "\n### (d) one relaxed `fetch_add`, {} per thread, best of {rounds} rounds\n",
        settings.adds
    );
    println!(
        "| adds | ns per add (each thread) | adds per µs (all threads) | ÷ one thread alone | waiting for a CPU |"
    );
    println!("|---|---:|---:|---:|---:|");
    for ((name, counters), figure) in cases.iter().zip(&figures) {
        println!(
            "| {name} | {:.2} | {:.1} | {:.2}× | {} |",
            figure.best,
            1_000.0 * counters.len() as f64 / figure.best,
            figure.best / figures[0].best,
            figure.waited()
        );
    }
    println!(
        "\nOne shared line ÷ separate lines: {:.2}× per add ({}).",
        figures[2].best / figures[1].best,
        machine()
    );
}

/// The CPUs, which of them share a core and how busy they are, where Linux says so.
pub(crate) fn machine() -> String {
    let cpus = thread::available_parallelism().map_or(1, |n| n.get());
    let siblings: Vec<String> = (0..cpus)
        .filter_map(|cpu| {
            let path = format!("/sys/devices/system/cpu/cpu{cpu}/topology/thread_siblings_list");
            std::fs::read_to_string(path).ok()
        })
        .map(|list| format!("[{}]", list.trim()))
        .collect();
    let mut machine = format!("{cpus} CPUs");
    if !siblings.is_empty() {
        machine += &format!(", SMT siblings {}", siblings.join(" "));
    }
    if let Ok(load) = std::fs::read_to_string("/proc/loadavg") {
        let load: Vec<&str> = load.split_whitespace().take(3).collect();
        machine += &format!(", load average {}", load.join(" "));
    }
    machine
}
