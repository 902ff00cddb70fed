//! The HTTP server: routes, sign-in sessions, the CSRF check and the security headers.
//!
//! - sessions: a random id in a `Secure; HttpOnly; SameSite=Strict` cookie, kept in memory only
//!   (a restart signs everyone out), 12 hours at most;
//! - every state-changing request (`POST`) needs the session's CSRF token (header
//!   `X-CSRF-Token`, or the form field `csrf` for sign-out), compared in constant time, and an
//!   `Origin`, when the browser sends one, of this server (hence `Referrer-Policy: same-origin`:
//!   under `no-referrer` Chromium sends `Origin: null`);
//! - a `Host` that is not a loopback name is refused (a DNS-rebinding page cannot talk to it);
//! - every response carries a strict Content-Security-Policy and `Cache-Control: no-store`.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Form, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use cst_config::deployment::{self, DeploymentConfig};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::auth::{self, Credentials, Role};
use crate::deployment_save::{DeploymentFile, SaveError, Stored};
use crate::{pages, settings_save};

/// The files the server reads and writes.
#[derive(Debug, Clone)]
pub struct Options {
    /// The deployment file (`deployment::installed_path()`).
    pub deployment_file: PathBuf,
    /// The user's settings.json.
    pub settings_file: PathBuf,
    /// `admin-credentials.json`.
    pub credentials_file: PathBuf,
}

const COOKIE: &str = "cst_admin_session";
const SESSION_LIFETIME: Duration = Duration::from_secs(12 * 3600);
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
                   connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

#[derive(Clone)]
struct Session {
    role: Role,
    csrf: String,
    started: Instant,
}

struct AppState {
    opts: Options,
    /// SHA-256 of the session id → the session: a lookup by the id's hash leaks nothing usable
    /// through timing.
    sessions: Mutex<HashMap<String, Session>>,
    /// One save at a time.
    save_lock: tokio::sync::Mutex<()>,
    /// The key of [`AppState::file_version`], random per process.
    version_key: String,
}

type Shared = Arc<AppState>;

/// The router of every page and route.
pub fn router(opts: Options) -> Router {
    let state = Arc::new(AppState {
        opts,
        sessions: Mutex::new(HashMap::new()),
        save_lock: tokio::sync::Mutex::new(()),
        version_key: auth::random_hex().unwrap_or_default(),
    });
    Router::new()
        .route("/", get(|| async { Redirect::to("/agent-plugins/") }))
        .route("/agent-plugins", get(|| async { Redirect::to("/agent-plugins/") }))
        .route("/login", get(login_page).post(login))
        .route("/logout", post(logout))
        .route("/agent-plugins/", get(plugins_page))
        .route("/agent-plugins/save", post(plugins_save))
        .route("/settings/", get(settings_page))
        .route("/settings/save", post(settings_save_route))
        .route("/static/admin.js", get(script))
        .route("/static/admin.css", get(style))
        .layer(DefaultBodyLimit::max(deployment::MAX_FILE_BYTES as usize + 4096))
        .layer(middleware::from_fn(guard))
        .with_state(state)
}

/// Serve on `listener` until `shutdown` completes.
pub async fn serve(
    listener: tokio::net::TcpListener,
    opts: Options,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let file = DeploymentFile {
        path: opts.deployment_file.clone(),
    };
    let summary = match file.read() {
        Stored::Valid(c) => counts(&c),
        Stored::Missing => counts(&DeploymentConfig::default()),
        Stored::Invalid { problems, .. } => format!("refused ({} problems)", problems.len()),
    };
    tracing::info!(
        "admin: serving; deployment: {summary}, permission profile {}",
        profile_of(&opts)
    );
    axum::serve(listener, router(opts))
        .with_graceful_shutdown(shutdown)
        .await
}

/// `N MCP servers, M hooks`: all an admin log says of a config (D10).
fn counts(c: &DeploymentConfig) -> String {
    format!("{} MCP servers, {} hooks", c.mcp.servers.len(), c.hooks.len())
}

/// The permission profile in force and who chose it: the deployment file's when it is installed
/// (D2), else the user's settings.json's.
fn profile_of(opts: &Options) -> String {
    let installed = match deployment::load_file(&opts.deployment_file, false) {
        Ok(config) => config,
        Err(_) => return "unknown (the deployment file is refused)".into(),
    };
    let settings = cst_config::settings::Settings::load_from(&opts.settings_file).ok();
    deployment::resolve_profile(installed.as_ref(), settings.as_ref())
        .map(|p| p.describe())
        .unwrap_or_else(|_| "unknown (settings.json is refused)".into())
}

// ---------------------------------------------------------------------------------------------
// The guard and the headers

fn loopback_host(host: &str) -> bool {
    // `127.0.0.1:8080`, `[::1]:8080`, `localhost:8080` (port optional).
    let name = if let Some(rest) = host.strip_prefix('[') {
        rest.split(']').next().unwrap_or("")
    } else {
        host.rsplit_once(':').map_or(host, |(h, _)| h)
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

async fn guard(req: Request, next: Next) -> Response {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut resp = if !loopback_host(&host) {
        (
            StatusCode::MISDIRECTED_REQUEST,
            "this server answers loopback names only\n",
        )
            .into_response()
    } else if req.method() != Method::GET && req.method() != Method::HEAD && !same_origin(req.headers(), &host) {
        (
            StatusCode::FORBIDDEN,
            Json(json!({"errors": ["cross-origin request refused"]})),
        )
            .into_response()
    } else {
        next.run(req).await
    };
    let h = resp.headers_mut();
    h.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("same-origin"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

/// No `Origin` (not a browser's cross-site request), or exactly this server's.
fn same_origin(headers: &HeaderMap, host: &str) -> bool {
    match headers.get(header::ORIGIN).and_then(|o| o.to_str().ok()) {
        None => true,
        Some(origin) => origin == format!("http://{host}") || origin == format!("https://{host}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Sessions

fn cookie_value(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
}

impl AppState {
    fn session(&self, headers: &HeaderMap) -> Option<(String, Session)> {
        let key = auth::sha256_hex(&cookie_value(headers)?);
        let mut sessions = self.sessions.lock().ok()?;
        sessions.retain(|_, s| s.started.elapsed() < SESSION_LIFETIME);
        sessions.get(&key).cloned().map(|s| (key, s))
    }
}

impl AppState {
    /// A fingerprint of the deployment file's bytes as they are now, sent with the page and back
    /// with a save: a file changed in between (another admin, a hand edit) is not overwritten by
    /// an editor that never saw the change. Keyed, so it reveals nothing about the header values
    /// in the file.
    fn file_version(&self) -> String {
        use sha2::Digest;
        let bytes = std::fs::read(&self.opts.deployment_file).unwrap_or_default();
        let mut h = sha2::Sha256::new();
        h.update(self.version_key.as_bytes());
        h.update(&bytes);
        hex::encode(h.finalize())
    }
}

/// Why a request is refused before its work.
enum Refusal {
    /// No session: 401 for routes, a redirect to the sign-in page for pages.
    NoSession,
    /// A role that may not do this.
    Forbidden,
    BadCsrf,
}

impl Refusal {
    fn api(self) -> Response {
        match self {
            Refusal::NoSession => {
                (StatusCode::UNAUTHORIZED, Json(json!({"errors": ["sign in first"]}))).into_response()
            }
            Refusal::Forbidden => (
                StatusCode::FORBIDDEN,
                Json(json!({"errors": ["only the super admin may save the deployment config"]})),
            )
                .into_response(),
            Refusal::BadCsrf => (
                StatusCode::FORBIDDEN,
                Json(json!({"errors": ["missing or wrong CSRF token: reload the page"]})),
            )
                .into_response(),
        }
    }
}

/// The session of a state-changing request: signed in, with `need` (when given), and the
/// session's CSRF token sent back.
fn check_post(
    state: &AppState,
    headers: &HeaderMap,
    csrf: Option<&str>,
    need: Option<Role>,
) -> Result<Session, Refusal> {
    let (_, s) = state.session(headers).ok_or(Refusal::NoSession)?;
    if need.is_some_and(|r| r != s.role) {
        return Err(Refusal::Forbidden);
    }
    let sent = csrf.or_else(|| headers.get("x-csrf-token").and_then(|v| v.to_str().ok()));
    match sent {
        Some(t) if auth::same(t, &s.csrf) => Ok(s),
        _ => Err(Refusal::BadCsrf),
    }
}

// ---------------------------------------------------------------------------------------------
// Routes

async fn login_page(State(state): State<Shared>, headers: HeaderMap) -> Response {
    match state.session(&headers) {
        Some((_, s)) => Redirect::to(home_of(s.role)).into_response(),
        None => Html(pages::login(None)).into_response(),
    }
}

fn home_of(role: Role) -> &'static str {
    match role {
        Role::SuperAdmin => "/agent-plugins/",
        Role::User => "/settings/",
    }
}

#[derive(Deserialize)]
struct LoginForm {
    token: String,
}

async fn login(State(state): State<Shared>, Form(form): Form<LoginForm>) -> Response {
    // Read on every sign-in: `admin add-user` and `admin reset-token` work without a restart.
    let role = match Credentials::load(&state.opts.credentials_file) {
        Ok(c) => c.role_of(&form.token),
        Err(e) => {
            tracing::warn!("admin: {e}");
            None
        }
    };
    let Some(role) = role else {
        tracing::info!("admin: sign-in refused");
        return (
            StatusCode::UNAUTHORIZED,
            Html(pages::login(Some("That token is not valid."))),
        )
            .into_response();
    };
    let (Ok(id), Ok(csrf)) = (auth::random_hex(), auth::random_hex()) else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "no random numbers").into_response();
    };
    if let Ok(mut sessions) = state.sessions.lock() {
        sessions.insert(
            auth::sha256_hex(&id),
            Session {
                role,
                csrf,
                started: Instant::now(),
            },
        );
    }
    tracing::info!("admin: signed in ({})", role.as_str());
    let cookie = format!(
        "{COOKIE}={id}; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age={}",
        SESSION_LIFETIME.as_secs()
    );
    let mut resp = Redirect::to(home_of(role)).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        resp.headers_mut().insert(header::SET_COOKIE, v);
    }
    resp
}

#[derive(Deserialize)]
struct LogoutForm {
    /// Missing: refused by the CSRF check (403), like a wrong one.
    #[serde(default)]
    csrf: String,
}

async fn logout(State(state): State<Shared>, headers: HeaderMap, Form(form): Form<LogoutForm>) -> Response {
    if let Err(r) = check_post(&state, &headers, Some(&form.csrf), None) {
        return r.api();
    }
    if let (Some((key, _)), Ok(mut sessions)) = (state.session(&headers), state.sessions.lock()) {
        sessions.remove(&key);
    }
    let mut resp = Redirect::to("/login").into_response();
    resp.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("cst_admin_session=; Path=/; HttpOnly; Secure; SameSite=Strict; Max-Age=0"),
    );
    resp
}

async fn plugins_page(State(state): State<Shared>, headers: HeaderMap) -> Response {
    let Some((_, s)) = state.session(&headers) else {
        return Redirect::to("/login").into_response();
    };
    if s.role != Role::SuperAdmin {
        return (
            StatusCode::FORBIDDEN,
            Html(pages::message(
                "Not allowed",
                "Only the super admin manages agent plugins.",
            )),
        )
            .into_response();
    }
    let file = DeploymentFile {
        path: state.opts.deployment_file.clone(),
    };
    let (config, problems, editor) = match file.read() {
        Stored::Missing => (
            DeploymentConfig::default(),
            Vec::new(),
            masked_text(&DeploymentConfig::default()),
        ),
        Stored::Valid(c) => {
            let m = masked_text(&c);
            (c, Vec::new(), m)
        }
        Stored::Invalid { problems, masked } => (
            DeploymentConfig::default(),
            problems,
            masked
                .and_then(|v| serde_json::to_string_pretty(&v).ok())
                .unwrap_or_else(|| masked_text(&DeploymentConfig::default())),
        ),
    };
    let path = state.opts.deployment_file.display().to_string();
    let version = state.file_version();
    Html(pages::plugins(&pages::PluginsPage {
        csrf: &s.csrf,
        version: &version,
        file: &path,
        config: &config,
        problems: &problems,
        editor: &editor,
    }))
    .into_response()
}

/// The config as the editor shows it: the fields in the format's order, every default filled in,
/// every header value masked (D9).
fn masked_text(c: &DeploymentConfig) -> String {
    let mut copy = c.clone();
    for s in &mut copy.mcp.servers {
        for v in s.headers.values_mut().chain(s.credential_headers.values_mut()) {
            *v = deployment::MASK.to_string();
        }
    }
    serde_json::to_string_pretty(&copy).unwrap_or_default()
}

fn errors(status: StatusCode, list: Vec<String>) -> Response {
    (status, Json(json!({ "errors": list }))).into_response()
}

async fn plugins_save(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = check_post(&state, &headers, None, Some(Role::SuperAdmin)) {
        return r.api();
    }
    let Ok(text) = std::str::from_utf8(&body) else {
        return errors(StatusCode::BAD_REQUEST, vec!["(top level): not UTF-8 text".into()]);
    };
    let _one_at_a_time = state.save_lock.lock().await;
    if let Some(seen) = headers.get("x-config-version").and_then(|v| v.to_str().ok()) {
        if !auth::same(seen, &state.file_version()) {
            return errors(
                StatusCode::CONFLICT,
                vec!["the deployment file changed since this page was loaded: copy your edits, reload the page and apply them again (nothing was saved)".into()],
            );
        }
    }
    let file = DeploymentFile {
        path: state.opts.deployment_file.clone(),
    };
    match file.save(text) {
        Ok(c) => {
            tracing::info!(
                "admin: deployment config saved: {}, permission profile {}",
                counts(&c),
                profile_of(&state.opts)
            );
            Json(json!({"ok": true, "servers": c.mcp.servers.len(), "hooks": c.hooks.len()})).into_response()
        }
        Err(SaveError::Invalid(list)) => {
            tracing::info!(
                "admin: deployment save refused ({} problems); nothing written",
                list.len()
            );
            errors(StatusCode::BAD_REQUEST, list)
        }
        Err(SaveError::Io(e)) => {
            tracing::warn!("admin: deployment save failed: cannot write the file");
            errors(StatusCode::INTERNAL_SERVER_ERROR, vec![e])
        }
    }
}

async fn settings_page(State(state): State<Shared>, headers: HeaderMap) -> Response {
    let Some((_, s)) = state.session(&headers) else {
        return Redirect::to("/login").into_response();
    };
    let values = cst_config::settings::Settings::load_from(&state.opts.settings_file)
        .map(|s| s.values)
        .unwrap_or_default();
    Html(pages::settings(&s.csrf, s.role == Role::SuperAdmin, &values)).into_response()
}

async fn settings_save_route(State(state): State<Shared>, headers: HeaderMap, body: Bytes) -> Response {
    if let Err(r) = check_post(&state, &headers, None, None) {
        return r.api();
    }
    let submitted: Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            return errors(
                StatusCode::BAD_REQUEST,
                vec![format!("(top level): not valid JSON: {e}")],
            )
        }
    };
    let _one_at_a_time = state.save_lock.lock().await;
    match settings_save::save(&state.opts.settings_file, &submitted) {
        Ok(()) => {
            tracing::info!("admin: settings saved");
            Json(json!({"ok": true})).into_response()
        }
        Err(settings_save::SettingsError::PluginField(list)) => {
            tracing::info!("admin: settings save refused (a plugin field); nothing written");
            errors(StatusCode::FORBIDDEN, list)
        }
        Err(settings_save::SettingsError::Invalid(list)) => errors(StatusCode::BAD_REQUEST, list),
        Err(settings_save::SettingsError::Io(e)) => errors(StatusCode::INTERNAL_SERVER_ERROR, vec![e]),
    }
}

async fn script() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("../static/admin.js"),
    )
}

async fn style() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("../static/admin.css"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loopback_names_only() {
        for ok in ["127.0.0.1:8080", "localhost:1", "[::1]:9", "127.0.0.1", "LOCALHOST"] {
            assert!(loopback_host(ok), "{ok}");
        }
        for bad in ["evil.example:8080", "", "10.0.0.1:80", "localhost.evil:80", "[::2]:1"] {
            assert!(!loopback_host(bad), "{bad}");
        }
    }
}
