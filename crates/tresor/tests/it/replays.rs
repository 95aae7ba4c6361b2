//! A replayed purchase and a page of history read their receipts as cheaply
//! as a read (issue 34): each play's `buy` record found by the play, each
//! checkpoint's signature verified once. Their times are printed
//! (`--nocapture`) for BENCHMARKS.md; `TRESOR_REPLAY_PLAYS` makes the trail
//! longer (300 plays by default).

mod browser;

use crate::common::{TestDb, player, purchase};
use std::time::{Duration, Instant};
use tresor::service::Service;

on_both!(a_replay_and_a_history_page_read_the_receipts_of_their_own_plays);

async fn a_replay_and_a_history_page_read_the_receipts_of_their_own_plays(db: &TestDb) {
    let (service, clock) = db.service_selling("Replays").await;
    let plays: usize = std::env::var("TRESOR_REPLAY_PLAYS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(300);
    let ana = player(&service, "ana").await;
    let bob = player(&service, "bob").await;
    for who in [&ana, &bob] {
        service
            .deposit(who, 50 * plays as i64 + 10_000)
            .await
            .expect("deposit");
    }
    // Ana's plays among Bob's, a millisecond apart, as a server's clock runs.
    let mut first = Vec::new();
    let mut fresh = Duration::ZERO;
    for n in 0..plays {
        let who = if n % 2 == 0 { &ana } else { &bob };
        let key = format!("key-{n:05}-0000-0000-0000-000000000000");
        let started = Instant::now();
        let bought = service.buy(who, purchase(50, &key)).await.expect("bought");
        let view = service.bought_view(who, &bought).await.expect("a view");
        fresh += started.elapsed();
        clock.advance_ms(1);
        if n % 2 == 0 && first.len() < 20 {
            first.push((key, bought.play_id, view.receipt.expect("a receipt")));
        }
    }

    // A replay answers its play with the receipt of its purchase.
    let started = Instant::now();
    for (key, play_id, receipt) in &first {
        let bought = service
            .buy(&ana, purchase(50, key))
            .await
            .expect("replayed");
        assert!(bought.replayed);
        assert_eq!(bought.play_id, *play_id);
        let view = service.bought_view(&ana, &bought).await.expect("a view");
        let replayed = view.receipt.expect("a replay's receipt");
        assert_eq!(replayed.index, receipt.index, "the purchase's own record");
        assert_eq!(replayed.record, receipt.record);
        assert!(!replayed.record.result.contains("\"replayed\":true"));
    }
    let replay = started.elapsed() / first.len() as u32;

    // A page of history: each row with the receipt of its own purchase.
    let started = Instant::now();
    let page = service.history(&ana, 100, None).await.expect("a page");
    let history = started.elapsed();
    assert_eq!(page.plays.len(), 100.min(plays.div_ceil(2)));
    let vkey = published_vkey(&service).await;
    for play in &page.plays {
        let receipt = play.receipt.as_ref().expect("every row has its receipt");
        assert_eq!(receipt.record.action, "buy");
        assert!(
            receipt
                .record
                .result
                .contains(&format!("\"play_id\":{},", play.id)),
            "{receipt:?}"
        );
        receipt.check(&vkey).expect("the receipt checks");
    }
    eprintln!(
        "{plays} plays: a fresh purchase (and its view) {:.2} ms, a replay {:.2} ms, \
         a history page of 100 {:.1} ms",
        fresh.as_secs_f64() * 1e3 / plays as f64,
        replay.as_secs_f64() * 1e3,
        history.as_secs_f64() * 1e3
    );
}

async fn published_vkey(service: &Service) -> String {
    service
        .log_index()
        .await
        .expect("the log's keys")
        .key
        .expect("a key")
}
