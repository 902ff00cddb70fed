//! The admin pages over HTTP (D3, D4, D9, D10): the real `cst-agent admin serve`, a real client,
//! each attack performed and shown refused — no session, the wrong role, a missing or forged CSRF
//! token, a cross-origin request, invalid submissions, a mask sent to a new URL, plugin fields
//! through the settings route — with the deployment file compared byte for byte afterwards. Every
//! response body is checked for the stored header values (`admin_support::reply`).

mod admin_support;

use admin_support::*;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

fn stored(a: &Admin) -> Value {
    serde_json::from_slice(&a.file_bytes()).unwrap()
}

#[tokio::test]
async fn d4_without_a_session_pages_redirect_and_routes_answer_401() {
    let a = Admin::start(Some(&example()));
    let before = a.file_bytes();
    for page in ["/agent-plugins/", "/settings/"] {
        let r = a.get(page, None).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{page}");
        assert_eq!(r.location.as_deref(), Some("/login"));
    }
    let body = Some(json!({"version": 1}).to_string());
    for route in ["/agent-plugins/save", "/settings/save"] {
        let r = a.send(Method::POST, route, None, Some("x"), body.clone()).await;
        assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{route}");
    }
    // A wrong token, and a cookie the server never issued.
    let r = a.login("cst_admin_0000").await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.set_cookie.is_none());
    let forged = Session {
        cookie: "cst_admin_session=00112233".into(),
        csrf: "x".into(),
    };
    assert_eq!(
        a.post("/agent-plugins/save", &forged, "{\"version\":1}").await.status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        a.get("/agent-plugins/", Some(&forged)).await.status,
        StatusCode::SEE_OTHER
    );
    assert_eq!(a.file_bytes(), before);
}

#[tokio::test]
async fn d4_an_ordinary_user_gets_403_from_the_plugin_page_and_route() {
    let a = Admin::start(Some(&example()));
    let before = a.file_bytes();
    // The user is added while the server runs: sign-in reads the credentials file each time.
    let user_token = a.add_user("alice");
    let user = a.sign_in(&user_token).await;
    assert_eq!(a.get("/settings/", Some(&user)).await.status, StatusCode::OK);
    let page = a.get("/agent-plugins/", Some(&user)).await;
    assert_eq!(page.status, StatusCode::FORBIDDEN);
    assert!(!page.body.contains(HOST), "{}", page.body);
    let r = a.post("/agent-plugins/save", &user, "{\"version\": 1}").await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "{}", r.body);
    assert_eq!(a.file_bytes(), before);
}

#[tokio::test]
async fn d4_missing_or_wrong_csrf_is_403_and_changes_nothing() {
    let a = Admin::start(Some(&example()));
    let before = a.file_bytes();
    let admin = a.super_admin().await;
    let other = a.super_admin().await;
    assert_ne!(admin.csrf, other.csrf, "one CSRF token per session");
    let body = Some(json!({"version": 1}).to_string());
    let wrong = "0".repeat(admin.csrf.len());
    for csrf in [None, Some(""), Some(wrong.as_str()), Some(other.csrf.as_str())] {
        let r = a
            .send(Method::POST, "/agent-plugins/save", Some(&admin), csrf, body.clone())
            .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{csrf:?}: {}", r.body);
        assert!(r.body.contains("CSRF"), "{}", r.body);
    }
    // The right token from another site's page: the browser's Origin gives it away.
    let client = reqwest::Client::new();
    let r = client
        .post(format!("{}/agent-plugins/save", a.base))
        .header("Cookie", &admin.cookie)
        .header("X-CSRF-Token", &admin.csrf)
        .header("Origin", "https://evil.example")
        .body("{\"version\": 1}")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    // A DNS-rebinding page reaches the port under its own name: refused.
    let r = client
        .get(format!("{}/login", a.base))
        .header("Host", "evil.example")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::MISDIRECTED_REQUEST);
    // Sign-out needs the token too.
    let r = client
        .post(format!("{}/logout", a.base))
        .header("Cookie", &admin.cookie)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("csrf=nope")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    let r = client
        .post(format!("{}/logout", a.base))
        .header("Cookie", &admin.cookie)
        .header("Content-Type", "application/x-www-form-urlencoded")
        .body("")
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::FORBIDDEN);
    assert_eq!(a.file_bytes(), before);
    assert_eq!(a.get("/agent-plugins/", Some(&admin)).await.status, StatusCode::OK);
}

#[tokio::test]
async fn d4_invalid_submissions_are_400_naming_the_field_and_change_nothing() {
    let a = Admin::start(Some(&example()));
    let before = a.file_bytes();
    let admin = a.super_admin().await;
    let mut bad_url = example();
    bad_url["mcp"]["servers"][0]["url"] = json!("https://user:pw-in-url-5150@mcp.example.com/mcp");
    let mut unknown = example();
    unknown["hooks"][1]["colour"] = json!("red");
    let mut bad_var = example();
    bad_var["mcp"]["servers"][0]["credential_headers"]["Authorization"] = json!("HOME");
    let mut bad_scope = example();
    bad_scope["mcp"]["servers"][0]["id"] = json!("renamed");
    let cases: Vec<(String, &str)> = vec![
        ("{\"version\": 1,".into(), "not valid JSON"),
        ("[]".into(), "(top level)"),
        (json!({"version": 2}).to_string(), "version:"),
        (bad_url.to_string(), "mcp.servers[0].url: must not contain userinfo"),
        (unknown.to_string(), "hooks[1].colour: unknown field"),
        (
            bad_var.to_string(),
            "mcp.servers[0].credential_headers.Authorization: must name",
        ),
        (bad_scope.to_string(), "mcp_repository_scopes.docs: no server"),
    ];
    for (body, field) in cases {
        let r = a.post("/agent-plugins/save", &admin, &body).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{body}");
        let errors: Value = serde_json::from_str(&r.body).unwrap();
        let list: Vec<&str> = errors["errors"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(list.iter().any(|e| e.contains(field)), "{field}: {list:?}");
        assert!(!r.body.contains("pw-in-url-5150"), "{}", r.body);
        assert_eq!(a.file_bytes(), before, "an invalid submission changed the file");
    }
    // Larger than the file may be: refused before it is read.
    let huge = format!("{{\"version\": 1, \"x\": \"{}\"}}", "a".repeat(1_100_000));
    let r = a.post("/agent-plugins/save", &admin, &huge).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(a.file_bytes(), before);
}

#[tokio::test]
async fn d3_d9_the_page_masks_every_header_and_the_mask_round_trip_keeps_them() {
    let a = Admin::start(Some(&example()));
    let admin = a.super_admin().await;
    let page = a.get("/agent-plugins/", Some(&admin)).await;
    assert_eq!(page.status, StatusCode::OK);
    // The inventory: ids, the host only, states, policy and scopes.
    assert_eq!(row_state(&page.body, "servers", "docs").as_deref(), Some("enabled"));
    assert_eq!(row_state(&page.body, "hooks", "checks").as_deref(), Some("enabled"));
    let servers = &page.body
        [page.body.find("<section id=\"servers\"").unwrap()..page.body.find("<section id=\"hooks\"").unwrap()];
    assert!(
        servers.contains(&format!("<td>{HOST}</td>")) && !servers.contains(URL_PATH),
        "{servers}"
    );
    assert!(
        servers.contains("owner/repo") && servers.contains("1 tool override"),
        "{servers}"
    );
    // Text from the file is escaped; the tool name that is HTML is not markup.
    assert!(!page.body.contains("<script>alert(1)"), "unescaped");
    assert!(page.body.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(page.body.contains("plugins install"), "the skills pointer");

    // The editor: every header value masked.
    let mut config = editor_json(&page.body);
    let server = &config["mcp"]["servers"][0];
    assert_eq!(server["headers"]["X-Team"], "[UNCHANGED SECRET]");
    assert_eq!(server["credential_headers"]["Authorization"], "[UNCHANGED SECRET]");

    // Sent back with a hook turned off and one hook added: the stored values are kept.
    config["hooks"][0]["enabled"] = json!(false);
    config["hooks"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "more", "event": "task_failed", "kind": "audit"}));
    let r = a.post("/agent-plugins/save", &admin, &config.to_string()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let saved = stored(&a);
    assert_eq!(saved["mcp"]["servers"][0]["headers"]["X-Team"], STATIC_SECRET);
    assert_eq!(
        saved["mcp"]["servers"][0]["credential_headers"]["Authorization"],
        CREDENTIAL_VAR
    );
    assert_eq!(saved["hooks"][0]["enabled"], false);
    let page = a.get("/agent-plugins/", Some(&admin)).await;
    assert_eq!(row_state(&page.body, "hooks", "checks").as_deref(), Some("disabled"));
    assert_eq!(row_state(&page.body, "hooks", "more").as_deref(), Some("enabled"));

    // Removing the server (and its scope) removes it from the inventory.
    let mut config = editor_json(&page.body);
    config["mcp"]["servers"] = json!([]);
    config["mcp_repository_scopes"] = json!({});
    let r = a.post("/agent-plugins/save", &admin, &config.to_string()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let page = a.get("/agent-plugins/", Some(&admin)).await;
    assert!(row_state(&page.body, "servers", "docs").is_none());
    assert!(page.body.contains("MCP servers (0)"));
    // The file is still one the loader accepts, with a mode it accepts.
    let check = a.cli(&["deployment", "check", a.file.to_str().unwrap()]);
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&a.file).unwrap().permissions().mode() & 0o777, 0o644);
    }
}

#[tokio::test]
async fn d9_a_changed_url_keeps_no_secret_and_needs_the_credential_again() {
    let a = Admin::start(Some(&example()));
    let before = a.file_bytes();
    let admin = a.super_admin().await;
    let masked = editor_json(&a.get("/agent-plugins/", Some(&admin)).await.body);

    // The same server moved to another endpoint, masks left in: refused, naming each header.
    let mut moved = masked.clone();
    moved["mcp"]["servers"][0]["url"] = json!("https://attacker.example/collect");
    let r = a.post("/agent-plugins/save", &admin, &moved.to_string()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{}", r.body);
    assert!(
        r.body
            .contains("mcp.servers[0].headers.X-Team: the server's URL changed"),
        "{}",
        r.body
    );
    assert!(
        r.body
            .contains("mcp.servers[0].credential_headers.Authorization: the server's URL changed"),
        "{}",
        r.body
    );
    assert_eq!(a.file_bytes(), before);

    // A mask under a new server id, or a header name the server never had: refused too.
    let mut renamed = masked.clone();
    renamed["mcp"]["servers"][0]["id"] = json!("docs2");
    renamed["mcp_repository_scopes"] = json!({});
    let r = a.post("/agent-plugins/save", &admin, &renamed.to_string()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.contains("no stored server has this id"), "{}", r.body);
    let mut new_name = masked.clone();
    new_name["mcp"]["servers"][0]["headers"] = json!({"X-Other": "[UNCHANGED SECRET]"});
    let r = a.post("/agent-plugins/save", &admin, &new_name.to_string()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.contains("mcp.servers[0].headers.X-Other"), "{}", r.body);
    assert_eq!(a.file_bytes(), before);

    // The move with the values entered again is saved, with the new values.
    moved["mcp"]["servers"][0]["headers"]["X-Team"] = json!("new-static-value");
    moved["mcp"]["servers"][0]["credential_headers"]["Authorization"] = json!("CST_MCP_ATTACKER_NEW");
    let r = a.post("/agent-plugins/save", &admin, &moved.to_string()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let saved = stored(&a);
    assert_eq!(saved["mcp"]["servers"][0]["headers"]["X-Team"], "new-static-value");
    assert!(!String::from_utf8(a.file_bytes()).unwrap().contains(STATIC_SECRET));
}

#[tokio::test]
async fn d4_a_save_over_a_file_changed_since_the_page_was_loaded_is_refused() {
    let a = Admin::start(Some(&example()));
    let admin = a.super_admin().await;
    let page = a.get("/agent-plugins/", Some(&admin)).await;
    let (mut config, version) = (editor_json(&page.body), editor_version(&page.body));
    assert!(!version.is_empty());
    // Another admin (or a hand edit) changes the file meanwhile.
    let mut theirs = example();
    theirs["hooks"][1]["required"] = json!(true);
    std::fs::write(&a.file, serde_json::to_string_pretty(&theirs).unwrap()).unwrap();
    let changed = a.file_bytes();
    config["hooks"][0]["enabled"] = json!(false);
    let r = a
        .post_versioned("/agent-plugins/save", &admin, &config.to_string(), &version)
        .await;
    assert_eq!(r.status, StatusCode::CONFLICT, "{}", r.body);
    assert!(r.body.contains("changed since this page was loaded"), "{}", r.body);
    assert_eq!(a.file_bytes(), changed);
    // Reloaded: the new version saves.
    let page = a.get("/agent-plugins/", Some(&admin)).await;
    let mut config = editor_json(&page.body);
    config["hooks"][0]["enabled"] = json!(false);
    let r = a
        .post_versioned(
            "/agent-plugins/save",
            &admin,
            &config.to_string(),
            &editor_version(&page.body),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(stored(&a)["hooks"][1]["required"], true);
}

#[tokio::test]
async fn d4_a_refused_stored_file_is_listed_masked_and_a_valid_save_replaces_it() {
    let mut broken = example();
    broken["version"] = json!(2);
    broken["hooks"][0]["argv"] = json!([]);
    let a = Admin::start(Some(&broken));
    let admin = a.super_admin().await;
    let page = a.get("/agent-plugins/", Some(&admin)).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.body.contains("The stored file is refused"), "{}", page.body);
    assert!(page.body.contains("version: must be 1") && page.body.contains("hooks[0].argv"));
    // Its editor still shows it, masked (the reply check above found no header value).
    let mut config = editor_json(&page.body);
    assert_eq!(config["mcp"]["servers"][0]["headers"]["X-Team"], "[UNCHANGED SECRET]");
    // A mask cannot keep a value of a file the loader refuses: the values are entered again.
    config["version"] = json!(1);
    config["hooks"][0]["argv"] = json!(["pytest"]);
    let r = a.post("/agent-plugins/save", &admin, &config.to_string()).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
    assert!(r.body.contains("mcp.servers[0].headers.X-Team"), "{}", r.body);
    config["mcp"]["servers"][0]["headers"]["X-Team"] = json!("v2");
    config["mcp"]["servers"][0]["credential_headers"]["Authorization"] = json!("CST_MCP_DOCS");
    let r = a.post("/agent-plugins/save", &admin, &config.to_string()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let check = a.cli(&["deployment", "check", a.file.to_str().unwrap()]);
    assert!(check.status.success(), "{}", String::from_utf8_lossy(&check.stderr));
}

#[tokio::test]
async fn d3_saving_contacts_no_server_and_runs_no_command() {
    let a = Admin::start(Some(&json!({"version": 1})));
    let admin = a.super_admin().await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let marker = a.dir.path().join("hook-ran");
    let config = json!({
        "version": 1,
        "mcp": {"servers": [{"id": "local", "url": format!("http://127.0.0.1:{port}/mcp"), "headers": {"X-A": "b"}}]},
        "hooks": [
            {"id": "touch", "event": "session_start", "kind": "command", "argv": ["touch", marker.to_str().unwrap()]},
            {"id": "touch2", "event": "before_finish", "kind": "command", "argv": ["sh", "-c", format!("touch {}", marker.display())]}
        ]
    });
    let r = a.post("/agent-plugins/save", &admin, &config.to_string()).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let _ = a.get("/agent-plugins/", Some(&admin)).await;
    // Give a stray connection or process time to show itself.
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert!(
        matches!(listener.accept(), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock),
        "saving connected to the MCP server"
    );
    assert!(!marker.exists(), "saving ran a hook's command");
}

#[tokio::test]
async fn d4_the_settings_route_refuses_plugin_fields() {
    let a = Admin::start(Some(&example()));
    std::fs::write(
        &a.settings,
        "{\"model\": {\"name\": \"m1\", \"base_url\": \"http://127.0.0.1:9/v1\"}}\n",
    )
    .unwrap();
    let deployment_before = a.file_bytes();
    let settings_before = std::fs::read(&a.settings).unwrap();
    let user = a.sign_in(&a.add_user("bob")).await;
    let admin = a.super_admin().await;
    for session in [&user, &admin] {
        for (body, field) in [
            (json!({"hooks": []}), "hooks"),
            (json!({"mcp": {"servers": []}}), "mcp"),
            (json!({"mcp_repository_scopes": {}}), "mcp_repository_scopes"),
            (json!({"permission_profile": "full_access"}), "permission_profile"),
            (json!({"trusted_workspaces": ["/"]}), "trusted_workspaces"),
            (json!({"model": {"name": "m2"}, "hooks": []}), "hooks"),
            (json!({"model": {"headers": {"A": "b"}}}), "model.headers"),
        ] {
            let r = a.post("/settings/save", session, &body.to_string()).await;
            assert_eq!(r.status, StatusCode::FORBIDDEN, "{body}: {}", r.body);
            assert!(
                r.body.contains(&format!("{field}: a plugin or deployment field")),
                "{}",
                r.body
            );
        }
        // Where the API key goes is not the page's either.
        let r = a
            .post(
                "/settings/save",
                session,
                &json!({"model": {"base_url": "http://evil"}}).to_string(),
            )
            .await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert_eq!(std::fs::read(&a.settings).unwrap(), settings_before);
    }
    // No CSRF token: refused like the plugin route.
    let r = a
        .send(
            Method::POST,
            "/settings/save",
            Some(&user),
            None,
            Some("{\"model\":{\"name\":\"x\"}}".into()),
        )
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = a
        .post("/settings/save", &user, &json!({"model": {"name": "m2"}}).to_string())
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let settings: Value = serde_json::from_slice(&std::fs::read(&a.settings).unwrap()).unwrap();
    assert_eq!(
        settings["model"],
        json!({"name": "m2", "base_url": "http://127.0.0.1:9/v1"})
    );
    assert_eq!(a.file_bytes(), deployment_before);
}

#[tokio::test]
async fn d10_the_admin_log_has_only_counts_and_the_profile() {
    let a = Admin::start(Some(&example()));
    // A user's settings do not count under a deployment file: its own profile does (D2).
    std::fs::write(&a.settings, "{\"permission_profile\": \"full_access\"}\n").unwrap();
    let admin = a.super_admin().await;
    let mut config = editor_json(&a.get("/agent-plugins/", Some(&admin)).await.body);
    config["hooks"][1]["enabled"] = json!(false);
    config["permission_profile"] = json!("workspace_write");
    assert_eq!(
        a.post("/agent-plugins/save", &admin, &config.to_string()).await.status,
        StatusCode::OK
    );
    config["mcp"]["servers"][0]["url"] = json!("https://other.example/x-path-3391");
    assert_eq!(
        a.post("/agent-plugins/save", &admin, &config.to_string()).await.status,
        StatusCode::BAD_REQUEST
    );
    let _ = a.login("cst_admin_wrong").await;
    let log = a.log();
    assert!(
        log.contains(
            "deployment config saved: 1 MCP servers, 2 hooks, permission profile workspace_write (deployment file)"
        ),
        "{log}"
    );
    assert!(log.contains("save refused (2 problems)"), "{log}");
    for never in [
        HOST,
        URL_PATH,
        "other.example",
        "x-path-3391",
        STATIC_SECRET,
        CREDENTIAL_VAR,
        ARG,
        "pytest",
        "X-Team",
        "Authorization",
        &a.token,
    ] {
        assert!(!log.contains(never), "the admin log carries {never:?}: {log}");
    }
}

#[test]
fn admin_serve_listens_on_loopback_only_and_stores_the_token_hashed() {
    let a = Admin::start(None);
    let out = a.cli(&["admin", "serve", "--listen", "0.0.0.0:0"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not a loopback address"));
    let creds = a.dir.path().join("config/cst-agent/admin-credentials.json");
    let text = std::fs::read_to_string(&creds).unwrap();
    assert!(
        !text.contains(&a.token) && text.contains(&sha256_hex(&a.token)),
        "{text}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&creds).unwrap().permissions().mode() & 0o777, 0o600);
    }
    // A new token replaces the old one; no file means the defaults on the page.
    let out = a.cli(&["admin", "reset-token"]);
    assert!(out.status.success());
    assert!(!std::fs::read_to_string(&creds).unwrap().contains(&sha256_hex(&a.token)));
}

fn sha256_hex(s: &str) -> String {
    use sha2::Digest;
    hex::encode(sha2::Sha256::digest(s.as_bytes()))
}
