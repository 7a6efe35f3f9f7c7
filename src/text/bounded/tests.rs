use super::*;

struct Endless;

impl fmt::Display for Endless {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Would write forever if the writer did not refuse.
        loop {
            f.write_str("é and more ")?;
        }
    }
}

#[test]
fn bounded_writer_stops_an_endless_display_at_the_cap() {
    let mut out = String::new();
    assert!(write_bounded(&mut out, 100, &Endless));
    assert!(out.len() <= 100, "{} bytes", out.len());
    assert!(out.ends_with(TRUNCATION_MARKER));
}

#[test]
fn short_text_is_kept_whole_without_marker() {
    let mut out = String::from("x");
    assert!(!write_bounded(&mut out, 10, &"abc"));
    assert_eq!(out, "xabc");
}

#[test]
fn text_exactly_at_the_cap_is_not_marked() {
    let mut out = String::new();
    assert!(!write_bounded(&mut out, 5, &"abcde"));
    assert_eq!(out, "abcde");
}

#[test]
fn cut_lands_on_a_char_boundary() {
    for cap in 14..40 {
        let mut out = String::new();
        write_bounded(&mut out, cap, &"ééééééééééééééééééééééééé");
        assert!(out.len() <= cap);
        assert!(out.ends_with(TRUNCATION_MARKER), "cap {cap}: {out}");
    }
}

struct Panicky;

impl fmt::Display for Panicky {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        panic!("display exploded")
    }
}

#[test]
fn a_panicking_display_leaves_a_placeholder() {
    let mut out = String::from("before:");
    write_bounded(&mut out, 512, &Panicky);
    assert_eq!(out, format!("before:{DISPLAY_PANICKED}"));
}

#[derive(Debug)]
struct Link(usize, Option<Box<Link>>);

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "link {}", self.0)
    }
}

impl StdError for Link {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        self.1.as_deref().map(|l| l as _)
    }
}

fn chain(depth: usize) -> Link {
    let mut link = Link(depth, None);
    for n in (0..depth).rev() {
        link = Link(n, Some(Box::new(link)));
    }
    link
}

#[test]
fn chain_walk_stops_at_the_link_cap_and_says_it_goes_on() {
    let deep = chain(20);
    let mut out = String::new();
    assert!(write_chain(&mut out, &deep, 3, 64));
    assert_eq!(out, "link 1 <- link 2 <- link 3 <- …");
    let mut out = String::new();
    assert!(write_chain(&mut out, &deep, 0, 64));
    assert_eq!(out, "…");
    let short = chain(2);
    let mut out = String::new();
    assert!(!write_chain(&mut out, &short, 3, 64));
    assert_eq!(out, "link 1 <- link 2");
}

#[derive(Debug)]
struct PanickyLink;

impl fmt::Display for PanickyLink {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        panic!("link display exploded")
    }
}

impl StdError for PanickyLink {}

#[derive(Debug)]
struct Top(PanickyLink);

impl fmt::Display for Top {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("top")
    }
}

impl StdError for Top {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

#[test]
fn a_chain_link_whose_display_panics_leaves_the_placeholder() {
    crate::install_panic_hook();
    let mut out = String::new();
    assert!(!write_chain(&mut out, &Top(PanickyLink), 8, 64));
    assert_eq!(out, DISPLAY_PANICKED);
}

/// An error whose own `Display` panics, over a chain that does not.
#[derive(Debug)]
struct PanickyTop(Link);

impl fmt::Display for PanickyTop {
    fn fmt(&self, _: &mut fmt::Formatter<'_>) -> fmt::Result {
        panic!("top display exploded")
    }
}

impl StdError for PanickyTop {
    fn source(&self) -> Option<&(dyn StdError + 'static)> {
        Some(&self.0)
    }
}

#[test]
fn message_and_chain_under_one_catch_leave_what_each_leaves_alone() {
    crate::install_panic_hook();
    let write = |error: &(dyn StdError + 'static)| {
        let (mut message, mut chain) = (String::from("m:"), String::from("c:"));
        write_message_and_chain(&mut message, &mut chain, error, 8, 64);
        (message, chain)
    };
    let separately = |error: &(dyn StdError + 'static)| {
        let (mut message, mut chain) = (String::from("m:"), String::from("c:"));
        write_bounded(&mut message, 64, &error);
        write_chain(&mut chain, error, 8, 64);
        (message, chain)
    };
    let cases: [&(dyn StdError + 'static); 3] =
        [&chain(2), &Top(PanickyLink), &PanickyTop(chain(1))];
    for error in cases {
        assert_eq!(write(error), separately(error));
    }
    assert_eq!(
        write(&chain(2)),
        ("m:link 0".into(), "c:link 1 <- link 2".into())
    );
    let chain_panicked = ("m:top".into(), format!("c:{DISPLAY_PANICKED}"));
    assert_eq!(write(&Top(PanickyLink)), chain_panicked);
    let message_panicked = (format!("m:{DISPLAY_PANICKED}"), "c:link 0 <- link 1".into());
    assert_eq!(write(&PanickyTop(chain(1))), message_panicked);
}

#[test]
fn panic_payloads_are_read_as_text_when_they_are_text() {
    let mut out = String::new();
    write_panic_payload(&mut out, 64, &"static text");
    assert_eq!(out, "static text");
    let mut out = String::new();
    write_panic_payload(&mut out, 64, &String::from("owned text"));
    assert_eq!(out, "owned text");
    let mut out = String::new();
    write_panic_payload(&mut out, 64, &42_u32);
    assert_eq!(out, OPAQUE_PANIC);
}
