use super::*;

#[test]
fn the_drainer_waits_out_the_store_doubling_from_50_ms_up_to_2_s() {
    let waits: Vec<u128> = std::iter::successors(Some(MIN_BACKOFF), |wait| Some(next_wait(*wait)))
        .take(8)
        .map(|wait| wait.as_millis())
        .collect();
    assert_eq!(waits, [50, 100, 200, 400, 800, 1600, 2000, 2000]);
}
