use super::*;

#[test]
fn githubs_published_test_vector() {
    assert_eq!(
        sign(b"It's a Secret to Everybody", b"Hello, World!"),
        "757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
    );
}
