//! The console's « Rapports » screen (role `dashboard`, read-only): `GET
//! /console/api/report/periods?by=day|month&from=&to=&format=json|csv`, the
//! figures by Europe/Paris day or month of `tresor report --by`, reconciled
//! with the ledger before they are shown (src/report/period.rs); as CSV, a
//! download. `docs/CONSOLE.md`, "Rapports".

use super::console_kit::Answer;
use super::extract::Params;
use super::{ApiError, AppState};
use crate::error::Error;
use crate::report::paris::{self, By};
use crate::report::period::{self, Ask, ReportError};
use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::IntoResponse;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PeriodsQuery {
    by: Option<String>,
    from: Option<String>,
    to: Option<String>,
    format: Option<String>,
}

/// A Paris day of the query, or a refusal naming its field.
fn date(name: &str, value: Option<&str>) -> Result<Option<time::Date>, Error> {
    match value.map(str::trim).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => paris::parse_date(v)
            .map(Some)
            .map_err(|why| Error::Validation(format!("{name}: {why}"))),
    }
}

/// What the query asks for, checked.
fn ask(query: &PeriodsQuery) -> Result<Ask, Error> {
    let by = match query.by.as_deref().unwrap_or("day") {
        "day" => By::Day,
        "month" => By::Month,
        _ => return Err(Error::Validation("by: day or month".to_owned())),
    };
    let ask = Ask {
        by,
        from: date("from", query.from.as_deref())?,
        to: date("to", query.to.as_deref())?,
        rollup: true,
    };
    if let (Some(from), Some(to)) = (ask.from, ask.to)
        && from > to
    {
        return Err(Error::Validation("from: after to".to_owned()));
    }
    Ok(ask)
}

/// The report by period, as JSON or as a CSV file.
pub(super) async fn periods(
    State(state): State<AppState>,
    Params(query): Params<PeriodsQuery>,
) -> Answer {
    let csv = match query.format.as_deref().unwrap_or("json") {
        "json" => false,
        "csv" => true,
        _ => return Err(Error::Validation("format: json or csv".to_owned()).into()),
    };
    let ask = ask(&query)?;
    let report = period::build(&state.service.db.pool, ask)
        .await
        .map_err(|error| match error {
            ReportError::Store(error) => ApiError::from(error),
            unreconciled @ ReportError::Unreconciled { .. } => ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "report_unreconciled",
                unreconciled.to_string(),
            ),
        })?;
    if !csv {
        return Ok(Json(report).into_response());
    }
    let name = format!("tresor-{}-{}-{}.csv", report.by, report.from, report.to);
    let disposition = HeaderValue::from_str(&format!("attachment; filename=\"{name}\""))
        .map_err(|_| Error::Validation("from: not a date".to_owned()))?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/csv; charset=utf-8"),
            ),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        period::csv(&report),
    )
        .into_response())
}
