use super::*;

fn event(value: Value) -> Event {
    serde_json::from_value(value).unwrap()
}

#[test]
fn an_event_is_read_by_its_idempotency_key_and_its_status_as_text() {
    let sent = event(serde_json::json!({
        "id": 2,
        "request_headers": {
            "Idempotency-Key": "7c6e0583-49f2-4dc5-a50b-4c0bcf3c1b27",
            "X-Gitlab-Event-UUID": "842d7c3e-3114-4396-8a95-66c084d53cb1",
        },
        "response_status": "500",
    }));
    assert_eq!(
        sent.guid().as_deref(),
        Some("7c6e0583-49f2-4dc5-a50b-4c0bcf3c1b27")
    );
    assert_eq!(sent.status_code(), 500);
    let unanswered = event(serde_json::json!({
        "id": 3,
        "request_headers": { "x-gitlab-event-uuid": "842d7c3e" },
        "response_status": "internal error",
    }));
    assert_eq!(
        unanswered.guid().as_deref(),
        Some("842d7c3e"),
        "no key: the event's UUID"
    );
    assert_eq!(unanswered.status_code(), 0, "no answer at all");
    let numeric = event(serde_json::json!({ "id": 4, "response_status": 404 }));
    assert_eq!((numeric.guid(), numeric.status_code()), (None, 404));
    let odd = event(serde_json::json!({ "id": 5, "response_status": null }));
    assert_eq!(odd.status_code(), 0);
}
