//! Whether PostgreSQL's commit, and so the answer that says stored, waits for the WAL to be
//! on disk (and on the synchronous standbys a primary names), read once at start.

use tokio_postgres::Client;

/// Why a commit of this session's settings may return before it is durable, or `None` when
/// it waits. `off` returns before the local WAL flush; `local` on a primary that names
/// synchronous standbys returns before they have it, so a failover can lose it. `remote_write`
/// and `remote_apply` wait for the standbys, and `on` for both.
pub(super) async fn check(client: &Client) -> Result<Option<String>, tokio_postgres::Error> {
    let row = client
        .query_one(
            "SELECT current_setting('synchronous_commit'),
                    current_setting('synchronous_standby_names'),
                    pg_is_in_recovery()",
            &[],
        )
        .await?;
    let (commit, standbys, in_recovery): (String, String, bool) =
        (row.get(0), row.get(1), row.get(2));
    Ok(judge(&commit, &standbys, in_recovery))
}

fn judge(commit: &str, standbys: &str, in_recovery: bool) -> Option<String> {
    match commit {
        "off" => Some(
            "synchronous_commit is off: a commit returns before its WAL is flushed, so a \
             crash of the database server can lose acknowledged deliveries"
                .to_owned(),
        ),
        "local" if !standbys.trim().is_empty() && !in_recovery => Some(format!(
            "synchronous_commit is local on a primary with synchronous standbys \
             ({standbys}): a commit does not wait for them, so a failover can lose \
             acknowledged deliveries"
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests;
