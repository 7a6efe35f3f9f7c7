//! The webhooks guide as a newcomer reads it: one way to set up (every handler names the
//! keys it verifies with, `Verified<GitHub>`), and each example's dependencies beyond
//! faultline, axum and tokio named in the prose just before it. The doc tests compile and
//! run every example; this checks what they cannot.

const GUIDE: &str = include_str!("../../docs/webhooks.md");

/// Crates an example may use that a fresh crate does not have, each as the guide names it.
const CRATES: [(&str, &str); 5] = [
    ("serde::", "`serde`"),
    ("thiserror::", "`thiserror`"),
    ("bytes::", "`bytes`"),
    ("tower::", "`tower`"),
    ("reqwest::", "`reqwest`"),
];

/// Each Rust example's visible lines (hidden `# ` lines are the doc test's own), with the
/// prose between it and the example before.
fn examples() -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut prose = String::new();
    let mut lines = GUIDE.lines();
    while let Some(line) = lines.next() {
        if line.trim() != "```rust" {
            if line.starts_with("```") {
                // Another language's block: skip it whole, it is not prose either.
                lines.by_ref().find(|l| l.starts_with("```"));
            } else {
                prose.push_str(line);
                prose.push('\n');
            }
            continue;
        }
        let code: Vec<&str> = lines
            .by_ref()
            .take_while(|l| !l.starts_with("```"))
            .filter(|l| !(l.starts_with("# ") || *l == "#"))
            .collect();
        found.push((code.join("\n"), std::mem::take(&mut prose)));
    }
    found
}

#[test]
fn every_handler_in_the_guide_names_the_keys_it_verifies_with() {
    let examples = examples();
    assert!(examples.len() > 10, "{} examples found", examples.len());
    for (code, _) in &examples {
        for (at, _) in code.match_indices("Verified") {
            let next = code[at + "Verified".len()..].chars().next();
            let named = matches!(next, Some('<' | ':' | ',' | '}' | ';'));
            assert!(named, "a bare `Verified` in:\n{code}");
        }
        assert!(!code.contains("Intake::fixed"), "{code}");
    }
}

#[test]
fn every_example_names_the_crates_it_needs_beside_it() {
    for (code, prose) in examples() {
        for (path, name) in CRATES {
            if code.contains(path) {
                assert!(prose.contains(name), "{name} not named before:\n{code}");
            }
        }
        if code.contains("FromRef)]") {
            assert!(
                prose.contains("`macros`"),
                "axum's `macros` not named before:\n{code}"
            );
        }
    }
}
