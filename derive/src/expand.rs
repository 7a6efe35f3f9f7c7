//! From a type and its `#[fault(...)]` attributes to the impls: one arm per variant (or one
//! for a struct), each answering with its own status and code or with its field's.

use std::collections::HashMap;

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::spanned::Spanned;
use syn::{Attribute, Data, DeriveInput, Expr, Fields, Ident, Lit, LitStr, Member, Meta, Type};

use crate::attr::FaultAttr;

/// How one variant (or the struct) answers.
enum Answer {
    /// With the status and code of its attribute.
    Own(Own),
    /// With everything of its one field, itself a fault.
    Transparent { ty: Type },
}

/// What a variant's own attribute (with the enum's defaults) says.
struct Own {
    status: u16,
    code: LitStr,
    message: Option<LitStr>,
    public: Option<bool>,
    retry_after: Option<u32>,
    headers: Vec<(String, String)>,
    description: String,
}

/// A `match` arm's pattern (binding the field as `inner` when transparent) and its answer.
struct Arm {
    pattern: TokenStream,
    answer: Answer,
}

pub(crate) fn derive(input: &DeriveInput) -> syn::Result<TokenStream> {
    let top = FaultAttr::from_attrs(&input.attrs)?;
    let arms = match &input.data {
        Data::Struct(data) => vec![arm(
            &top,
            &FaultAttr::default(),
            &input.attrs,
            &data.fields,
            &input.ident,
            quote!(Self),
        )?],
        Data::Enum(data) => {
            check_enum_defaults(&top)?;
            data.variants
                .iter()
                .map(|variant| {
                    let own = FaultAttr::from_attrs(&variant.attrs)?;
                    let ident = &variant.ident;
                    arm(
                        &own,
                        &top,
                        &variant.attrs,
                        &variant.fields,
                        ident,
                        quote!(Self::#ident),
                    )
                })
                .collect::<syn::Result<Vec<_>>>()?
        }
        Data::Union(data) => {
            return Err(syn::Error::new(
                data.union_token.span(),
                "`Fault` cannot be derived for a union: use an enum or a struct",
            ))
        }
    };
    check_one_status_per_code(&arms)?;
    Ok(impls(input, &arms))
}

/// On an enum the attribute gives defaults for its variants; a code or a message names one
/// variant, and `transparent` one field.
fn check_enum_defaults(top: &FaultAttr) -> syn::Result<()> {
    let misplaced = [
        ("code", top.code.as_ref().map(LitStr::span)),
        ("message", top.message.as_ref().map(LitStr::span)),
        ("transparent", top.transparent),
    ];
    match misplaced
        .into_iter()
        .find_map(|(k, span)| span.map(|s| (k, s)))
    {
        Some((key, span)) => Err(syn::Error::new(
            span,
            format!(
                "`{key}` on an enum: put it on each variant; the enum's attribute only gives \
                 defaults (`status`, `public`, `retry_after`, `header`)"
            ),
        )),
        None => Ok(()),
    }
}

fn arm(
    own: &FaultAttr,
    defaults: &FaultAttr,
    attrs: &[Attribute],
    fields: &Fields,
    ident: &Ident,
    path: TokenStream,
) -> syn::Result<Arm> {
    // A mistake about what an attribute lacks points at the attribute, else at the name.
    let here = |message: String| match &own.tokens {
        Some(tokens) => syn::Error::new_spanned(tokens, message),
        None => syn::Error::new(ident.span(), message),
    };
    if let Some(transparent) = own.transparent {
        if let Some((key, span)) = own.beside_transparent() {
            return Err(syn::Error::new(
                span,
                format!(
                    "`{key}` beside `transparent`: a transparent fault answers with its field's \
                     status, code, message and headers; remove `{key}`"
                ),
            ));
        }
        let mut iter = fields.iter();
        let (Some(field), None) = (iter.next(), iter.next()) else {
            return Err(syn::Error::new(
                transparent,
                format!(
                    "`transparent` needs exactly one field, the inner fault; `{ident}` has {}",
                    fields.len()
                ),
            ));
        };
        let member = match &field.ident {
            Some(name) => Member::Named(name.clone()),
            None => Member::Unnamed(0.into()),
        };
        return Ok(Arm {
            pattern: quote!(#path { #member: inner, .. }),
            answer: Answer::Transparent {
                ty: field.ty.clone(),
            },
        });
    }
    let Some(code) = own.code.clone() else {
        return Err(here(format!(
            "`{ident}` has no code: add `#[fault(code = \"...\")]` with a kebab-case code \
                 such as `unsupported-event`, or `#[fault(transparent)]` to answer with its \
                 field's"
        )));
    };
    let Some((status, _)) = own.status.or(defaults.status) else {
        return Err(here(format!(
            "`{ident}` has no status: add `status = 4xx or 5xx` to its `#[fault(...)]`, or \
                 a default for every variant on the enum"
        )));
    };
    let description = description(attrs).unwrap_or_else(|| code.value());
    Ok(Arm {
        pattern: quote!(#path { .. }),
        answer: Answer::Own(Own {
            status,
            code,
            message: own.message.clone(),
            public: own.public.or(defaults.public).map(|p| p.0),
            retry_after: own.retry_after.or(defaults.retry_after).map(|r| r.0),
            headers: defaults
                .headers
                .iter()
                .chain(&own.headers)
                .map(|(name, value, _)| (name.clone(), value.clone()))
                .collect(),
            description,
        }),
    })
}

/// What a variant means for API documentation: its doc comment, else its `#[error("...")]`
/// text as written.
fn description(attrs: &[Attribute]) -> Option<String> {
    let docs: Vec<String> = attrs
        .iter()
        .filter(|a| a.path().is_ident("doc"))
        .filter_map(|a| match &a.meta {
            Meta::NameValue(nv) => match &nv.value {
                Expr::Lit(lit) => match &lit.lit {
                    Lit::Str(s) => Some(s.value().trim().to_owned()),
                    _ => None,
                },
                _ => None,
            },
            _ => None,
        })
        .collect();
    let doc = docs.join(" ").trim().to_owned();
    if !doc.is_empty() {
        return Some(doc);
    }
    attrs
        .iter()
        .filter(|a| a.path().is_ident("error"))
        .find_map(|a| a.parse_args_with(parse_leading_str).ok())
}

fn parse_leading_str(input: syn::parse::ParseStream<'_>) -> syn::Result<String> {
    let text: LitStr = input.parse()?;
    input.parse::<TokenStream>()?;
    Ok(text.value())
}

/// A code is one metric label with one meaning: two variants may share it only with the
/// same status.
fn check_one_status_per_code(arms: &[Arm]) -> syn::Result<()> {
    let mut seen: HashMap<String, u16> = HashMap::new();
    for arm in arms {
        if let Answer::Own(Own { status, code, .. }) = &arm.answer {
            match seen.get(&code.value()) {
                Some(first) if first != status => {
                    return Err(syn::Error::new(
                        code.span(),
                        format!(
                            "code `{}` is already used with status {first}; one code, one \
                             status: give this variant another code or status {first}",
                            code.value()
                        ),
                    ))
                }
                _ => {
                    seen.insert(code.value(), *status);
                }
            }
        }
    }
    Ok(())
}

fn impls(input: &DeriveInput, arms: &[Arm]) -> TokenStream {
    let name = &input.ident;
    let (impl_generics, ty_generics, where_clause) = input.generics.split_for_impl();
    let inner_types: Vec<&Type> = arms
        .iter()
        .filter_map(|arm| match &arm.answer {
            Answer::Transparent { ty } => Some(ty),
            Answer::Own(_) => None,
        })
        .collect();
    let bounds = |trait_path: TokenStream| {
        let mut clause = quote!(#where_clause);
        if !inner_types.is_empty() {
            if where_clause.is_none() {
                clause = quote!(where);
            } else if !where_clause.is_some_and(|w| w.predicates.trailing_punct()) {
                clause = quote!(#clause,);
            }
            clause = quote!(#clause #(#inner_types: #trait_path,)*);
        }
        clause
    };
    let fault_where = bounds(quote!(::faultline::Fault));
    let catalog_where = bounds(quote!(::faultline::catalog::Catalog));

    let private = quote!(::faultline::__private);
    let each = |own: &dyn Fn(&Own) -> TokenStream, delegate: TokenStream| {
        let rows = arms.iter().map(|arm| {
            let pattern = &arm.pattern;
            let body = match &arm.answer {
                Answer::Own(answer) => own(answer),
                Answer::Transparent { .. } => quote!(::faultline::Fault::#delegate),
            };
            quote!(#pattern => #body,)
        });
        if arms.is_empty() {
            // An enum without variants has no value to match on.
            return quote!(match *self {});
        }
        quote!(match self { #(#rows)* })
    };
    let status = each(
        &|own| {
            let status = own.status;
            quote!({
                const STATUS: #private::StatusCode = #private::status(#status);
                STATUS
            })
        },
        quote!(status(inner)),
    );
    let code = each(&|own| own.code.to_token_stream(), quote!(code(inner)));
    let is_public = each(
        &|own| {
            let public = own.public.unwrap_or(own.status < 500);
            quote!(#public)
        },
        quote!(is_public(inner)),
    );
    let public_message = each(
        &|own| match &own.message {
            Some(message) => {
                quote!(::core::option::Option::Some(#private::Cow::Borrowed(#message)))
            }
            None => quote!(::core::option::Option::None),
        },
        quote!(public_message(inner)),
    );
    let headers = each(
        &|own| {
            let retry_after = own.retry_after.map(|seconds| {
                let seconds = seconds.to_string();
                quote!(headers.insert(
                    #private::RETRY_AFTER,
                    #private::HeaderValue::from_static(#seconds),
                );)
            });
            let others = own.headers.iter().map(|(name, value)| {
                quote!(headers.insert(
                    #private::HeaderName::from_static(#name),
                    #private::HeaderValue::from_static(#value),
                );)
            });
            quote!({ #retry_after #(#others)* })
        },
        quote!(headers(inner, headers)),
    );
    let rejection = each(&|_| quote!(false), quote!(counts_as_rejection(inner)));
    let entries = arms.iter().map(|arm| match &arm.answer {
        Answer::Own(Own {
            status,
            code,
            description,
            ..
        }) => quote!(entries.push(::faultline::catalog::CatalogEntry::new(
            #private::status(#status), #code, #description,
        ));),
        Answer::Transparent { ty } => {
            quote!(entries.extend(<#ty as ::faultline::catalog::Catalog>::catalog());)
        }
    });
    let openapi = openapi(input, &catalog_where);
    quote! {
        #[automatically_derived]
        impl #impl_generics ::faultline::Fault for #name #ty_generics #fault_where {
            fn status(&self) -> #private::StatusCode { #status }
            fn code(&self) -> &'static str { #code }
            fn is_public(&self) -> bool { #is_public }
            fn public_message(&self) -> ::core::option::Option<#private::Cow<'_, str>> {
                #public_message
            }
            fn headers(&self, headers: &mut #private::HeaderMap) {
                let _ = &headers;
                #headers
            }
            fn counts_as_rejection(&self) -> bool { #rejection }
        }

        #[automatically_derived]
        impl #impl_generics #private::IntoResponse for #name #ty_generics #fault_where {
            fn into_response(self) -> #private::Response {
                #private::IntoResponse::into_response(::faultline::Error::from_fault(self))
            }
        }

        #[automatically_derived]
        impl #impl_generics ::faultline::catalog::Catalog for #name #ty_generics #catalog_where {
            #[allow(unused_mut)]
            fn catalog() -> #private::Vec<::faultline::catalog::CatalogEntry> {
                let mut entries = #private::Vec::new();
                #(#entries)*
                entries
            }
        }

        #openapi
    }
}

/// utoipa's `IntoResponses` from the catalog, when faultline's `utoipa` feature is on.
#[cfg(feature = "utoipa")]
fn openapi(input: &DeriveInput, catalog_where: &TokenStream) -> TokenStream {
    let name = &input.ident;
    let (impl_generics, ty_generics, _) = input.generics.split_for_impl();
    quote! {
        #[automatically_derived]
        impl #impl_generics ::faultline::__private::utoipa::IntoResponses for #name #ty_generics
            #catalog_where
        {
            fn responses() -> ::faultline::__private::OpenApiResponses {
                ::faultline::catalog::openapi::responses(
                    &<Self as ::faultline::catalog::Catalog>::catalog(),
                )
            }
        }
    }
}

#[cfg(not(feature = "utoipa"))]
fn openapi(_: &DeriveInput, _: &TokenStream) -> TokenStream {
    TokenStream::new()
}
