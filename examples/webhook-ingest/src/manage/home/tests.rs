use super::*;

fn accept(value: &str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(header::ACCEPT, value.parse().unwrap());
    headers
}

#[test]
fn a_browser_gets_html_and_anything_else_json() {
    let firefox = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8";
    assert!(wants_html(&accept(firefox)));
    assert!(wants_html(&accept("TEXT/HTML")));
    assert!(!wants_html(&accept("*/*")));
    assert!(!wants_html(&accept("application/json")));
    assert!(!wants_html(&accept("text/html;q=0, application/json")));
    assert!(!wants_html(&HeaderMap::new()));
}

#[test]
fn the_page_escapes_what_it_shows() {
    let page = page("http://a\"<b>", "curl -X POST http://a\"<b>/api/instances");
    assert!(!page.contains("a\"<b>"));
    assert!(page.contains("http://a&quot;&lt;b&gt;/health"));
}
