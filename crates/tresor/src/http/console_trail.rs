//! The console's trail screen (role `trail`, read-only): `GET
//! /console/api/trail/records?actor=&action=&from=&to=&before=&limit=`,
//! records newest first, a page at a time (`next_before` for the next).
//! `docs/CONSOLE.md`, "The trail". Its status, a verification of the whole
//! log and its export as JSON Lines too.

use super::AppState;
use super::console_kit::{Answer, Desk, ok};
use super::extract::{Params, page_size};
use crate::error::Error;
use crate::service::{parse_rfc3339, rfc3339};
use crate::trail::search::{Filter, search};
use axum::body::Body as ResponseBody;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::IntoResponse;
use serde::Deserialize;
use serde_json::{Value, json};

const DAY_MS: i64 = 24 * 3600 * 1000;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RecordsQuery {
    actor: Option<String>,
    action: Option<String>,
    from: Option<String>,
    to: Option<String>,
    before: Option<String>,
    limit: Option<String>,
}

fn text(value: &Option<String>) -> Option<String> {
    value
        .as_deref()
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// A bound of the time range: an RFC 3339 time, or a day (`2026-01-31`,
/// UTC) — its start for `from`, the next day's start for `to` (so the day
/// is included).
fn bound(name: &str, value: &Option<String>, end: bool) -> Result<Option<i64>, Error> {
    let Some(value) = text(value) else {
        return Ok(None);
    };
    if let Ok(date) = time::Date::parse(
        &value,
        time::macros::format_description!("[year]-[month]-[day]"),
    ) {
        let ms = date.midnight().assume_utc().unix_timestamp() * 1000;
        return Ok(Some(if end { ms + DAY_MS } else { ms }));
    }
    parse_rfc3339(&value).map(Some).map_err(|_| {
        Error::Validation(format!(
            "{name}: a day (2026-01-31) or an RFC 3339 time (2026-01-31T12:00:00Z)"
        ))
    })
}

/// A page of trail records matching the query, newest first.
pub(super) async fn records(
    State(state): State<AppState>,
    Params(query): Params<RecordsQuery>,
) -> Answer {
    let limit = page_size(text(&query.limit).as_deref(), 50, 200)?;
    let before_seq = text(&query.before)
        .map(|b| {
            b.parse::<i64>()
                .map_err(|_| Error::Validation("before: a record's number".to_owned()))
        })
        .transpose()?;
    let filter = Filter {
        actor: text(&query.actor),
        action: text(&query.action),
        from_ms: bound("from", &query.from, false)?,
        to_ms: bound("to", &query.to, true)?,
        before_seq,
    };
    if let (Some(from), Some(to)) = (filter.from_ms, filter.to_ms)
        && from >= to
    {
        return Err(Error::Validation("from: before to".to_owned()).into());
    }
    let found = search(&state.service.db.pool, &filter, limit + 1).await?;
    let more = found.len() as i64 > limit;
    let records: Vec<Value> = found
        .iter()
        .take(limit as usize)
        .map(|r| {
            json!({
                "seq": r.seq,
                "at": rfc3339(r.at_ms),
                "actor": r.actor,
                "action": r.action,
                "request": serde_json::from_str::<Value>(&r.request).unwrap_or(Value::String(r.request.clone())),
                "result": serde_json::from_str::<Value>(&r.result).unwrap_or(Value::String(r.result.clone())),
            })
        })
        .collect();
    let next_before = if more {
        records.last().map(|r| r["seq"].clone())
    } else {
        None
    };
    ok(json!({ "records": records, "next_before": next_before }))
}

pub(super) async fn trail_status(State(state): State<AppState>) -> Answer {
    ok(state.service.trail_status().await?)
}

pub(super) async fn verify_trail(desk: Desk) -> Answer {
    ok(desk.service().verify_trail_as(desk.actor()).await?)
}

/// The whole trail as JSON Lines (`tresor audit export`), streamed a page
/// at a time as the client takes it: the next page is read only when the
/// last is sent (one page in memory, whatever the trail's length), and none
/// once the client has gone (the body is dropped with its connection).
pub(super) async fn export_trail(State(state): State<AppState>) -> Answer {
    let pool = state.service.db.pool.clone();
    let stream = futures_util::stream::unfold(Some((pool, 0)), |next| async move {
        let (pool, after_seq) = next?;
        match crate::trail::page(&pool, after_seq, None).await {
            Ok(records) => {
                let last = records.last()?.seq;
                let mut chunk = Vec::new();
                for record in &records {
                    let mut line = serde_json::to_value(record).expect("a record is JSON");
                    line["at"] = Value::String(rfc3339(record.at_ms));
                    chunk.extend_from_slice(line.to_string().as_bytes());
                    chunk.push(b'\n');
                }
                Some((Ok(chunk), Some((pool, last))))
            }
            Err(error) => {
                // The download ends short (the body fails); the log says why.
                tracing::error!(%error, "exporting the trail");
                Some((Err(std::io::Error::other(error.to_string())), None))
            }
        }
    });
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/x-ndjson"),
            ),
            (
                header::CONTENT_DISPOSITION,
                HeaderValue::from_static("attachment; filename=\"tresor-trail.jsonl\""),
            ),
        ],
        ResponseBody::from_stream(stream),
    )
        .into_response())
}
