//! Reading a verified body: the event name of the senders that put it there, found when it
//! is first asked for, and the body as a type of the user's.

use std::ops::Range;

use serde::Deserialize;

use crate::webhooks::refusal::Refusal;
use crate::webhooks::sender::Sender;

/// `{"type": …}`: Stripe's and Standard Webhooks' event. Only the fields named here are
/// kept; the rest of the body is skipped over, not built.
#[derive(Deserialize)]
struct Typed<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<&'a str>,
}

/// Slack's Events API: `{"type": "event_callback", "event": {"type": "app_mention"}}`, or
/// a handshake such as `{"type": "url_verification"}` with no inner event.
#[derive(Deserialize)]
struct SlackEnvelope<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<&'a str>,
    #[serde(borrow, default)]
    event: Option<Typed<'a>>,
}

/// `{"id": …}`: Stripe's event id. Only the field named is kept; the rest is skipped over.
#[derive(Deserialize)]
struct StripeEvent<'a> {
    #[serde(borrow, default)]
    id: Option<&'a str>,
}

/// `{"event_id": …}`: the id of a Slack Events API callback.
#[derive(Deserialize)]
struct SlackCallback<'a> {
    #[serde(borrow, default)]
    event_id: Option<&'a str>,
}

/// The id `sender` signs inside `body`, the same on its retries, which sign a new timestamp:
/// Stripe's event `id` and Slack's `event_id`. `None` for the other senders, and when the
/// body has none (a Slack slash command is a form, a handshake has no event) or the id is
/// escaped.
pub(crate) fn signed_event_id(sender: Sender, body: &[u8]) -> Option<&str> {
    let id = match sender {
        Sender::Stripe => serde_json::from_slice::<StripeEvent<'_>>(body).ok()?.id,
        Sender::Slack => {
            serde_json::from_slice::<SlackCallback<'_>>(body)
                .ok()?
                .event_id
        }
        _ => None,
    };
    id.filter(|id| !id.is_empty())
}

/// Whether `sender` names its event in the body rather than in a header.
pub(crate) fn event_in_body(sender: Sender) -> bool {
    matches!(
        sender,
        Sender::Stripe | Sender::StandardWebhooks | Sender::Slack
    )
}

/// Where in `body` its event name is, for a sender that names it in the body: the inner
/// event of a Slack `event_callback`, the `type` of anything else. `None` when the body is
/// not JSON of that shape (a Slack slash command is a form), or the name is escaped.
pub(crate) fn event_range(sender: Sender, body: &[u8]) -> Option<Range<usize>> {
    let name = match sender {
        Sender::Slack => {
            let envelope: SlackEnvelope<'_> = serde_json::from_slice(body).ok()?;
            match (envelope.kind, envelope.event) {
                (Some("event_callback"), Some(Typed { kind: Some(inner) })) => inner,
                (kind, _) => kind?,
            }
        }
        _ => serde_json::from_slice::<Typed<'_>>(body).ok()?.kind?,
    };
    // The name is borrowed from `body`: its place is where it points.
    let start = (name.as_ptr() as usize).checked_sub(body.as_ptr() as usize)?;
    let range = start..start + name.len();
    (body.get(range.clone())? == name.as_bytes()).then_some(range)
}

/// `body` as a `T`, or a refusal that says where it stops fitting, never what it holds.
pub(crate) fn json<'a, T: Deserialize<'a>>(body: &'a [u8]) -> Result<T, Refusal> {
    serde_json::from_slice(body).map_err(|error| {
        use serde_json::error::Category;
        let problem = match error.classify() {
            Category::Syntax => "is not JSON",
            Category::Eof => "ends before its JSON does",
            Category::Data => "is JSON of another shape",
            Category::Io => "could not be read",
        };
        Refusal::BodyInvalid {
            problem,
            line: error.line(),
            column: error.column(),
        }
    })
}
