//! The operator command line (add, list, change, disable) and the single-operator installation.

use super::*;
use crate::common::staff::operator_add;

on_both!(
    the_operator_commands_add_list_change_and_disable_accounts,
    |db: &TestDb| {
        let output = operator_add(db, &["--username", "Alice", "--role", "viewer"], PASSWORD);
        assert_exit(&output, 0);
        let accounts = list(db);
        assert_eq!(accounts.len(), 1);
        assert_eq!(accounts[0]["username"], "alice");
        assert_eq!(accounts[0]["role"], "viewer");
        assert_eq!(accounts[0]["enrolled"], false);
        assert_eq!(accounts[0]["disabled"], false);
        // Refused: the same name, a short password, a bad name or role.
        for (args, password) in [
            (vec!["--username", "alice", "--role", "auditor"], PASSWORD),
            (vec!["--username", "bob", "--role", "viewer"], "short"),
            (vec!["--username", "b o b", "--role", "viewer"], PASSWORD),
            (vec!["--username", "bob", "--role", "admin"], PASSWORD),
        ] {
            let output = operator_add(db, &args, password);
            assert_eq!(
                output.status.code(),
                Some(2),
                "{args:?}: {}",
                describe(&output)
            );
        }
        assert_eq!(list(db).len(), 1);
        db.tresor_ok(&[
            "operator",
            "role",
            "--username",
            "alice",
            "--role",
            "auditor",
        ]);
        assert_eq!(list(db)[0]["role"], "auditor");
        let output = db.tresor(&[
            "operator",
            "role",
            "--username",
            "nobody",
            "--role",
            "auditor",
        ]);
        assert_exit(&output, 2);
        let table = db.tresor_ok(&["operator", "list"]);
        assert!(String::from_utf8_lossy(&table.stdout).contains("alice"));
        // Enrolled first, so that the reset has a secret to take away.
        {
            use tresor::service::Clock as _;
            let (service, clock) = db.service().await;
            let checked = service
                .check_staff_password("alice", PASSWORD)
                .await
                .unwrap();
            assert!(!checked.enrolled);
            let secret = b"a secret of 20 bytes".to_vec();
            let code = totp_code(&secret, clock.now_ms() / 1000);
            service
                .open_staff_session(&checked.member, &code, Some(secret))
                .await
                .unwrap();
        }
        assert_eq!(list(db)[0]["enrolled"], true);
        db.tresor_ok(&["operator", "reset-totp", "--username", "alice"]);
        assert_eq!(
            list(db)[0]["enrolled"],
            false,
            "the reset takes the secret away: the next login enrols again"
        );
        db.tresor_ok(&["operator", "disable", "--username", "alice"]);
        assert_eq!(list(db)[0]["disabled"], true);
        // The disabled account's password no longer opens the console.
        let (service, _clock) = db.service().await;
        assert!(
            service
                .check_staff_password("alice", PASSWORD)
                .await
                .is_err()
        );
        // Each change is in the trail as the command line's.
        let actions: Vec<(String, String)> = sqlx::query_as(
            "SELECT actor, action FROM trail WHERE action LIKE 'staff_%' ORDER BY seq",
        )
        .fetch_all(&service.db.pool)
        .await
        .unwrap();
        let operator = |action: &str| ("operator".to_owned(), action.to_owned());
        assert_eq!(
            actions,
            vec![
                operator("staff_add"),
                operator("staff_role"),
                operator("staff_reset_totp"),
                operator("staff_disable"),
            ]
        );
        db.tresor_ok(&["audit", "verify"]);
    }
);

on_both!(
    a_single_operator_installation_says_so,
    four_eyes(true, 1_000_000, 5_000_000),
    |app| {
        let (alice, _) = logged_in(&app, "alice", Role::Operator).await;
        let dora = real_money_player(&app, &alice, "dora", 5_000).await;
        expect(StatusCode::OK, alice.verify_account(dora, IBAN).await);
        let id = withdraw(&app, 1_000).await;
        expect(StatusCode::OK, alice.approve(id).await);
        let result = record(&app, "result", "withdrawal_paid").await;
        assert_eq!(result["single_operator"], true);
        assert_eq!(result["credited_by"], json!(["staff:alice"]));
    }
);
