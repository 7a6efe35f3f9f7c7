//! One pass over one inbox: take its lease, list the hook's deliveries newer than its cursor,
//! and for each that failed and is not stored, oldest first, ask its provider (GitHub or
//! GitLab, through [`Providers`](super::providers::Providers)) to redeliver it and
//! move the cursor past it. The cursor moves only after the ask, so a node lost between the
//! two asks again after its lease runs out (a redelivery the store keeps once), and never
//! skips one.

use std::time::Duration;

use super::client::{CallError, Delivery};
use super::credentials::{Auth, Hook};
use super::metrics::InboxLabels;
use super::Runner;
use crate::store::catchup::{CatchUpRow, PassEnd};
use crate::store::StoreError;

/// How long a lease lasts unless renewed; each page listed and each delivery looked at renews
/// it. A node lost mid-pass holds its inbox no longer than this.
pub const LEASE_TTL: Duration = Duration::from_secs(120);
/// Redeliveries asked for one delivery at most: a redelivery that fails too (the service down
/// again) is asked for again, but a delivery the receiver always fails costs no more.
pub const MAX_ASKS_PER_DELIVERY: i64 = 3;
/// How long an ask is remembered waiting for its delivery: GitHub keeps a hook's deliveries
/// for three days, and a redelivery not arrived by then is not coming.
const ASK_MEMORY: Duration = Duration::from_secs(3 * 24 * 60 * 60);

/// Why a pass stopped before its end.
#[derive(Debug)]
pub enum Stopped {
    Call(CallError),
    Store(StoreError),
    /// Another node holds the lease now (this one's ran out).
    LeaseLost,
}

impl From<CallError> for Stopped {
    fn from(error: CallError) -> Self {
        Stopped::Call(error)
    }
}

impl From<StoreError> for Stopped {
    fn from(error: StoreError) -> Self {
        Stopped::Store(error)
    }
}

fn ms(duration: Duration) -> i64 {
    i64::try_from(duration.as_millis()).unwrap_or(i64::MAX)
}

impl Runner {
    /// Runs a pass over the inbox of `row` if its lease is free; how it ended, or `None`
    /// when another node holds the lease. A rate limit's wait is remembered for the inbox.
    pub(super) async fn pass(&mut self, row: &CatchUpRow) -> Result<Option<PassEnd>, StoreError> {
        let (inbox, node) = (row.inbox.clone(), self.node.clone());
        // The cursor as the lease found it: the row read before may be another node's pass
        // behind.
        let leased = self
            .store
            .take_lease(inbox.clone(), node.clone(), ms(LEASE_TTL))
            .await?;
        let row = &match leased {
            Some(cursor) => CatchUpRow {
                cursor,
                ..row.clone()
            },
            None => return Ok(None),
        };
        let labels = InboxLabels::of(row);
        let recovered = self
            .store
            .take_recovered(inbox.clone(), ms(ASK_MEMORY))
            .await?;
        self.metrics
            .recovered
            .get_or_create(&labels)
            .inc_by(recovered);
        let end = match (Hook::of(row), Auth::of(row)) {
            (Some(hook), Ok(auth)) => match self.walk(row, &labels, &hook, &auth).await {
                Ok(()) => PassEnd::Succeeded,
                Err(Stopped::Call(CallError::Refused(reason))) => {
                    let provider = hook.provider_label();
                    self.metrics.stopped_by(&labels, provider, "refused");
                    PassEnd::Refused(reason)
                }
                Err(stopped) => {
                    self.stopped(row, &labels, &hook, stopped);
                    PassEnd::Interrupted
                }
            },
            (None, _) => PassEnd::Refused(format!("unknown hook kind `{}`", row.hook_kind)),
            (_, Err(reason)) => PassEnd::Refused(reason.into()),
        };
        let newly_refused = self.store.end_pass(inbox, node, end.clone()).await?;
        if let (true, PassEnd::Refused(reason)) = (newly_refused, &end) {
            // Once per inbox: the store records the refusal, and only the call that recorded
            // it says so. The loop asks nothing more until new credentials are given.
            let provider = Hook::of(row).map_or("its provider", |hook| hook.provider());
            tracing::error!(instance = %row.instance, inbox = %row.inbox, %reason,
                "catch-up stopped for this inbox: {provider} refuses its credentials; give it new ones");
        }
        Ok(Some(end))
    }

    /// Logs and counts why a pass stopped, and remembers a rate limit's wait.
    fn stopped(&mut self, row: &CatchUpRow, labels: &InboxLabels, hook: &Hook, stopped: Stopped) {
        let provider = hook.provider_label();
        match stopped {
            Stopped::Call(CallError::Wait(wait)) => {
                self.metrics.stopped_by(labels, provider, "rate_limited");
                tracing::info!(inbox = %row.inbox, ?wait, "catch-up waits for the provider's rate limit");
                self.wait_until
                    .insert(row.inbox.clone(), tokio::time::Instant::now() + wait);
            }
            Stopped::Call(CallError::Unavailable(reason)) => {
                self.metrics.stopped_by(labels, provider, "unavailable");
                tracing::warn!(inbox = %row.inbox, %reason, "catch-up stopped; the next pass goes on");
            }
            Stopped::Call(CallError::Refused(_)) => {}
            Stopped::Store(error) => {
                tracing::warn!(inbox = %row.inbox, %error, "catch-up stopped: the store failed");
            }
            Stopped::LeaseLost => {
                tracing::warn!(inbox = %row.inbox, "catch-up stopped: its lease ran out and another node took it");
            }
        }
    }

    /// Lists what is new since the cursor, then asks for each failed delivery not stored.
    async fn walk(
        &self,
        row: &CatchUpRow,
        labels: &InboxLabels,
        hook: &Hook,
        auth: &Auth,
    ) -> Result<(), Stopped> {
        let (failed, newest) = self.list_new(row, hook, auth).await?;
        for delivery in failed {
            let state = self
                .store
                .ask_state(row.inbox.clone(), delivery.guid.clone())
                .await?;
            if !state.stored && state.asks < MAX_ASKS_PER_DELIVERY {
                let pause = self.providers.redeliver(hook, auth, delivery.id).await?;
                self.store
                    .record_ask(row.inbox.clone(), delivery.guid.clone())
                    .await?;
                self.metrics.asked.get_or_create(labels).inc();
                self.advance(row, delivery.id).await?;
                self.metrics.found_failed.get_or_create(labels).inc();
                if let Some(wait) = pause {
                    return Err(Stopped::Call(CallError::Wait(wait)));
                }
            } else {
                self.advance(row, delivery.id).await?;
                self.metrics.found_failed.get_or_create(labels).inc();
            }
        }
        self.advance(row, newest).await
    }

    /// The failed deliveries newer than the cursor, oldest first, and the newest id listed.
    /// Pages are read newest first until one reaches the cursor; each renews the lease.
    async fn list_new(
        &self,
        row: &CatchUpRow,
        hook: &Hook,
        auth: &Auth,
    ) -> Result<(Vec<Delivery>, i64), Stopped> {
        let (mut failed, mut newest, mut page_cursor) = (Vec::new(), row.cursor, None::<String>);
        loop {
            let (page, pause) = self
                .providers
                .deliveries(hook, auth, page_cursor.as_deref())
                .await?;
            let reached = page.deliveries.iter().any(|d| d.id <= row.cursor);
            for delivery in page.deliveries.into_iter().filter(|d| d.id > row.cursor) {
                newest = newest.max(delivery.id);
                if !delivery.succeeded() {
                    failed.push(delivery);
                }
            }
            if reached || page.next.is_none() {
                break;
            }
            if let Some(wait) = pause {
                return Err(Stopped::Call(CallError::Wait(wait)));
            }
            self.advance(row, row.cursor).await?;
            page_cursor = page.next;
        }
        failed.sort_by_key(|d| d.id);
        failed.dedup_by_key(|d| d.id);
        Ok((failed, newest))
    }

    /// Moves the inbox's cursor to `cursor` and renews the lease, while this node holds it.
    async fn advance(&self, row: &CatchUpRow, cursor: i64) -> Result<(), Stopped> {
        let held = self
            .store
            .advance_cursor(row.inbox.clone(), self.node.clone(), cursor, ms(LEASE_TTL))
            .await?;
        if held {
            Ok(())
        } else {
            Err(Stopped::LeaseLost)
        }
    }
}
