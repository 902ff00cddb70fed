//! The admin page in a real browser (D3, D9): Debian's Chromium driven by playwright-core
//! (both installed by scripts/test-deps.sh; the script is tests/admin-browser/toggle-hook.cjs).
//! Sign in, turn a hook off with its toggle, save, see the inventory change; then the file on
//! disk has the hook off and every header value as it was.
//!
//! `CST_UPDATE_SCREENSHOT=1` also writes docs/admin.png.

mod admin_support;

use std::path::PathBuf;
use std::process::Command;

use admin_support::*;

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap()
        .to_path_buf()
}

#[test]
fn d3_browser_signs_in_toggles_a_hook_saves_and_sees_it() {
    let chromium = PathBuf::from("/usr/bin/chromium");
    let playwright = repo().join("target/browser-peers/node_modules/playwright-core");
    if !chromium.exists() || !playwright.exists() || Command::new("node").arg("--version").output().is_err() {
        // scripts/test-deps.sh installs them; CI must not skip.
        assert!(
            std::env::var_os("CI").is_none(),
            "chromium, node or playwright-core is missing"
        );
        eprintln!("skipped: run scripts/test-deps.sh (chromium, node, playwright-core)");
        return;
    }
    let a = Admin::start(Some(&example()));
    let profile = tempfile::tempdir().unwrap();
    let shot = a.dir.path().join("admin.png");
    let out = Command::new("node")
        .arg(repo().join("tests/admin-browser/toggle-hook.cjs"))
        .env("ADMIN_URL", &a.base)
        .env("ADMIN_TOKEN", &a.token)
        .env("HOOK_ID", "trail")
        .env("USER_DATA_DIR", profile.path())
        .env("SCREENSHOT", &shot)
        .env("PLAYWRIGHT_CORE", &playwright)
        .env("SECRETS", SECRETS.join("\n"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains("ok:"),
        "{stdout}\n{}\nserver log:\n{}",
        String::from_utf8_lossy(&out.stderr),
        a.log()
    );
    let saved: serde_json::Value = serde_json::from_slice(&a.file_bytes()).unwrap();
    let trail = saved["hooks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == "trail")
        .unwrap();
    assert_eq!(trail["enabled"], false);
    assert_eq!(saved["mcp"]["servers"][0]["headers"]["X-Team"], STATIC_SECRET);
    assert_eq!(
        saved["mcp"]["servers"][0]["credential_headers"]["Authorization"],
        CREDENTIAL_VAR
    );
    if std::env::var_os("CST_UPDATE_SCREENSHOT").is_some() {
        std::fs::copy(&shot, repo().join("docs/admin.png")).unwrap();
    }
}
