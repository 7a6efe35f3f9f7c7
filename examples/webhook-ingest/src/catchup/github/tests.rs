use super::*;

#[test]
fn the_next_cursor_is_read_from_the_link_header_and_nothing_else() {
    let link = "<https://api.github.com/repos/o/r/hooks/1/deliveries?per_page=100&cursor=v1_12345>; rel=\"next\", \
                <https://api.github.com/repos/o/r/hooks/1/deliveries?per_page=100>; rel=\"first\"";
    assert_eq!(next_cursor(link).as_deref(), Some("v1_12345"));
    let no_next = "<https://api.github.com/x?cursor=v1_1>; rel=\"prev\"";
    assert_eq!(next_cursor(no_next), None);
    let odd = "<https://api.github.com/x?cursor=a/../b>; rel=\"next\"";
    assert_eq!(
        next_cursor(odd),
        None,
        "a cursor goes into a query string as it is, so only plain ones"
    );
}
