//! Who may call the management API: an instance's API key, checked in constant time against
//! the SHA-256 the store keeps, and the random tokens ids, keys and secrets are made of.

use axum::http::{header, HeaderMap, Uri};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::error::IngestError;
use crate::ids::{DigestId, InboxId, InstanceId};
use crate::provider::Provider;
use crate::store::{InstanceRow, Store};
use crate::verify::webhook;
use base64::Engine;

/// Random bytes in an id: at 64 bits a collision among one service's ids is vanishingly
/// unlikely, and the primary key would refuse it rather than merge two records.
pub(crate) const ID_BYTES: usize = 8;
/// Random bytes in an API key or webhook secret: 192 bits, beyond guessing.
pub(crate) const SECRET_BYTES: usize = 24;

/// The token of an `Authorization: Bearer TOKEN` header.
pub(crate) fn bearer(headers: &HeaderMap) -> Option<&[u8]> {
    headers
        .get(header::AUTHORIZATION)?
        .as_bytes()
        .strip_prefix(b"Bearer ")
}

/// A fresh random token: `prefix` and hex.
pub(crate) fn token(prefix: &str, bytes: usize) -> String {
    let mut buffer = vec![0; bytes];
    getrandom::fill(&mut buffer).expect("the OS random source works");
    format!("{prefix}{}", webhook::hex_encode(&buffer))
}

/// A fresh webhook secret for an inbox of `provider`. A GitLab inbox's is a Standard Webhooks
/// signing token (`whsec_` and base64), so that the one secret serves GitLab's secret token
/// and its signing token alike; the others' is a token of hex.
pub(crate) fn inbox_secret(provider: Provider) -> String {
    match provider {
        Provider::Gitlab => {
            let mut buffer = [0; SECRET_BYTES];
            getrandom::fill(&mut buffer).expect("the OS random source works");
            format!(
                "whsec_{}",
                base64::engine::general_purpose::STANDARD.encode(buffer)
            )
        }
        _ => token("whs_", SECRET_BYTES),
    }
}

/// The API key sent as `Authorization: Bearer KEY` or, for clients that cannot set headers,
/// `?apiKey=KEY`.
fn api_key<'a>(headers: &'a HeaderMap, uri: &'a Uri) -> Option<&'a [u8]> {
    if headers.contains_key(header::AUTHORIZATION) {
        return bearer(headers);
    }
    uri.query()?
        .split('&')
        .find_map(|pair| pair.strip_prefix("apiKey="))
        .map(str::as_bytes)
}

/// The instance named by the path's text `instance`, if it exists and the request carries
/// its key. Text not of an id's shape names no instance.
pub(crate) async fn authorize(
    store: &Store,
    instance: &str,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<InstanceRow, IngestError> {
    let not_found = || IngestError::InstanceNotFound(instance.to_owned());
    let id = InstanceId::parse(instance).ok_or_else(not_found)?;
    let row = store.instance(id).await?.ok_or_else(not_found)?;
    let sent = Sha256::digest(api_key(headers, uri).unwrap_or_default());
    if bool::from(sent.as_slice().ct_eq(&row.key_hash)) {
        Ok(row)
    } else {
        Err(IngestError::BadApiKey)
    }
}

/// [`authorize`], then the path's text `digest` must name one of the instance's digests.
pub(crate) async fn authorize_digest(
    store: &Store,
    instance: &str,
    digest: &str,
    headers: &HeaderMap,
    uri: &Uri,
) -> Result<(InstanceRow, DigestId), IngestError> {
    let row = authorize(store, instance, headers, uri).await?;
    let not_found = || IngestError::DigestNotFound(digest.to_owned());
    let id = DigestId::parse(digest).ok_or_else(not_found)?;
    if store.digest_exists(row.id.clone(), id.clone()).await? {
        Ok((row, id))
    } else {
        Err(not_found())
    }
}

/// The inbox the path's text `inbox` names, read after the instance is authorized: text not
/// of an id's shape names no inbox.
pub(crate) fn inbox_id(inbox: &str) -> Result<InboxId, IngestError> {
    InboxId::parse(inbox).ok_or_else(|| IngestError::InboxNotFound(inbox.to_owned()))
}
