//! The library's top-level modules form layers in the order `src/lib.rs` declares them: a
//! module uses only modules declared before it, so the graph between them has no cycle.
//!
//! The graph is read from the code, not from comments: every `crate::…` path (in `use`
//! declarations and in expressions, grouped imports included) and every `super::…` path that
//! climbs out of its top-level module is an edge. Comments, doc comments and string literals
//! are skipped, so a doc link is not a dependency, and so are unit-test modules (`tests.rs`). A new import against the order fails here
//! with the edge that broke it, the file and the line.
//!
//! Inside a layer, privacy keeps the order: each folder's modules are private, and its
//! `mod.rs` re-exports what the rest of the crate may use.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// One use of another top-level module.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Edge {
    from: String,
    to: String,
    file: String,
    line: usize,
}

/// The top-level modules of `lib`, in the order declared: `mod name;` lines, `pub` or not.
fn declared_order(lib: &str) -> Vec<String> {
    code_only(lib)
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let line = line.strip_prefix("pub ").unwrap_or(line);
            let name = line.strip_prefix("mod ")?.strip_suffix(';')?;
            Some(name.to_owned())
        })
        .collect()
}

/// The names `lib` re-exports at the root, each with the top-level module it comes from:
/// `pub use crate::module::…::{A, B};` lines.
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut exports = BTreeMap::new();
    let code = code_only(lib);
    for statement in code.split(';') {
        let Some(at) = statement.find("pub use crate::") else {
            continue;
        };
        let path = &statement[at + "pub use crate::".len()..];
        let module: String = path.chars().take_while(|c| is_ident(*c)).collect();
        let names = match (path.find('{'), path.rfind("::")) {
            (Some(open), _) => path[open + 1..].trim_end_matches('}').to_owned(),
            (None, Some(at)) => path[at + 2..].to_owned(),
            (None, None) => continue,
        };
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            exports.insert(name.to_owned(), module.clone());
        }
    }
    exports
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `text` with comments (doc comments included), string literals and char literals blanked
/// out, line breaks kept so that line numbers still hold.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    while i < chars.len() {
        let rest = &chars[i..];
        if rest.starts_with(&['/', '/']) {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if rest.starts_with(&['/', '*']) {
            let mut depth = 0;
            loop {
                let rest = &chars[i..];
                if rest.starts_with(&['/', '*']) {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if rest.starts_with(&['*', '/']) {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                } else {
                    break;
                }
            }
        } else if let Some(hashes) = raw_string_start(rest) {
            // r"…", r#"…"#, br"…": ends at the quote followed by as many hashes.
            let open = rest.iter().position(|c| *c == '"').unwrap() + 1;
            out.extend(std::iter::repeat_n(' ', open));
            i += open;
            let mut close = vec!['"'];
            close.extend(std::iter::repeat_n('#', hashes));
            while i < chars.len() && !chars[i..].starts_with(&close) {
                out.push(blank(chars[i]));
                i += 1;
            }
            out.extend(std::iter::repeat_n(' ', close.len()));
            i += close.len();
        } else if chars[i] == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if let Some(len) = char_literal_len(rest) {
            out.extend(std::iter::repeat_n(' ', len));
            i += len;
        } else {
            // An identifier is copied whole, so that the `r` of `for` or `br` of `xbr` never
            // opens a raw string.
            if is_ident(chars[i]) {
                while i < chars.len() && is_ident(chars[i]) {
                    out.push(chars[i]);
                    i += 1;
                }
            } else {
                out.push(chars[i]);
                i += 1;
            }
        }
    }
    out
}

/// The number of `#` of a raw string literal starting here.
fn raw_string_start(rest: &[char]) -> Option<usize> {
    let after_b = if rest.first() == Some(&'b') {
        &rest[1..]
    } else {
        rest
    };
    let after_r = after_b.strip_prefix(&['r'])?;
    let hashes = after_r.iter().take_while(|c| **c == '#').count();
    (after_r.get(hashes) == Some(&'"')).then_some(hashes)
}

/// The length of a char literal starting here (`'a'`, `'\n'`, `'\u{1F600}'`); `None` for a
/// lifetime or a label.
fn char_literal_len(rest: &[char]) -> Option<usize> {
    if rest.first() != Some(&'\'') {
        return None;
    }
    if rest.get(1) == Some(&'\\') {
        let close = rest[2..].iter().position(|c| *c == '\'')?;
        return Some(close + 3);
    }
    (rest.get(2) == Some(&'\'')).then_some(3)
}

/// The module path of a source file below `src`: `src/count/ledger/mod.rs` is
/// `["count", "ledger"]`, `src/summary.rs` is `["summary"]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(src).unwrap();
    let mut path: Vec<String> = relative
        .iter()
        .map(|part| part.to_string_lossy().into_owned())
        .collect();
    let last = path.pop().unwrap();
    let stem = last.strip_suffix(".rs").unwrap();
    if stem != "mod" && stem != "lib" {
        path.push(stem.to_owned());
    }
    path
}

/// Every top-level module `code` uses, read from the code of a file at module path `at`: each
/// with the line it is used on.
fn uses(
    code: &str,
    at: &[String],
    modules: &[String],
    exports: &BTreeMap<String, String>,
) -> Vec<(String, usize)> {
    let mut found = Vec::new();
    for (number, line) in code.lines().enumerate() {
        for first in first_segments(line, at) {
            let module = if modules.contains(&first) {
                Some(first.clone())
            } else {
                exports.get(&first).cloned()
            };
            match module {
                Some(module) => found.push((module, number + 1)),
                None => panic!(
                    "line {} of {at:?} names `crate::{first}`, which is neither a top-level \
                     module nor a root re-export",
                    number + 1
                ),
            }
        }
    }
    found
}

/// The first segment below the crate root of every crate-relative path on `line`:
/// `crate::a::…`, `crate::{a::…, b}`, and `super::…` climbing to the root from `at`.
fn first_segments(line: &str, at: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some(pos) = next_path(rest) {
        let (start, after, depth) = pos;
        let preceded = rest[..start].chars().next_back();
        rest = &rest[after..];
        if matches!(preceded, Some(c) if is_ident(c) || c == '$' || c == ':') {
            continue;
        }
        let from_root = match depth {
            None => true,
            // `super::` from a file at depth n reaches the root after n climbs; a `mod.rs`
            // is its folder's module, so its path is one shorter already.
            Some(climbs) => climbs >= at.len(),
        };
        if !from_root {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let inner = &group[..group.find('}').unwrap_or(group.len())];
            found.extend(
                inner
                    .split(',')
                    .map(|item| item.trim().split("::").next().unwrap_or("").to_owned())
                    .filter(|s| !s.is_empty() && s != "self"),
            );
        } else {
            let name: String = rest.chars().take_while(|c| is_ident(*c)).collect();
            if !name.is_empty() {
                found.push(name);
            }
        }
    }
    found
}

/// The next `crate::` or run of `super::` on `text`: its start, where the path goes on, and
/// for `super::` how many times it climbs.
fn next_path(text: &str) -> Option<(usize, usize, Option<usize>)> {
    let krate = text.find("crate::");
    let sup = text.find("super::");
    match (krate, sup) {
        (Some(k), s) if s.is_none_or(|s| k < s) => Some((k, k + "crate::".len(), None)),
        (_, Some(s)) => {
            let mut after = s;
            let mut climbs = 0;
            while text[after..].starts_with("super::") {
                after += "super::".len();
                climbs += 1;
            }
            Some((s, after, Some(climbs)))
        }
        _ => None,
    }
}

fn rust_files(dir: &Path, files: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

/// The declared order and every edge between different top-level modules.
fn graph() -> (Vec<String>, Vec<Edge>) {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    let modules = declared_order(&lib);
    let exports = root_exports(&lib);
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut edges = Vec::new();
    for file in files {
        let at = module_path(&src, &file);
        let Some(from) = at.first() else { continue };
        // A `tests.rs` is a unit-test module, built for tests only: it may drive the whole
        // layer, as an integration test does.
        if file.file_name().is_some_and(|name| name == "tests.rs") {
            continue;
        }
        assert!(
            modules.contains(from),
            "{} belongs to no module declared in src/lib.rs",
            file.display()
        );
        let code = code_only(&fs::read_to_string(&file).unwrap());
        for (to, line) in uses(&code, &at, &modules, &exports) {
            if &to != from {
                edges.push(Edge {
                    from: from.clone(),
                    to,
                    file: file.strip_prefix(&src).unwrap().display().to_string(),
                    line,
                });
            }
        }
    }
    (modules, edges)
}

/// The edges that point at a module declared after the one using it.
fn against_the_order<'a>(modules: &[String], edges: &'a [Edge]) -> Vec<&'a Edge> {
    let rank = |name: &str| modules.iter().position(|m| m == name).unwrap();
    edges
        .iter()
        .filter(|e| rank(&e.to) > rank(&e.from))
        .collect()
}

#[test]
fn lib_rs_declares_the_layers_ground_first() {
    let (modules, edges) = graph();
    assert!(modules.len() >= 10, "{modules:?}");
    assert_eq!(modules[0], "outcome");
    assert_eq!(modules.last().map(String::as_str), Some("middleware"));
    // The graph was read: the middleware uses the ledger and writes the reports, the ledger
    // and the problem body read the summary, and the ledger and the middleware both keep
    // their shared state in stripes.
    let has = |from: &str, to: &str| edges.iter().any(|e| e.from == from && e.to == to);
    assert!(has("middleware", "count"), "{edges:?}");
    assert!(has("middleware", "report"), "{edges:?}");
    assert!(has("count", "summary"), "{edges:?}");
    assert!(has("render", "summary"), "{edges:?}");
    assert!(has("count", "stripe"), "{edges:?}");
    assert!(has("middleware", "stripe"), "{edges:?}");
}

/// Counting needs nothing of how a failure is shown: the ledger reads the summary, never the
/// problem body or the event, and the middleware renders, reports and then counts.
#[test]
fn the_ledger_uses_neither_the_rendering_nor_the_reports() {
    let (_, edges) = graph();
    let upward: Vec<String> = edges
        .iter()
        .filter(|e| e.from == "count" && (e.to == "render" || e.to == "report"))
        .map(|e| format!("{} (src/{}:{})", e.to, e.file, e.line))
        .collect();
    assert!(upward.is_empty(), "count uses: {upward:?}");
}

#[test]
fn every_use_points_at_a_module_declared_before() {
    let (modules, edges) = graph();
    let broken: Vec<String> = against_the_order(&modules, &edges)
        .iter()
        .map(|e| format!("{} -> {} (src/{}:{})", e.from, e.to, e.file, e.line))
        .collect();
    assert!(
        broken.is_empty(),
        "uses against the order of src/lib.rs ({modules:?}): {broken:#?}"
    );
}

#[test]
fn the_reader_sees_paths_in_code_and_nothing_in_comments_or_strings() {
    let text = r##"
use crate::a::X; // crate::c::Y
use crate::{b::Z, d};
/// [link](crate::c::Doc)
let s = "crate::c::Str"; let r = r#"crate::c::Raw"#; let q = '"'; 'label: loop {}
/* crate::c::Block /* nested */ */ super::super::e::F; $crate::c::Macro;
"##;
    let code = code_only(text);
    let at = ["m".to_owned(), "n".to_owned()];
    let segments: Vec<String> = code
        .lines()
        .flat_map(|line| first_segments(line, &at))
        .collect();
    assert_eq!(segments, ["a", "b", "d", "e"]);
    // One climb from `m/n.rs` stays inside `m`.
    assert!(first_segments("super::sibling::X", &at).is_empty());
}

#[test]
fn an_edge_against_the_order_is_named_with_its_place() {
    let modules = ["low".to_owned(), "high".to_owned()];
    let exports = BTreeMap::from([("Thing".to_owned(), "high".to_owned())]);
    let at = ["low".to_owned()];
    let found = uses("\nuse crate::Thing;\n", &at, &modules, &exports);
    assert_eq!(found, [("high".to_owned(), 2)]);
    let edges = [Edge {
        from: "low".into(),
        to: "high".into(),
        file: "low.rs".into(),
        line: 2,
    }];
    assert_eq!(against_the_order(&modules, &edges), [&edges[0]]);
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

/// The `mod` declarations of a folder's `mod.rs` that are more than private, each as
/// `(folder, visibility, name)`.
fn wider_than_private(folder: &str, text: &str) -> Vec<(String, String, String)> {
    code_only(text)
        .lines()
        .filter_map(|line| {
            let line = line.trim();
            let (visibility, rest) = line.split_once(" mod ")?;
            // `mod name;`, or an inline `mod name {`.
            let name = rest.strip_suffix(';').or_else(|| rest.strip_suffix(" {"))?;
            Some((folder.to_owned(), visibility.to_owned(), name.to_owned()))
        })
        .collect()
}

/// The folders under `dir`, at any depth, each with the file that declares its modules:
/// its `mod.rs`, or the `name.rs` beside a folder `name/`.
fn folders_below(dir: &Path, out: &mut Vec<(String, PathBuf)>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_dir() {
            continue;
        }
        let root = [path.join("mod.rs"), path.with_extension("rs")]
            .into_iter()
            .find(|file| file.is_file())
            .unwrap_or_else(|| panic!("{} has no mod.rs and no .rs beside it", path.display()));
        out.push((
            path.file_name().unwrap().to_string_lossy().into_owned(),
            root,
        ));
        folders_below(&path, out);
    }
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
    folders_below(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src"),
        &mut folders,
    );
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
