//! The service's top-level modules are floors, in the order `src/lib.rs` declares them: a
//! module uses only modules declared before it, so the ids and the providers' words sit at the bottom,
//! the pipeline above the storage it uses, and the routes on top.
//!
//! The graph is read from the code by the `module-order` crate (`tests/module-order` at the
//! workspace root), the reader the library's own `tests/module_order.rs` uses: every
//! `crate::…` and climbing `super::…` path is an edge, comments and strings are not, and
//! unit-test files (`tests.rs`) and the binary (`main.rs`, which uses the library by its
//! name) are skipped. A new import against the order fails here with the edge that broke
//! it, the file and the line.

use std::path::{Path, PathBuf};

use module_order::{graph, graph_with_planted};

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

#[test]
fn every_use_points_at_a_module_declared_before() {
    let graph = graph(&src());
    let broken = graph.against_the_order();
    assert!(
        broken.is_empty(),
        "uses against the order of src/lib.rs ({:?}): {broken:#?}",
        graph.modules
    );
}

/// The floors are the ones the docs name, and the graph was read: the pipeline uses the
/// store and the spool, the route and the drainer's pipeline use the providers' words.
#[test]
fn lib_rs_declares_the_floors_ground_first() {
    let graph = graph(&src());
    assert_eq!(graph.modules.first().map(String::as_str), Some("ids"));
    assert_eq!(graph.modules.last().map(String::as_str), Some("node"));
    for (from, to) in [
        ("pipeline", "store"),
        ("pipeline", "spool"),
        ("pipeline", "provider"),
        ("receive", "pipeline"),
        ("error", "verify"),
        ("store", "provider"),
        ("store", "ids"),
        ("receive", "ids"),
    ] {
        assert!(graph.has(from, to), "no edge {from} -> {to}: {graph:#?}");
    }
}

/// The spool is storage: it knows nothing of providers, payloads, inboxes or the store.
#[test]
fn the_spool_uses_no_other_module_of_the_service() {
    let graph = graph(&src());
    let used = graph.uses_of("spool");
    assert!(used.is_empty(), "the spool uses: {used:#?}");
}

/// An upward import planted in a copy of the tree is found, with its place.
#[test]
fn a_planted_upward_import_is_named_with_its_place() {
    let graph = graph_with_planted(&src(), "spool/segment.rs", "use crate::pipeline::Fate;");
    assert_eq!(
        graph.against_the_order(),
        ["spool -> pipeline (src/spool/segment.rs:1)"]
    );
}
