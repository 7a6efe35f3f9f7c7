use super::*;

#[test]
fn an_id_is_visible_ascii_without_spaces_up_to_its_bound() {
    for id in [
        "in_0123456789abcdef",
        "x",
        "!",
        "~",
        "ib_nothing",
        "a-b.c_d:e",
    ] {
        assert_eq!(
            InstanceId::parse(id).map(|id| id.to_string()),
            Some(id.into())
        );
    }
    let longest = "d".repeat(MAX_ID_BYTES);
    assert_eq!(DigestId::parse(&longest).unwrap().as_str(), longest);
}

#[test]
fn text_of_another_shape_is_no_id() {
    let too_long = "i".repeat(MAX_ID_BYTES + 1);
    for text in [
        "",
        " ",
        "ib 1",
        "ib\t1",
        "ib\n1",
        "ib\u{7f}",
        "ïb",
        too_long.as_str(),
    ] {
        assert_eq!(InboxId::parse(text), None, "{text:?}");
    }
}

#[test]
fn a_stored_id_is_taken_as_it_is() {
    let stored = InboxId::stored("ib_0123456789abcdef".into());
    assert_eq!(InboxId::parse("ib_0123456789abcdef"), Some(stored));
}
