//! `--help` is for people: no specification rule ids (E7, P11, …) in it. Clap builds it from the
//! doc comments of the command-line types, where such ids used to slip in.

use std::process::Command;

/// A rule id as `REQUIREMENTS.md` numbers them: a section letter and a number, as a word.
fn rule_id() -> regex::Regex {
    regex::Regex::new(r"\b[ESPMTADH][0-9]{1,2}\b").expect("valid regex")
}

fn help(args: &[&str]) -> String {
    let o = Command::new(env!("CARGO_BIN_EXE_cst-agent"))
        .args(args)
        .arg("--help")
        .output()
        .expect("run cst-agent");
    assert!(
        o.status.success(),
        "{args:?} --help failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn help_texts_carry_no_rule_ids() {
    let commands: &[&[&str]] = &[
        &[],
        &["exec"],
        &["tools"],
        &["tools", "list"],
        &["tools", "call"],
        &["plugins"],
        &["plugins", "install"],
        &["plugins", "list"],
        &["plugins", "remove"],
        &["plugins", "trust"],
        &["plugins", "untrust"],
        &["mcp"],
        &["mcp", "list"],
        &["mcp", "serve"],
        &["agents"],
        &["agents", "list"],
        &["agents", "transcripts"],
        &["agents", "show"],
        &["status"],
    ];
    let re = rule_id();
    for args in commands {
        let text = help(args);
        assert!(text.contains("Usage:"), "{args:?}: {text}");
        let ids: Vec<&str> = re.find_iter(&text).map(|m| m.as_str()).collect();
        assert!(
            ids.is_empty(),
            "`cst-agent {} --help` shows rule ids {ids:?}:\n{text}",
            args.join(" ")
        );
    }
}

#[test]
fn the_pattern_finds_what_the_help_used_to_show() {
    // So the test above cannot pass because the pattern matches nothing.
    let re = rule_id();
    for old in [
        "loads none (E1)",
        "the sandbox (P11) and the trust hint (T1)",
        "waits for servers still starting, M7)",
    ] {
        assert!(re.is_match(old), "{old}");
    }
    assert!(!re.is_match("exit code 124; 128 + signal; `--max-steps`; MCP server"));
}
