//! The service's top-level modules are floors, in the order `src/lib.rs` declares them: a
//! module uses only modules declared before it, so the providers' words sit at the bottom,
//! the pipeline above the storage it uses, and the routes on top.
//!
//! The graph is read from the code, as the library's own `tests/module_order.rs` reads it:
//! every `crate::…` path (in `use` declarations and in expressions, grouped imports
//! included) and every `super::…` path that climbs out of its top-level module is an edge;
//! comments and string literals are skipped, and so are unit-test modules (`tests.rs`, and
//! an inline `mod tests` to the end of its file) and the binary (`main.rs`, which uses the
//! library by its name). A new import against the
//! order fails here with the edge that broke it, the file and the line.

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

/// The names `lib` re-exports at the root, each with the module it comes from.
fn root_exports(lib: &str) -> BTreeMap<String, String> {
    let mut exports = BTreeMap::new();
    for statement in code_only(lib).split(';') {
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

/// `text` with comments, string literals and char literals blanked out, line breaks kept so
/// that line numbers still hold.
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        let end = if rest.starts_with(&['/', '/']) {
            i + rest.iter().position(|c| *c == '\n').unwrap_or(rest.len())
        } else if rest.starts_with(&['/', '*']) {
            block_comment_end(&chars, i)
        } else if let Some(hashes) = raw_string_start(rest) {
            let open = i + rest.iter().position(|c| *c == '"').unwrap() + 1;
            let mut close = vec!['"'];
            close.extend(std::iter::repeat_n('#', hashes));
            let len = chars[open..]
                .windows(close.len())
                .position(|w| w == close.as_slice())
                .unwrap_or(chars.len() - open);
            (open + len + close.len()).min(chars.len())
        } else if chars[i] == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            (j + 1).min(chars.len())
        } else if let Some(len) = char_literal_len(rest) {
            i + len
        } else {
            // An identifier is copied whole, so that the `r` of `for` never opens a raw string.
            let len = rest.iter().take_while(|c| is_ident(**c)).count().max(1);
            out.extend(&chars[i..i + len]);
            i += len;
            continue;
        };
        out.extend(chars[i..end].iter().map(|c| blank(*c)));
        i = end;
    }
    out
}

/// Where the block comment opening at `start` ends, nested ones included.
fn block_comment_end(chars: &[char], start: usize) -> usize {
    let (mut depth, mut i) = (0, start);
    while i < chars.len() {
        if chars[i..].starts_with(&['/', '*']) {
            depth += 1;
            i += 2;
        } else if chars[i..].starts_with(&['*', '/']) {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    chars.len()
}

/// The number of `#` of a raw string literal starting here.
fn raw_string_start(rest: &[char]) -> Option<usize> {
    let after_b = rest.strip_prefix(&['b']).unwrap_or(rest);
    let after_r = after_b.strip_prefix(&['r'])?;
    let hashes = after_r.iter().take_while(|c| **c == '#').count();
    (after_r.get(hashes) == Some(&'"')).then_some(hashes)
}

/// The length of a char literal starting here; `None` for a lifetime or a label.
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

/// The module path of a source file below `src`: `src/store/sqlite/mod.rs` is
/// `["store", "sqlite"]`, `src/error.rs` is `["error"]`.
fn module_path(src: &Path, file: &Path) -> Vec<String> {
    let mut path: Vec<String> = file
        .strip_prefix(src)
        .unwrap()
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

/// The first segment below the crate root of every crate-relative path on `line`:
/// `crate::a::…`, `crate::{a::…, b}`, and `super::…` climbing to the root from `at`.
fn first_segments(line: &str, at: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some((start, after, climbs)) = next_path(rest) {
        let preceded = rest[..start].chars().next_back();
        rest = &rest[after..];
        if matches!(preceded, Some(c) if is_ident(c) || c == '$' || c == ':') {
            continue;
        }
        // `super::` from a file at depth n reaches the root after n climbs.
        if climbs.is_some_and(|climbs| climbs < at.len()) {
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
            let (mut after, mut climbs) = (s, 0);
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

/// The declared order and every edge between different top-level modules of `src`.
fn graph(src: &Path) -> (Vec<String>, Vec<Edge>) {
    let lib = fs::read_to_string(src.join("lib.rs")).unwrap();
    let (modules, exports) = (declared_order(&lib), root_exports(&lib));
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut edges = Vec::new();
    for file in files {
        let at = module_path(src, &file);
        let name = file.file_name().unwrap().to_string_lossy();
        let Some(from) = at
            .first()
            .filter(|_| name != "tests.rs" && name != "main.rs")
        else {
            continue;
        };
        assert!(modules.contains(from), "{} is no module", file.display());
        let code = code_only(&fs::read_to_string(&file).unwrap());
        let unit_tests = code.lines().position(|line| line.trim() == "mod tests {");
        let lines = code.lines().take(unit_tests.unwrap_or(usize::MAX));
        for (number, line) in lines.enumerate() {
            for first in first_segments(line, &at) {
                let to = match exports.get(&first) {
                    Some(module) => module.clone(),
                    None if modules.contains(&first) => first,
                    None => panic!("{}:{} names crate::{first}", file.display(), number + 1),
                };
                if &to != from {
                    let file = file.strip_prefix(src).unwrap().display().to_string();
                    let (from, line) = (from.clone(), number + 1);
                    edges.push(Edge {
                        from,
                        to,
                        file,
                        line,
                    });
                }
            }
        }
    }
    (modules, edges)
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The edges that point at a module declared after the one using it, as `from -> to (file:line)`.
fn against_the_order(modules: &[String], edges: &[Edge]) -> Vec<String> {
    let rank = |name: &str| modules.iter().position(|m| m == name).unwrap();
    edges
        .iter()
        .filter(|e| rank(&e.to) > rank(&e.from))
        .map(|e| format!("{} -> {} (src/{}:{})", e.from, e.to, e.file, e.line))
        .collect()
}

#[test]
fn every_use_points_at_a_module_declared_before() {
    let (modules, edges) = graph(&src());
    let broken = against_the_order(&modules, &edges);
    assert!(
        broken.is_empty(),
        "uses against the order of src/lib.rs ({modules:?}): {broken:#?}"
    );
}

/// The floors are the ones the docs name, and the graph was read: the pipeline uses the
/// store and the spool, the route and the drainer's pipeline use the providers' words.
#[test]
fn lib_rs_declares_the_floors_ground_first() {
    let (modules, edges) = graph(&src());
    assert_eq!(modules.first().map(String::as_str), Some("provider"));
    assert_eq!(modules.last().map(String::as_str), Some("cli"));
    let has = |from: &str, to: &str| edges.iter().any(|e| e.from == from && e.to == to);
    for (from, to) in [
        ("pipeline", "store"),
        ("pipeline", "spool"),
        ("pipeline", "provider"),
        ("receive", "pipeline"),
        ("error", "verify"),
        ("store", "provider"),
    ] {
        assert!(has(from, to), "no edge {from} -> {to}: {edges:#?}");
    }
}

/// The spool is storage: it knows nothing of providers, payloads, inboxes or the store.
#[test]
fn the_spool_uses_no_other_module_of_the_service() {
    let (_, edges) = graph(&src());
    let used: Vec<&Edge> = edges.iter().filter(|e| e.from == "spool").collect();
    assert!(used.is_empty(), "the spool uses: {used:#?}");
}

/// An upward import planted in a copy of the tree is found, with its place.
#[test]
fn a_planted_upward_import_is_named_with_its_place() {
    let copy = std::env::temp_dir().join(format!("module-order-{}", std::process::id()));
    copy_tree(&src(), &copy);
    let planted = copy.join("spool/segment.rs");
    let text = fs::read_to_string(&planted).unwrap();
    fs::write(&planted, format!("use crate::pipeline::Fate;\n{text}")).unwrap();
    let (modules, edges) = graph(&copy);
    fs::remove_dir_all(&copy).unwrap();
    assert_eq!(
        against_the_order(&modules, &edges),
        ["spool -> pipeline (src/spool/segment.rs:1)"]
    );
}

fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            copy_tree(&path, &target);
        } else {
            fs::copy(&path, &target).unwrap();
        }
    }
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
    let at = ["m".to_owned(), "n".to_owned()];
    let segments: Vec<String> = code_only(text)
        .lines()
        .flat_map(|line| first_segments(line, &at))
        .collect();
    assert_eq!(segments, ["a", "b", "d", "e"]);
    // One climb from `m/n.rs` stays inside `m`.
    assert!(first_segments("super::sibling::X", &at).is_empty());
}
