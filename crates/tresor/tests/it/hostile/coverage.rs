//! The generated cases reach every endpoint.

use super::*;

#[test]
fn the_generated_cases_reach_every_endpoint() {
    let mut runner = TestRunner::new_with_rng(
        Config::default(),
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    );
    let strategy = arb_case(true);
    let mut paths = BTreeSet::new();
    for _ in 0..5000 {
        let case = strategy.new_tree(&mut runner).unwrap().current();
        let path = case.path.split('?').next().unwrap().to_owned();
        let shape = if let Some(rest) = path.strip_prefix("/api/plays/") {
            match rest.split_once('/') {
                Some((_, "throws")) => "/api/plays/{id}/throws".to_owned(),
                Some(_) => "/api/plays/{id}/…".to_owned(),
                None => "/api/plays/{id}".to_owned(),
            }
        } else {
            path
        };
        paths.insert((case.method, shape));
    }
    for needed in [
        ("POST", "/api/register"),
        ("POST", "/api/login"),
        ("POST", "/api/logout"),
        ("POST", "/api/demo/deposit"),
        ("POST", "/api/plays"),
        ("GET", "/api/plays"),
        ("GET", "/api/plays/{id}"),
        ("POST", "/api/plays/{id}/throws"),
        ("PUT", "/api/limits"),
        ("POST", "/api/limits"),
        ("GET", "/api/limits"),
        ("POST", "/api/exclusion"),
        ("GET", "/api/me"),
        ("GET", "/api/status"),
        ("GET", "/api/blocks"),
        ("GET", "/api/island"),
        ("POST", "/api/account/open"),
        ("PUT", "/api/account/reminder"),
        ("POST", "/api/account/withdrawals"),
        ("POST", "/api/payments/webhook"),
        ("GET", "/api/account/statement"),
    ] {
        assert!(
            paths.contains(&(needed.0, needed.1.to_owned())),
            "{needed:?} never generated"
        );
    }
}
