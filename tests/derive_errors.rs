//! Each misuse of `#[derive(Fault)]` is a compile error on the attribute that makes it, with a
//! message that says how to fix it; `tests/ui/*.stderr` pin the wording.

#[test]
fn misuse_is_a_compile_error_that_says_how_to_fix_it() {
    let cases = trybuild::TestCases::new();
    cases.compile_fail("tests/ui/*.rs");
}
