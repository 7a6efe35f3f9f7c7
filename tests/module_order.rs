//! The library's top-level modules form layers in the order `src/lib.rs` declares them: a
//! module uses only modules declared before it, so the graph between them has no cycle.
//!
//! The graph is read from the code by the `module-order` crate (`tests/module-order`), the
//! one reader of both this crate and the reference service: every `crate::…` and
//! climbing `super::…` path is an edge, comments and strings are not, and unit-test files
//! (`tests.rs`) are skipped. A new import against the order fails here with the edge that
//! broke it, the file and the line.
//!
//! Inside a layer, privacy keeps the order: each folder's modules are private, and its
//! `mod.rs` re-exports what the rest of the crate may use.

use std::fs;
use std::path::{Path, PathBuf};

use module_order::{folders_below, graph, graph_with_planted, wider_than_private, Graph};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn lib_rs_declares_the_layers_ground_first() {
    let graph = graph(&src());
    assert!(graph.modules.len() >= 10, "{:?}", graph.modules);
    assert_eq!(graph.modules[0], "outcome");
    assert_eq!(graph.modules.last().map(String::as_str), Some("middleware"));
    // The graph was read: the middleware uses the ledger and writes the reports, the ledger
    // and the problem body read the summary, and the ledger and the middleware both keep
    // their shared state in stripes.
    for (from, to) in [
        ("middleware", "count"),
        ("middleware", "report"),
        ("count", "summary"),
        ("render", "summary"),
        ("count", "stripe"),
        ("middleware", "stripe"),
    ] {
        assert!(graph.has(from, to), "no edge {from} -> {to}: {graph:#?}");
    }
}

/// Counting needs nothing of how a failure is shown: the ledger reads the summary, never the
/// problem body or the event, and the middleware renders, reports and then counts.
#[test]
fn the_ledger_uses_neither_the_rendering_nor_the_reports() {
    let graph = graph(&src());
    let upward: Vec<String> = graph
        .uses_of("count")
        .into_iter()
        .filter(|e| e.to == "render" || e.to == "report")
        .map(|e| format!("{} (src/{}:{})", e.to, e.file, e.line))
        .collect();
    assert!(upward.is_empty(), "count uses: {upward:?}");
}

#[test]
fn every_use_points_at_a_module_declared_before() {
    assert_in_order(&graph(&src()));
}

fn assert_in_order(graph: &Graph) {
    let broken = graph.against_the_order();
    assert!(
        broken.is_empty(),
        "uses against the order of src/lib.rs ({:?}): {broken:#?}",
        graph.modules
    );
}

/// An upward import planted in a copy of the tree is found, with its place.
#[test]
fn a_planted_upward_import_is_named_with_its_place() {
    let graph = graph_with_planted(&src(), "outcome.rs", "use crate::middleware::FaultLayer;");
    assert_eq!(
        graph.against_the_order(),
        ["outcome -> middleware (src/outcome.rs:1)"]
    );
}

/// A folder shows the rest of the crate only what its root file (`mod.rs`, or `name.rs`
/// beside `name/`) re-exports: its modules are private, so a `pub(crate)` item deep inside
/// cannot be reached past the folder's interface. The exceptions, each for a reason:
/// `error::codes` is a namespace of constants, read as `codes::PANIC`; `render::openapi` is
/// public API (feature `utoipa`); so is `webhooks::senders`, a namespace of one keys type per
/// sender, read as `senders::GitHub` (feature `webhooks`).
#[test]
fn a_folder_keeps_its_modules_private_and_names_its_interface_in_its_root_file() {
    const ALLOWED: [(&str, &str, &str); 3] = [
        ("error", "pub(crate)", "codes"),
        ("render", "pub", "openapi"),
        ("webhooks", "pub", "senders"),
    ];
    let mut folders = Vec::new();
    folders_below(&src(), &mut folders);
    let wider: Vec<_> = folders
        .iter()
        .flat_map(|(folder, root)| wider_than_private(folder, &fs::read_to_string(root).unwrap()))
        .filter(|(f, v, n)| !ALLOWED.contains(&(f.as_str(), v.as_str(), n.as_str())))
        .collect();
    let names: Vec<&str> = folders.iter().map(|(f, _)| f.as_str()).collect();
    assert!(
        names.contains(&"errors_page") && names.contains(&"ledger") && names.len() >= 10,
        "nested folders and folders with a file beside them are read: {names:?}"
    );
    assert!(wider.is_empty(), "modules wider than private: {wider:?}");
}
