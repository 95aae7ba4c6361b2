//! The period report reconciled before it is shown: a figure that does not
//! add up refuses the report, naming its period.

use super::read::{Balances, Flows, PlayHour, Transfers};
use super::rollup::Marks;
use super::{PeriodReport, ReportError};
use crate::model::{PENDING_WITHDRAWALS_ACCOUNT, RESERVES_ACCOUNT};
use crate::report::paris::HOUR_MS;
use sqlx::{AnyPool, Row};
use std::ops::Range;

fn refuse(period: &str, what: String) -> ReportError {
    ReportError::Unreconciled {
        period: period.to_owned(),
        what,
    }
}

/// Checks `report` against the ledger it was read from.
pub(super) async fn reconcile(
    pool: &AnyPool,
    report: &PeriodReport,
    range: &Range<i64>,
    marks: Option<Marks>,
    plays: &[PlayHour],
    transfers: &Transfers,
) -> Result<(), ReportError> {
    periods(report, transfers)?;
    let sold = sold(pool, range, marks).await?;
    totals(report, sold, plays, transfers)?;
    now(pool, report, transfers).await
}

/// Each period: its stakes from the plays are its stake transfers, it opens
/// where the one before closed, and no balance it closes at is negative.
fn periods(report: &PeriodReport, transfers: &Transfers) -> Result<(), ReportError> {
    let mut opening = transfers.before;
    for period in &report.periods {
        let name = &period.period;
        let flows = transfers.between(period.start_ms, period.end_ms);
        if period.sales.stakes_cents != flows.stakes {
            return Err(refuse(
                name,
                format!(
                    "the plays' stakes are {} cents, the ledger's stake transfers {} cents",
                    period.sales.stakes_cents, flows.stakes
                ),
            ));
        }
        let m = &period.money;
        let opened = Balances {
            players: m.opening_player_balances_cents,
            pending: opening.pending,
            reserves: m.opening_reserves_cents,
        };
        if opened != opening {
            return Err(refuse(
                name,
                format!("it opens at {opened:?}, the period before closed at {opening:?}"),
            ));
        }
        opening = opening.after(&flows);
        if m.player_balances_cents < 0 || m.reserves_cents < 0 || m.withdrawals_pending_cents < 0 {
            return Err(refuse(
                name,
                "a balance it closes at is negative".to_owned(),
            ));
        }
    }
    Ok(())
}

/// The plays of the range summed apart (units, stakes, prizes), not by
/// hour: the rollup's sums up to `marks` and the plays after them.
async fn sold(
    pool: &AnyPool,
    range: &Range<i64>,
    marks: Option<Marks>,
) -> Result<(i64, i64, i64), ReportError> {
    let live = sqlx::query(
        "SELECT COUNT(*) AS units, CAST(COALESCE(SUM(stake_cents), 0) AS BIGINT) AS stakes, \
         CAST(COALESCE(SUM(prize_cents), 0) AS BIGINT) AS prizes FROM plays \
         WHERE created_at_ms >= $1 AND created_at_ms < $2 AND id > $3",
    )
    .bind(range.start)
    .bind(range.end)
    .bind(marks.unwrap_or_default().plays)
    .fetch_one(pool)
    .await?;
    let mut rows = vec![live];
    if marks.is_some() {
        // The range's bounds are whole hours (Paris days).
        let rolled = sqlx::query(
            "SELECT CAST(COALESCE(SUM(units), 0) AS BIGINT) AS units, \
             CAST(COALESCE(SUM(stakes_cents), 0) AS BIGINT) AS stakes, \
             CAST(COALESCE(SUM(prizes_cents), 0) AS BIGINT) AS prizes FROM report_play_hours \
             WHERE hour >= $1 AND hour < $2",
        )
        .bind(range.start.div_euclid(HOUR_MS))
        .bind(range.end.div_euclid(HOUR_MS))
        .fetch_one(pool)
        .await?;
        rows.push(rolled);
    }
    let mut sold = (0, 0, 0);
    for row in &rows {
        sold.0 += row.try_get::<i64, _>("units")?;
        sold.1 += row.try_get::<i64, _>("stakes")?;
        sold.2 += row.try_get::<i64, _>("prizes")?;
    }
    Ok(sold)
}

/// The periods add up to the range's totals, summed apart: the plays by
/// `sold`, the transfers from their hours.
fn totals(
    report: &PeriodReport,
    sold: (i64, i64, i64),
    plays: &[PlayHour],
    transfers: &Transfers,
) -> Result<(), ReportError> {
    let t = &report.totals;
    let periods = (t.sales.units, t.sales.stakes_cents, t.sales.prizes_cents);
    let hours = plays.iter().fold((0, 0, 0), |(u, s, p), h| {
        (u + h.units, s + h.stakes, p + h.prizes)
    });
    if periods != sold || hours != sold {
        return Err(refuse(
            "total",
            format!(
                "the periods sum to {periods:?} (units, stakes, prizes), the plays to {sold:?}"
            ),
        ));
    }
    let mut moved = Flows::default();
    transfers.within.iter().for_each(|f| moved.add(f));
    let summed = (
        t.money.deposits_cents,
        t.money.withdrawals_paid_cents,
        t.money.prizes_credited_cents,
        t.money.player_balances_cents - t.money.opening_player_balances_cents,
    );
    let ledger = (
        moved.deposits,
        moved.withdrawals_paid,
        moved.prizes_credited,
        moved.players_net,
    );
    if summed != ledger {
        return Err(refuse(
            "total",
            format!(
                "the periods sum to {summed:?} (deposits, withdrawals paid, prizes credited, \
                 players' change), the ledger to {ledger:?}"
            ),
        ));
    }
    Ok(())
}

/// What the last period closes at, with what moved since, is what the
/// accounts hold now.
async fn now(
    pool: &AnyPool,
    report: &PeriodReport,
    transfers: &Transfers,
) -> Result<(), ReportError> {
    let Some(last) = report.periods.last() else {
        return Ok(());
    };
    let closed = Balances {
        players: last.money.player_balances_cents,
        pending: last.money.withdrawals_pending_cents,
        reserves: last.money.reserves_cents,
    };
    let expected = closed.after(&transfers.after);
    let held = Balances {
        players: sum(pool, "kind = 'player'").await?,
        pending: sum(pool, &format!("id = {PENDING_WITHDRAWALS_ACCOUNT}")).await?,
        reserves: sum(pool, &format!("id = {RESERVES_ACCOUNT}")).await?,
    };
    if expected != held {
        return Err(refuse(
            &last.period,
            format!(
                "it closes at {closed:?}, which with the transfers since makes {expected:?}, \
                 but the accounts hold {held:?}"
            ),
        ));
    }
    Ok(())
}

async fn sum(pool: &AnyPool, condition: &str) -> Result<i64, sqlx::Error> {
    sqlx::query_scalar::<_, i64>(&format!(
        "SELECT CAST(COALESCE(SUM(balance_cents), 0) AS BIGINT) FROM accounts WHERE {condition}"
    ))
    .fetch_one(pool)
    .await
}
