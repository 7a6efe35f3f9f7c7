use std::collections::BTreeMap;

use super::*;

#[test]
fn an_edge_against_the_order_is_named_with_its_place() {
    let modules = ["low".to_owned(), "high".to_owned()];
    let exports = BTreeMap::from([("Thing".to_owned(), "high".to_owned())]);
    let at = ["low".to_owned()];
    let found = uses("\nuse crate::Thing;\n", &at, &modules, &exports);
    assert_eq!(found, [("high".to_owned(), 2)]);
    let graph = Graph {
        modules: modules.to_vec(),
        edges: vec![
            Edge {
                from: "low".into(),
                to: "high".into(),
                file: "low.rs".into(),
                line: 2,
            },
            Edge {
                from: "high".into(),
                to: "low".into(),
                file: "high.rs".into(),
                line: 7,
            },
        ],
    };
    assert_eq!(graph.against_the_order(), ["low -> high (src/low.rs:2)"]);
    assert!(graph.has("high", "low") && !graph.has("low", "low"));
    assert_eq!(graph.uses_of("high"), [&graph.edges[1]]);
}

#[test]
fn the_root_re_exports_are_traced_to_their_modules() {
    let lib = "pub use crate::a::b::{X, Y};\n#[cfg(x)]\npub use crate::c::Z;\nmod a;\npub mod c;";
    let exports = root_exports(lib);
    assert_eq!(exports["X"], "a");
    assert_eq!(exports["Y"], "a");
    assert_eq!(exports["Z"], "c");
    assert_eq!(declared_order(lib), ["a", "c"]);
}

#[test]
fn a_file_is_placed_at_its_module_path() {
    let src = Path::new("/s");
    let at = |file: &str| module_path(src, &src.join(file));
    assert_eq!(at("count/ledger/mod.rs"), ["count", "ledger"]);
    assert_eq!(at("summary.rs"), ["summary"]);
    assert!(at("lib.rs").is_empty());
}

/// This crate read as the crates it checks are: `code` is ground, `privacy` above it; an
/// upward import planted in a copy is found with its place, and so are a use through a root
/// re-export and a climb out of the module.
#[test]
fn a_planted_upward_import_is_named_with_its_place() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let graph = graph(&src);
    assert!(graph.has("privacy", "code"), "{graph:?}");
    assert!(graph.against_the_order().is_empty());
    let planted = graph_with_planted(&src, "code.rs", "use crate::privacy::folders_below;");
    assert_eq!(
        planted.against_the_order(),
        ["code -> privacy (src/code.rs:1)"]
    );
    let planted = graph_with_planted(&src, "code.rs", "fn f() { super::wider_than_private }");
    assert_eq!(
        planted.against_the_order(),
        ["code -> privacy (src/code.rs:1)"]
    );
}

#[test]
fn the_privacy_reader_sees_every_visibility_and_skips_comments() {
    let text =
        "mod a;\npub(crate) mod b;\n// pub mod c;\n#[cfg(x)]\npub mod d;\npub(super) mod e;\n\
                mod tests {\n}\npub(crate) mod inline {\n}";
    let found: Vec<String> = wider_than_private("f", text)
        .into_iter()
        .map(|(_, v, n)| format!("{v} {n}"))
        .collect();
    assert_eq!(
        found,
        ["pub(crate) b", "pub d", "pub(super) e", "pub(crate) inline"]
    );
}
