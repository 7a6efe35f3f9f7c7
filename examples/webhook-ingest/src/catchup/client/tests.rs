use super::*;

fn answered(status_code: i64) -> Delivery {
    Delivery {
        id: 1,
        guid: "g".into(),
        status_code,
    }
}

#[test]
fn a_delivery_succeeded_only_when_it_was_answered_2xx() {
    for ok in [200, 202, 299] {
        assert!(answered(ok).succeeded(), "{ok}");
    }
    for failed in [0, 199, 300, 404, 500] {
        assert!(!answered(failed).succeeded(), "{failed}");
    }
}

#[test]
fn a_call_is_tried_three_times_waiting_the_backoff_then_twice_it() {
    let waits: Vec<Duration> = retry_waits(Duration::from_millis(250)).collect();
    assert_eq!(
        waits,
        [Duration::from_millis(250), Duration::from_millis(500)],
        "two waits, doubling, between three tries"
    );
}
