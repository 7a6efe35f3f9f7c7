/// The open-internet guide shows users this module's builder: a change here must reach it.
#[test]
fn the_guide_shows_this_builder() {
    let guide = include_str!("../../../../docs/open-internet.md");
    let module = include_str!("mod.rs");
    let start = guide
        .find("let mut builder = Builder::new(executor);")
        .expect("the guide shows the builder");
    let shown = &guide[start..];
    let shown = &shown[..shown.find("```").expect("the code block ends")];
    for line in shown.lines().map(str::trim).filter(|l| !l.is_empty()) {
        assert!(
            module.contains(line),
            "docs/open-internet.md shows `{line}`, which serve/mod.rs lacks"
        );
    }
}
