//! Reading Rust source as text: what is code, and which crate-relative paths a line names.

/// Whether `c` can be part of an identifier.
pub fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// `text` with comments (doc comments included), string literals and char literals blanked
/// out, line breaks kept so that line numbers still hold.
pub fn code_only(text: &str) -> String {
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
            // r"…", r#"…"#, br"…": ends at the quote followed by as many hashes.
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
            // An identifier is copied whole, so that the `r` of `for` or the `br` of `xbr`
            // never opens a raw string.
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

/// The length of a char literal starting here (`'a'`, `'\n'`, `'\u{1F600}'`); `None` for a
/// lifetime or a label.
fn char_literal_len(rest: &[char]) -> Option<usize> {
    if rest.first() != Some(&'\'') {
        return None;
    }
    if rest.get(1) == Some(&'\\') {
        // The closing quote comes after the escaped character, which may be a quote itself.
        let close = rest.get(3..)?.iter().position(|c| *c == '\'')?;
        return Some(close + 4);
    }
    (rest.get(2) == Some(&'\'')).then_some(3)
}

/// The first segment below the crate root of every crate-relative path on `line` of a file
/// at module path `at`: `crate::a::…`, `crate::{a::…, b}`, and `super::…` climbing to the
/// root.
pub fn first_segments(line: &str, at: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = line;
    while let Some((start, after, climbs)) = next_path(rest) {
        let preceded = rest[..start].chars().next_back();
        rest = &rest[after..];
        if matches!(preceded, Some(c) if is_ident(c) || c == '$' || c == ':') {
            continue;
        }
        // `super::` from a file at depth n reaches the root after n climbs; a `mod.rs` is its
        // folder's module, so its path is one shorter already.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reader_sees_paths_in_code_and_nothing_in_comments_or_strings() {
        let text = r##"
use crate::a::X; // crate::c::Y
use crate::{b::Z, d};
/// [link](crate::c::Doc)
let s = "crate::c::Str"; let r = r#"crate::c::Raw"#; let q = '"'; 'label: loop {}
/* crate::c::Block /* nested */ */ super::super::e::F; $crate::c::Macro;
let e = "\"crate::c::Escaped"; for x in xbr"crate::c::Ident" {}
"##;
        let at = ["m".to_owned(), "n".to_owned()];
        let code = code_only(text);
        let segments: Vec<String> = code
            .lines()
            .flat_map(|line| first_segments(line, &at))
            .collect();
        assert_eq!(segments, ["a", "b", "d", "e"]);
        assert_eq!(
            code.lines().count(),
            text.lines().count(),
            "line numbers hold"
        );
        // One climb from `m/n.rs` stays inside `m`.
        assert!(first_segments("super::sibling::X", &at).is_empty());
    }

    /// `text` with each of `spans` (found in order) blanked, line breaks kept.
    fn blanked(text: &str, spans: &[&str]) -> String {
        let mut out = String::new();
        let mut rest = text;
        for span in spans {
            let at = rest.find(span).unwrap();
            out.push_str(&rest[..at]);
            out.extend(span.chars().map(|c| if c == '\n' { '\n' } else { ' ' }));
            rest = &rest[at + span.len()..];
        }
        out + rest
    }

    /// Exactly the literals and comments are blanked, each to its own length, whatever ends
    /// them: so every line and column of the code keeps its place.
    #[test]
    fn the_reader_blanks_exactly_each_literal_and_comment() {
        let cases: [(&str, &[&str]); 13] = [
            ("a r#\"x\"y\"# b", &["r#\"x\"y\"#"]),
            (
                "a br\"x\" b xbr\"y\" for\"z\"",
                &["br\"x\"", "\"y\"", "\"z\""],
            ),
            ("a \"x\\\"y\" b", &["\"x\\\"y\""]),
            ("a \"x\\\\\" b \"y\" c", &["\"x\\\\\"", "\"y\""]),
            ("a '\\'' b 'c' d 'e: f", &["'\\''", "'c'"]),
            (
                "a /* x /* y */ z */ b /* c */ d",
                &["/* x /* y */ z */", "/* c */"],
            ),
            ("a // x\nb /* y\nz */ c", &["// x", "/* y\nz */"]),
            ("a \"x", &["\"x"]),
            ("a r\"x", &["r\"x"]),
            (
                "r\"crate::c::Long unterminated",
                &["r\"crate::c::Long unterminated"],
            ),
            ("a /* x", &["/* x"]),
            ("a \"x\ny\" b", &["\"x\ny\""]),
            ("'\\u{1F600}' a", &["'\\u{1F600}'"]),
        ];
        for (text, spans) in cases {
            assert_eq!(code_only(text), blanked(text, spans), "{text:?}");
        }
    }

    #[test]
    fn a_group_names_each_module_once_and_crate_and_super_are_read_in_order() {
        let at = ["m".to_owned(), "n".to_owned()];
        assert_eq!(
            first_segments("use crate::{self, a::B, c, };", &at),
            ["a", "c"]
        );
        assert_eq!(
            first_segments("crate::a::X; super::super::b::Y; crate::c::Z", &at),
            ["a", "b", "c"]
        );
        assert_eq!(
            first_segments("super::super::b::Y; crate::c::Z", &at),
            ["b", "c"]
        );
    }
}
