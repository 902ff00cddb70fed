//! The Python shim's example (`example-plugins/csv-summary`) as a plugin.json command tool and as
//! a wasm component gives the same answers through `cst-agent tools call` (issue 7).

use std::path::{Path, PathBuf};
use std::process::Output;

use assert_cmd::Command;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("repo root")
        .to_path_buf()
}

fn example() -> PathBuf {
    let dir = repo().join("example-plugins/csv-summary");
    for needed in ["plugin.json", "cst_plugin/__init__.py", "wasm/csv_summary.wasm"] {
        assert!(
            dir.join(needed).exists(),
            "{} is missing: run `bash scripts/test-deps.sh` (it builds the Python example)",
            dir.join(needed).display()
        );
    }
    dir
}

/// A config dir with the example installed one way, and a workspace with a CSV file.
struct Setup {
    _tmp: tempfile::TempDir,
    config: PathBuf,
    cache: PathBuf,
    workspace: PathBuf,
}

impl Setup {
    fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let workspace = tmp.path().join("ws");
        std::fs::create_dir_all(&workspace).expect("mkdir");
        std::fs::write(
            workspace.join("data.csv"),
            "city,temp,rain\nOslo,3.5,12\nLima,19,\nCairo,28.25,0\n",
        )
        .expect("csv");
        std::fs::write(tmp.path().join("outside.csv"), "secret\n42\n").expect("csv");
        // One cache for these tests: the ~18 MB component is compiled once, then loaded (the cache
        // is keyed by content, so sharing it is safe).
        let cache = repo().join("target/test-component-cache");
        Self {
            config: tmp.path().join("config"),
            cache,
            workspace,
            _tmp: tmp,
        }
    }

    fn cmd(&self) -> Command {
        let mut c = Command::cargo_bin("cst-agent").expect("binary");
        c.env("XDG_CONFIG_HOME", &self.config)
            .env("XDG_CACHE_HOME", &self.cache)
            .arg("--workspace")
            .arg(&self.workspace);
        c
    }

    fn install(&self, path: &Path) {
        let out = self
            .cmd()
            .arg("plugins")
            .arg("install")
            .arg(path)
            .output()
            .expect("run");
        assert!(
            out.status.success(),
            "install {} failed: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn call(&self, tool: &str, args: &str) -> Output {
        self.cmd()
            .args(["tools", "call", tool, "--args", args])
            .output()
            .expect("run")
    }
}

fn classic() -> Setup {
    let s = Setup::new();
    s.install(&example());
    s
}

fn wasm() -> Setup {
    let s = Setup::new();
    s.install(&example().join("wasm"));
    s
}

fn stdout(o: &Output) -> String {
    assert!(
        o.status.success(),
        "call failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn same_answers_as_command_and_as_component() {
    let (c, w) = (classic(), wasm());
    for (tool, args) in [
        ("csv_summary", r#"{"path": "data.csv"}"#),
        ("csv_summary", r#"{"path": "data.csv", "max_rows": 2}"#),
        ("csv_head", r#"{"path": "data.csv", "rows": 1}"#),
    ] {
        let a = stdout(&c.call(tool, args));
        let b = stdout(&w.call(tool, args));
        assert_eq!(a, b, "{tool} {args}: the command and the component disagree");
        assert!(!a.trim().is_empty());
    }
    let summary: serde_json::Value =
        serde_json::from_str(&stdout(&c.call("csv_summary", r#"{"path":"data.csv"}"#))).expect("json");
    assert_eq!(summary["rows"], 3);
    assert_eq!(summary["columns"][1]["mean"], 16.916667);
    assert_eq!(summary["columns"][2]["blank"], 1);
}

#[test]
fn python_exception_is_a_tool_failure_with_its_message() {
    for s in [classic(), wasm()] {
        let o = s.call("csv_head", r#"{"path": "data.csv", "rows": -1}"#);
        assert_eq!(
            o.status.code(),
            Some(1),
            "stderr: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(String::from_utf8_lossy(&o.stderr).contains("ValueError: rows must not be negative"));
    }
}

#[test]
fn schema_from_type_hints_is_enforced_by_the_host() {
    let s = wasm();
    let o = s.call("csv_summary", r#"{"path": "data.csv", "max_rows": "two"}"#);
    assert_eq!(o.status.code(), Some(2), "invalid arguments exit with 2");
    assert!(String::from_utf8_lossy(&o.stderr).contains("max_rows"));
}

#[test]
fn the_component_cannot_read_outside_the_workspace() {
    let s = wasm();
    assert!(stdout(&s.call("csv_summary", r#"{"path": "data.csv"}"#)).contains("\"rows\": 3"));
    for path in ["/etc/passwd", "../outside.csv", "/workspace/../outside.csv"] {
        let o = s.call("csv_summary", &format!(r#"{{"path": "{path}"}}"#));
        assert_eq!(
            o.status.code(),
            Some(1),
            "{path} must fail: {}",
            String::from_utf8_lossy(&o.stdout)
        );
        assert!(!String::from_utf8_lossy(&o.stdout).contains("secret"));
    }
    // A symlink inside the workspace that points outside it is refused too.
    #[cfg(unix)]
    {
        let outside = s.workspace.parent().expect("parent").join("outside.csv");
        std::os::unix::fs::symlink(outside, s.workspace.join("link.csv")).expect("symlink");
        let o = s.call("csv_summary", r#"{"path": "link.csv"}"#);
        assert_eq!(o.status.code(), Some(1));
    }
}
