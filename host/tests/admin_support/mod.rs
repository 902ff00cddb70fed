//! The admin server fixture: a real `cst-agent admin serve` on a free loopback port, with its own
//! config dir and a deployment file in a tempdir (`CST_DEPLOYMENT_FILE`), its log captured, and an
//! HTTP client that checks every response body for the stored secrets.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

pub const STATIC_SECRET: &str = "static-header-secret-6610";
pub const CREDENTIAL_VAR: &str = "CST_MCP_DOCS_TOKEN_8841";
pub const URL_PATH: &str = "/tenant-path-7723/mcp";
pub const HOST: &str = "mcp.example.com";
pub const ARG: &str = "--arg-secret-5512";

/// Every value a response body must never contain (D9): the header values, static and credential.
pub const SECRETS: &[&str] = &[STATIC_SECRET, CREDENTIAL_VAR];

/// A deployment config with one server (a static and a credential header), a command hook and an
/// audit hook, and a tool name that is HTML.
pub fn example() -> Value {
    json!({
        "version": 1,
        "mcp": {"servers": [{
            "id": "docs",
            "url": format!("https://{HOST}{URL_PATH}"),
            "headers": {"X-Team": STATIC_SECRET},
            "credential_headers": {"Authorization": CREDENTIAL_VAR},
            "tools": {"<script>alert(1)</script>": {"enabled": false}}
        }]},
        "mcp_repository_scopes": {"docs": ["owner/repo"]},
        "hooks": [
            {"id": "checks", "event": "before_finish", "kind": "command", "argv": ["pytest", ARG], "required": true},
            {"id": "trail", "event": "after_tool", "kind": "audit"}
        ]
    })
}

pub struct Admin {
    pub dir: tempfile::TempDir,
    /// The deployment file.
    pub file: PathBuf,
    pub settings: PathBuf,
    pub base: String,
    /// The super-admin token printed at the first start.
    pub token: String,
    log: PathBuf,
    child: Child,
    client: reqwest::Client,
}

/// A signed-in browser session: its cookie and its CSRF token.
#[derive(Clone, Debug)]
pub struct Session {
    pub cookie: String,
    pub csrf: String,
}

pub struct Reply {
    pub status: StatusCode,
    pub location: Option<String>,
    pub set_cookie: Option<String>,
    pub body: String,
}

impl Admin {
    /// A server over `deployment` (written 0644) or no file.
    pub fn start(deployment: Option<&Value>) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("etc").join("deployment.json");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::create_dir_all(dir.path().join("config/cst-agent")).unwrap();
        if let Some(v) = deployment {
            std::fs::write(&file, serde_json::to_string_pretty(v).unwrap()).unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o644)).unwrap();
            }
        }
        let settings = dir.path().join("config/cst-agent/settings.json");
        let log = dir.path().join("admin.log");
        let mut child = Self::command(&dir, &file)
            .args(["admin", "serve", "--listen", "127.0.0.1:0"])
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut token = String::new();
        let base = loop {
            let line = lines.next().expect("admin serve printed its address").unwrap();
            if line.starts_with("cst_admin_") {
                token = line;
            } else if let Some(url) = line.strip_prefix("admin pages: ") {
                break url.trim_end_matches("/agent-plugins/").to_string();
            }
        };
        assert!(!token.is_empty(), "the first start prints the super-admin token");
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .no_proxy()
            .build()
            .unwrap();
        Self {
            dir,
            file,
            settings,
            base,
            token,
            log,
            child,
            client,
        }
    }

    fn command(dir: &tempfile::TempDir, file: &std::path::Path) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_cst-agent"));
        c.env("XDG_CONFIG_HOME", dir.path().join("config"))
            .env("XDG_CACHE_HOME", dir.path().join("cache"))
            .env("CST_DEPLOYMENT_FILE", file)
            .env("CST_LOG", "info")
            .env(CREDENTIAL_VAR, "Bearer credential-value-never-read")
            .stdin(Stdio::null());
        c
    }

    /// `cst-agent ARGS` with this server's config dir and deployment file.
    pub fn cli(&self, args: &[&str]) -> std::process::Output {
        Self::command(&self.dir, &self.file).args(args).output().unwrap()
    }

    /// An ordinary user's token (`admin add-user`).
    pub fn add_user(&self, name: &str) -> String {
        let out = self.cli(&["admin", "add-user", name]);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        text.lines().find(|l| l.starts_with("cst_admin_")).unwrap().to_string()
    }

    /// The server's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap()
    }

    pub fn file_bytes(&self) -> Vec<u8> {
        std::fs::read(&self.file).unwrap_or_default()
    }

    /// One request; the body is checked for every stored secret.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        session: Option<&Session>,
        csrf: Option<&str>,
        body: Option<String>,
    ) -> Reply {
        let mut r = self.client.request(method, format!("{}{path}", self.base));
        if let Some(s) = session {
            r = r.header("Cookie", &s.cookie);
        }
        if let Some(t) = csrf {
            r = r.header("X-CSRF-Token", t);
        }
        if let Some(b) = body {
            r = r.header("Content-Type", "application/json").body(b);
        }
        let resp = r.send().await.unwrap();
        reply(resp).await
    }

    pub async fn get(&self, path: &str, session: Option<&Session>) -> Reply {
        self.send(Method::GET, path, session, None, None).await
    }

    /// POST JSON with the session's own CSRF token.
    pub async fn post(&self, path: &str, session: &Session, body: &str) -> Reply {
        self.send(
            Method::POST,
            path,
            Some(session),
            Some(&session.csrf),
            Some(body.to_string()),
        )
        .await
    }

    /// POST a save as the page's script does: with the version of the file the page showed.
    pub async fn post_versioned(&self, path: &str, session: &Session, body: &str, version: &str) -> Reply {
        let resp = self
            .client
            .post(format!("{}{path}", self.base))
            .header("Cookie", &session.cookie)
            .header("X-CSRF-Token", &session.csrf)
            .header("X-Config-Version", version)
            .header("Content-Type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .unwrap();
        reply(resp).await
    }

    /// POST /login with `token`.
    pub async fn login(&self, token: &str) -> Reply {
        let resp = self
            .client
            .post(format!("{}/login", self.base))
            .header("Content-Type", "application/x-www-form-urlencoded")
            .body(format!("token={token}"))
            .send()
            .await
            .unwrap();
        reply(resp).await
    }

    /// Sign in and read the CSRF token from the landing page.
    pub async fn sign_in(&self, token: &str) -> Session {
        let r = self.login(token).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
        let set = r.set_cookie.expect("a session cookie");
        for attr in ["HttpOnly", "Secure", "SameSite=Strict"] {
            assert!(set.contains(attr), "{set}");
        }
        let cookie = set.split(';').next().unwrap().to_string();
        let mut s = Session {
            cookie,
            csrf: String::new(),
        };
        let page = self.get(r.location.as_deref().unwrap(), Some(&s)).await;
        assert_eq!(page.status, StatusCode::OK);
        s.csrf = meta_csrf(&page.body);
        s
    }

    pub async fn super_admin(&self) -> Session {
        self.sign_in(&self.token.clone()).await
    }
}

impl Drop for Admin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn reply(resp: reqwest::Response) -> Reply {
    let status = resp.status();
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let location = header("location");
    let set_cookie = header("set-cookie");
    let csp = header("content-security-policy").unwrap_or_default();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    let body = resp.text().await.unwrap();
    for secret in SECRETS {
        assert!(!body.contains(secret), "a response carries a stored secret: {body}");
    }
    Reply {
        status,
        location,
        set_cookie,
        body,
    }
}

fn meta_csrf(html: &str) -> String {
    let start = html.find("name=\"csrf-token\" content=\"").expect("csrf meta") + 27;
    html[start..].split('"').next().unwrap().to_string()
}

/// The JSON editor's text on the plugins page, unescaped.
pub fn editor_json(html: &str) -> Value {
    let start = html.find("<textarea id=\"config\"").expect("the editor");
    let text = &html[start..];
    let text = &text[text.find('>').unwrap() + 1..text.find("</textarea>").unwrap()];
    let text = text
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&#39;", "'")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap()
}

/// The version of the file the plugins page showed (`data-version` of the editor).
pub fn editor_version(html: &str) -> String {
    let start = html.find("data-version=\"").expect("the editor's version") + 14;
    html[start..].split('"').next().unwrap().to_string()
}

/// The state cell of the inventory row of `id` in `section` (`servers` or `hooks`).
pub fn row_state(html: &str, section: &str, id: &str) -> Option<String> {
    let sec = &html[html.find(&format!("<section id=\"{section}\""))?..];
    let sec = &sec[..sec.find("</section>")?];
    let row = &sec[sec.find(&format!("<tr data-id=\"{id}\""))?..];
    let cell = &row[row.find("<span class=\"enabled\">")? + 22..];
    Some(cell[..cell.find('<')?].to_string())
}
