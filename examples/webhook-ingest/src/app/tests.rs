//! The routes' state as `app` builds it: its background tasks live as long as a router
//! holding it.

use std::time::Duration;

use crate::app::{app, Config};
use crate::store::Store;

/// The refresher and catch-up's loop run while a router holds the state, a clone of it
/// included, and stop when the last one is dropped.
#[tokio::test]
async fn the_tasks_stop_when_the_last_router_holding_the_state_is_dropped() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let store = Store::open(":memory:").await.unwrap();
    let (router, _ledger) = app(store, Config::default());
    let running = metrics.num_alive_tasks();
    assert!(running >= 2, "{running} tasks");
    let copy = router.clone();
    drop(router);
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert_eq!(metrics.num_alive_tasks(), running);
    drop(copy);
    for _ in 0..200 {
        if metrics.num_alive_tasks() == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(metrics.num_alive_tasks(), 0);
}
