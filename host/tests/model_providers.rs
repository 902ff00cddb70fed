//! Provider profiles and resume through `cst-agent exec` (issue 16 items 2 and 4): a named
//! provider's headers and query parameters reach the server, its secret header never reaches the
//! transcript, and `exec --continue` / `--resume ID` go on from the last session's transcript.

use cst_test_support::{call, Reply, ScriptedServer};
use serde_json::json;

mod exec_support;
use exec_support::*;

fn with_providers(f: &Fixture, server: &ScriptedServer) {
    std::fs::write(
        f.config_dir().join("settings.json"),
        json!({
            "model": {"name": "plain", "base_url": "http://127.0.0.1:9/v1"},
            "providers": {
                "proxy": {
                    "api": "chat",
                    "base_url": server.url(),
                    "api_key_env": "CST_TEST_KEY",
                    "model": "proxied-model",
                    "headers": {"api-key": "${CST_TEST_KEY}", "X-Title": "cst-agent tests"},
                    "query_params": {"api-version": "2025-04-01-preview"}
                }
            }
        })
        .to_string(),
    )
    .expect("settings.json");
}

#[test]
fn a_named_provider_sends_its_headers_and_query_and_hides_its_secret() {
    let server = ScriptedServer::start(vec![Reply::text("hello from the proxy")]);
    let f = Fixture::new(&server);
    with_providers(&f, &server);
    let out = f.run(&["exec", "--provider", "proxy", "--json", "say hello"]);
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let req = &server.requests()[0];
    assert_eq!(req.model(), "proxied-model");
    assert_eq!(req.query.as_deref(), Some("api-version=2025-04-01-preview"));
    let header = |name: &str| req.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
    assert_eq!(header("api-key").as_deref(), Some(KEY));
    assert_eq!(header("x-title").as_deref(), Some("cst-agent tests"));
    server.finish();
    // The key went to the server as a header, and nowhere else.
    let transcript = std::fs::read_to_string(f.session_dir().join("main.jsonl")).expect("transcript");
    assert!(!transcript.contains(KEY) && !stdout.contains(KEY));
}

#[test]
fn an_unknown_provider_is_a_usage_error_naming_the_known_ones() {
    let server = ScriptedServer::start(vec![]);
    let f = Fixture::new(&server);
    with_providers(&f, &server);
    let out = f.run(&["exec", "--provider", "nope", "hi"]);
    assert_eq!(out.status.code(), Some(2));
    let stderr = text(&out.stderr);
    assert!(
        stderr.contains("no provider `nope`") && stderr.contains("proxy"),
        "{stderr}"
    );
    server.finish_allow_unused();
}

#[test]
fn exec_continue_goes_on_from_the_last_session() {
    let server = ScriptedServer::start(vec![
        Reply::calls(vec![call("c1", "read_file", json!({"path": "notes.txt"}))]),
        Reply::text("The notes say: remember the milk."),
        Reply::text("You asked me to read notes.txt."),
    ]);
    let f = Fixture::new(&server);
    std::fs::write(f.ws.path().join("notes.txt"), "remember the milk\n").expect("notes");
    let out = f.run(&["exec", "read notes.txt"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = f.run(&["exec", "--continue", "what did I ask you?"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "You asked me to read notes.txt.\n");
    // The continued session's first request carries the old conversation: the user message, the
    // call and its result, then the new question.
    let req = &server.requests()[2];
    let texts: Vec<String> = req.messages().iter().map(|m| m.to_string()).collect();
    let pos = |needle: &str| texts.iter().position(|t| t.contains(needle));
    assert!(
        pos("read notes.txt").is_some() && pos("remember the milk").is_some(),
        "{texts:?}"
    );
    assert!(pos("read notes.txt") < pos("what did I ask you?"), "{texts:?}");
    assert_eq!(req.tool_result("c1").as_deref(), Some("remember the milk\n"));
    server.finish();

    // --resume with an id that is no session name is refused before any request.
    let out = f.run(&["exec", "--resume", "../../etc", "hi"]);
    assert_eq!(out.status.code(), Some(2));
}
