//! The player account's API under `/api/account` (docs/ACCOUNT.md lists
//! every endpoint), the payment provider's webhook, and the demo's sandbox
//! provider (`/sandbox/pay`), which plays the provider's part for the
//! player's own deposits and confirms them in-process through the service
//! the webhook calls, so the whole deposit loop runs on one machine.

use super::api::Newcomer;
use super::body::Body;
use super::console_kit::Answer;
use super::csrf::cross_site;
use super::extract::{PageQuery, Params, PathId};
use super::password::Guarded;
use super::player_session::{ActingPlayer, CurrentPlayer, session_cookie};
use super::{ApiError, AppState};
use crate::account::{Iban, Identity, ReminderMinutes};
use crate::error::Error;
use crate::protect::Limits;
use crate::service::{AccountView, Opening, Registration};
use axum::body::Bytes;
use axum::extract::{Form, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post, put};
use axum::{Json, Router};
use hmac::{Hmac, Mac};
use serde::Deserialize;
use serde_json::json;
use sha2::Sha256;

pub fn routes() -> Router<AppState> {
    let player = Router::new()
        .route("/api/account/open", post(open))
        .route("/api/account", get(account))
        .route("/api/account/rules", post(accept_rules))
        .route("/api/account/reminder", put(set_reminder))
        .route("/api/account/marketing", put(set_marketing))
        .route("/api/account/iban", put(set_iban))
        .route("/api/account/close", post(close))
        .route("/api/account/deposits", post(ask_deposit))
        .route("/api/account/deposits/{id}", get(deposit))
        .route(
            "/api/account/withdrawals",
            post(ask_withdrawal).get(withdrawals),
        )
        .route(
            "/api/account/withdrawals/{id}/cancel",
            post(cancel_withdrawal),
        )
        .route("/api/account/statement", get(statement))
        .route("/api/account/statement.csv", get(statement_csv));
    // The CSRF proof on every state-changing route but the webhook (the
    // provider is no browser: its proof is the signature) and `no-store` on
    // all are the gate's (`gate.rs`), as for every `/api/` route.
    Router::new()
        .merge(player)
        .route("/api/payments/webhook", post(webhook))
        .route("/sandbox/pay", get(sandbox_page).post(sandbox_pay))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IdentityBody {
    birth_name: String,
    first_names: String,
    birth_date: String,
    birth_place: String,
    address: String,
    email: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenBody {
    username: String,
    password: String,
    #[serde(default)]
    accept_rules: bool,
    #[serde(default)]
    marketing_consent: bool,
    identity: IdentityBody,
    iban: Option<String>,
    deposit_limit_cents: Option<i64>,
    stake_limit_cents: Option<i64>,
}

async fn open(newcomer: Newcomer, Body(body): Body<OpenBody>) -> Result<Response, ApiError> {
    let service = newcomer.admit()?;
    let i = &body.identity;
    let identity = Identity::parse(
        &i.birth_name,
        &i.first_names,
        &i.birth_date,
        &i.birth_place,
        &i.address,
        i.email.as_deref(),
    )?;
    let iban = body.iban.as_deref().map(Iban::parse).transpose()?;
    // The age is proved by the birth date, checked in the job with the server's clock.
    let mut registration =
        Registration::parse(&body.username, &body.password, true, body.accept_rules)?.with_limits(
            Limits::parse(body.deposit_limit_cents, body.stake_limit_cents)?,
        );
    registration.opening = Some(Opening {
        identity,
        marketing_consent: body.marketing_consent,
        iban,
    });
    let player = service.register(registration).await?;
    // The account is open: a failure to send the link is logged, and the
    // player may ask again (`PUT /api/account/email`).
    if let Err(error) = service.send_email_confirmation(&player).await {
        tracing::warn!(%error, "the address confirmation was not sent");
    }
    newcomer.logged_in(&player).await
}

/// The account, and when this request's session opened: the page counts
/// the time played this session from there (`session_elapsed_s` is by the
/// server's clock, so the browser's own clock need not agree with it).
async fn account(me: CurrentPlayer) -> Result<Json<serde_json::Value>, ApiError> {
    let service = me.service();
    let view = service.account(&me.player).await?;
    let mut body = serde_json::to_value(view).expect("the account view serializes");
    let started_ms = service.session_started_ms(&me.token).await?;
    if let (Some(started_ms), Some(object)) = (started_ms, body.as_object_mut()) {
        let elapsed_s = (service.now_ms() - started_ms).max(0) / 1000;
        object.insert(
            "session_started_at".to_owned(),
            json!(crate::service::rfc3339(started_ms)),
        );
        object.insert("session_elapsed_s".to_owned(), json!(elapsed_s));
    }
    let confirmed = service.email_confirmed_at(&me.player).await?;
    if let Some(object) = body.as_object_mut() {
        object.insert("email_confirmed_at".to_owned(), json!(confirmed));
    }
    Ok(Json(body))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RulesBody {
    version: i64,
}

/// What a change to the account answers: the account's view.
type Viewed = Result<Json<AccountView>, ApiError>;

async fn accept_rules(me: ActingPlayer, Body(body): Body<RulesBody>) -> Viewed {
    me.service().accept_rules(&me.player, body.version).await?;
    me.account().await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ReminderBody {
    every_minutes: Option<i64>,
}

async fn set_reminder(me: ActingPlayer, Body(body): Body<ReminderBody>) -> Viewed {
    let every = ReminderMinutes::parse(body.every_minutes)?;
    me.service().set_reminder(&me.player, every).await?;
    me.account().await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct MarketingBody {
    consent: bool,
}

async fn set_marketing(me: ActingPlayer, Body(body): Body<MarketingBody>) -> Viewed {
    me.service()
        .set_marketing_consent(&me.player, body.consent)
        .await?;
    me.account().await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct IbanBody {
    iban: String,
    current_password: String,
}

async fn set_iban(guarded: Guarded, Body(body): Body<IbanBody>) -> Viewed {
    let iban = Iban::parse(&body.iban)?;
    let confirmed = guarded.confirm(&body.current_password).await?;
    let me = &guarded.me;
    me.service().set_iban(&me.player, confirmed, iban).await?;
    me.account().await
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CloseBody {
    #[serde(default)]
    confirm: bool,
}

async fn close(me: ActingPlayer, Body(body): Body<CloseBody>) -> Answer {
    if !body.confirm {
        return Err(
            Error::Validation("confirm: true closes the account for good".to_owned()).into(),
        );
    }
    let closed = me.service().close_account(&me.player).await?;
    // Every session of the player has ended: the cookie goes too.
    Ok((
        [(header::SET_COOKIE, session_cookie(&me.state, "", 0))],
        Json(closed),
    )
        .into_response())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct AmountBody {
    amount_cents: i64,
}

async fn ask_deposit(me: ActingPlayer, Body(body): Body<AmountBody>) -> Answer {
    let deposit = me
        .service()
        .ask_deposit(&me.player, body.amount_cents)
        .await?;
    Ok((StatusCode::CREATED, Json(deposit)).into_response())
}

fn id_of(text: &str) -> Result<i64, ApiError> {
    text.parse::<i64>().map_err(|_| Error::NotFound.into())
}

async fn deposit(me: CurrentPlayer, PathId(id): PathId) -> Answer {
    // PathId: a segment that is not UTF-8 or not a number is a JSON 404,
    // like any other API error (axum's own rejection is plain text).
    Ok(Json(me.service().deposit_of(Some(me.player.id), id).await?).into_response())
}

async fn webhook(
    State(state): State<AppState>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Response, ApiError> {
    let header = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    };
    let confirmed = state
        .service
        .confirm_payment(
            header(crate::service::payments_headers::TIMESTAMP),
            header(crate::service::payments_headers::SIGNATURE),
            &body,
        )
        .await?;
    Ok(Json(confirmed).into_response())
}

async fn ask_withdrawal(me: ActingPlayer, Body(body): Body<AmountBody>) -> Answer {
    let withdrawal = me
        .service()
        .ask_withdrawal(&me.player, body.amount_cents)
        .await?;
    Ok((StatusCode::CREATED, Json(withdrawal)).into_response())
}

async fn withdrawals(me: CurrentPlayer) -> Answer {
    let withdrawals = me.service().withdrawals_of(&me.player).await?;
    Ok(Json(json!({ "withdrawals": withdrawals })).into_response())
}

async fn cancel_withdrawal(me: ActingPlayer, PathId(id): PathId) -> Answer {
    Ok(Json(me.service().cancel_withdrawal(&me.player, id).await?).into_response())
}

async fn statement(me: CurrentPlayer, Params(query): Params<PageQuery>) -> Answer {
    let (limit, cursor) = query.parse(50, 500)?;
    Ok(Json(me.service().statement(&me.player, limit, cursor).await?).into_response())
}

async fn statement_csv(me: CurrentPlayer) -> Answer {
    let csv = me.service().statement_csv(&me.player).await?;
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"statement.csv\"",
            ),
        ],
        csv,
    )
        .into_response())
}

// ---------------------------------------------------------------------------
// The sandbox provider (demo mode only).

#[derive(Deserialize)]
struct SandboxQuery {
    deposit: Option<String>,
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn sandbox_html(title: &str, body: &str) -> Response {
    Html(format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width\">\
         <link rel=\"icon\" href=\"data:,\"><title>{title}</title></head>\
         <body><h1>{title}</h1>{body}</body></html>",
        title = escape(title)
    ))
    .into_response()
}

/// The sandbox's payment page, for the logged-in player's own deposit
/// (another's is not found, its amount not shown): the form carries the
/// proof [`sandbox_proof`] that a cross-site form cannot know.
async fn sandbox_page(me: CurrentPlayer, Query(query): Query<SandboxQuery>) -> Answer {
    if !me.service().is_demo().await? {
        return Err(Error::DemoOnly.into());
    }
    let id = id_of(query.deposit.as_deref().unwrap_or(""))?;
    let deposit = me.service().deposit_of(Some(me.player.id), id).await?;
    let form = format!(
        "<p>Sandbox payment provider (demo): deposit n° {id} of {amount}, {state}.</p>\
         <form method=\"post\" action=\"/sandbox/pay\">\
         <input type=\"hidden\" name=\"deposit\" value=\"{id}\">\
         <input type=\"hidden\" name=\"proof\" value=\"{proof}\">\
         <button name=\"outcome\" value=\"succeeded\" id=\"pay\">Pay</button> \
         <button name=\"outcome\" value=\"failed\" id=\"decline\">Decline</button></form>\
         <p><a href=\"/#/account/deposit/{id}\" id=\"back\">Back to the site</a></p>",
        amount = escape(&crate::model::euros(deposit.amount_cents)),
        state = escape(&deposit.state),
        proof = hex::encode(sandbox_proof(&me.token, id)),
    );
    let mut page = sandbox_html("Sandbox provider", &form);
    page.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(page)
}

/// The sandbox form's CSRF proof: an HMAC of the deposit's id under the
/// player's session token, which only a page of this site, read with the
/// session's cookie, can show (a form cannot carry the API's header).
fn sandbox_proof(session_token: &str, deposit_id: i64) -> Vec<u8> {
    sandbox_mac(session_token, deposit_id)
        .finalize()
        .into_bytes()
        .to_vec()
}

fn sandbox_mac(session_token: &str, deposit_id: i64) -> Hmac<Sha256> {
    let mut mac =
        Hmac::<Sha256>::new_from_slice(session_token.as_bytes()).expect("HMAC takes any key");
    mac.update(format!("sandbox-pay:{deposit_id}").as_bytes());
    mac
}

#[derive(Deserialize)]
struct SandboxForm {
    deposit: String,
    outcome: String,
    #[serde(default)]
    proof: String,
}

/// Plays the provider: pays or declines the player's own deposit, in
/// process ([`crate::service::Service::sandbox_confirm`]), after the
/// session, the form's proof and the browser's word on where the request
/// comes from.
async fn sandbox_pay(
    headers: HeaderMap,
    me: CurrentPlayer,
    Form(form): Form<SandboxForm>,
) -> Answer {
    if !me.service().is_demo().await? {
        return Err(Error::DemoOnly.into());
    }
    if let Some(why) = cross_site(&headers) {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "csrf",
            format!("cross-site requests are refused: {why}"),
        ));
    }
    let id = id_of(&form.deposit)?;
    // Another player's deposit is not found, whatever the form carries.
    me.service().deposit_of(Some(me.player.id), id).await?;
    let proven = hex::decode(form.proof.trim())
        .is_ok_and(|proof| sandbox_mac(&me.token, id).verify_slice(&proof).is_ok());
    if !proven {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "csrf",
            "the sandbox's form must carry the proof its page gives",
        ));
    }
    let paid = form.outcome != "failed";
    me.service().sandbox_confirm(&me.player, id, paid).await?;
    // Back to the page's account screen, which asks how the deposit ended.
    Ok(Redirect::to(&format!("/#/account/deposit/{id}")).into_response())
}
