//! Reading `#[fault(...)]`: one set of keys per attribute, each checked where it is written so
//! that a mistake points at the key that made it.

use proc_macro2::{Span, TokenStream};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Attribute, LitBool, LitInt, LitStr, Token};

/// The keys of one `#[fault(...)]` attribute, or of none.
#[derive(Default)]
pub(crate) struct FaultAttr {
    /// The attribute as written, for errors about what it lacks.
    pub(crate) tokens: Option<TokenStream>,
    pub(crate) status: Option<(u16, Span)>,
    pub(crate) code: Option<LitStr>,
    pub(crate) message: Option<LitStr>,
    pub(crate) public: Option<(bool, Span)>,
    pub(crate) retry_after: Option<(u32, Span)>,
    pub(crate) transparent: Option<Span>,
    /// `header = "name: value"`, any number of them: a lower-cased name and its value.
    pub(crate) headers: Vec<(String, String, Span)>,
}

const KEYS: &str = "status, code, message, public, retry_after, header, transparent";

impl FaultAttr {
    /// Reads the `#[fault(...)]` attribute among `attrs`; at most one is allowed.
    pub(crate) fn from_attrs(attrs: &[Attribute]) -> syn::Result<Self> {
        let mut parsed = FaultAttr::default();
        for attr in attrs.iter().filter(|a| a.path().is_ident("fault")) {
            if parsed.tokens.is_some() {
                return Err(syn::Error::new_spanned(
                    attr,
                    "a second `#[fault(...)]` here: put every key in one attribute",
                ));
            }
            parsed.tokens = Some(attr.to_token_stream());
            attr.parse_nested_meta(|meta| parsed.key(meta))?;
        }
        Ok(parsed)
    }

    fn key(&mut self, meta: syn::meta::ParseNestedMeta<'_>) -> syn::Result<()> {
        let span = meta.path.span();
        let Some(name) = meta.path.get_ident().map(ToString::to_string) else {
            return Err(meta.error(format!("expected one of {KEYS}")));
        };
        let taken = match name.as_str() {
            "status" => self.status.is_some(),
            "code" => self.code.is_some(),
            "message" => self.message.is_some(),
            "public" => self.public.is_some(),
            "retry_after" => self.retry_after.is_some(),
            "transparent" => self.transparent.is_some(),
            "header" => false,
            other => {
                return Err(meta.error(format!("unknown key `{other}`: expected one of {KEYS}")))
            }
        };
        if taken {
            return Err(meta.error(format!("`{name}` is given twice")));
        }
        match name.as_str() {
            "status" => {
                let lit: LitInt = meta.value()?.parse()?;
                self.status = Some((error_status(&lit)?, lit.span()));
            }
            "code" => {
                let lit: LitStr = meta.value()?.parse()?;
                check_kebab_case(&lit)?;
                self.code = Some(lit);
            }
            "message" => self.message = Some(meta.value()?.parse()?),
            "public" => {
                let on = if meta.input.peek(Token![=]) {
                    meta.value()?.parse::<LitBool>()?.value
                } else {
                    true
                };
                self.public = Some((on, span));
            }
            "retry_after" => {
                let lit: LitInt = meta.value()?.parse()?;
                let seconds = lit.base10_parse::<u32>().map_err(|_| {
                    syn::Error::new(lit.span(), "`retry_after` is a whole number of seconds")
                })?;
                self.retry_after = Some((seconds, lit.span()));
            }
            "header" => {
                let lit: LitStr = meta.value()?.parse()?;
                let (name, value) = header(&lit)?;
                self.headers.push((name, value, lit.span()));
            }
            _ => self.transparent = Some(span),
        }
        Ok(())
    }

    /// The first key a `transparent` attribute must not carry beside it.
    pub(crate) fn beside_transparent(&self) -> Option<(&'static str, Span)> {
        [
            ("status", self.status.map(|s| s.1)),
            ("code", self.code.as_ref().map(LitStr::span)),
            ("message", self.message.as_ref().map(LitStr::span)),
            ("public", self.public.map(|p| p.1)),
            ("retry_after", self.retry_after.map(|r| r.1)),
            ("header", self.headers.first().map(|h| h.2)),
        ]
        .into_iter()
        .find_map(|(name, span)| span.map(|span| (name, span)))
    }
}

/// `"name: value"`, checked here so that building the header at run time cannot fail.
fn header(lit: &LitStr) -> syn::Result<(String, String)> {
    let text = lit.value();
    let parsed = text.split_once(':').and_then(|(name, value)| {
        let name = name.trim().to_ascii_lowercase();
        let value = value.trim().to_owned();
        let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
        let name_ok = !name.is_empty() && name.bytes().all(token);
        let value_ok = value
            .bytes()
            .all(|b| b == b' ' || b == b'\t' || b.is_ascii_graphic());
        (name_ok && value_ok).then_some((name, value))
    });
    parsed.ok_or_else(|| {
        syn::Error::new(
            lit.span(),
            "`header` is \"name: value\", such as \"www-authenticate: Bearer\": a header name, a \
             colon, and a value of visible ASCII",
        )
    })
}

/// A status the derive accepts: an error status, 4xx or 5xx.
fn error_status(lit: &LitInt) -> syn::Result<u16> {
    let status = lit.base10_parse::<u16>().ok();
    match status {
        Some(status @ 400..=599) => Ok(status),
        _ => Err(syn::Error::new(
            lit.span(),
            format!(
                "status {lit} is not an error status: a fault answers with a 4xx (the client's \
                 mistake) or a 5xx (the server's)"
            ),
        )),
    }
}

/// Codes are metric labels and URL segments: lower-case words of letters and digits joined
/// by single hyphens.
fn check_kebab_case(lit: &LitStr) -> syn::Result<()> {
    let code = lit.value();
    let kebab = !code.is_empty()
        && code.split('-').all(|word| {
            !word.is_empty()
                && word
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        });
    if kebab {
        return Ok(());
    }
    let suggestion: String = code
        .trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .chars()
        .flat_map(|c| {
            let sep = c.is_ascii_uppercase().then_some('-');
            sep.into_iter()
                .chain(std::iter::once(c.to_ascii_lowercase()))
        })
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let mut suggestion = suggestion.trim_start_matches('-').to_owned();
    while suggestion.contains("--") {
        suggestion = suggestion.replace("--", "-");
    }
    if suggestion.is_empty() {
        suggestion = "unsupported-event".to_owned();
    }
    Err(syn::Error::new(
        lit.span(),
        format!(
            "code `{code}` is not kebab-case: use lower-case words joined by `-`, such as \
             `{suggestion}`"
        ),
    ))
}
