//! Skills (S1–S6, E3, E7, E8, T3) through discovery and the registry's `skill` tool.

mod ext_support;

use ext_support::{plugin, skill, warnings_text, Env};
use serde_json::{json, Value};

use cst_agent::discovery::{self, reload_skills};
use cst_agent::tools::{CallError, ToolContext};

fn pdf(env: &Env) -> std::path::PathBuf {
    let dir = skill(
        &env.ws.join(".agent/skills"),
        "pdf-forms",
        "---\nname: pdf-forms\ndescription: Fill PDF forms with the bundled script.\n---\n# PDF forms\n\n1. List the fields.\n",
    );
    std::fs::write(dir.join("reference.md"), "REFERENCE TEXT").unwrap();
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(dir.join("scripts/fill.py"), "print('fill')").unwrap();
    dir
}

async fn call(l: &discovery::Loaded, env: &Env, args: Value) -> Result<String, CallError> {
    l.registry.call("skill", args, &ToolContext::new(env.ws.clone())).await
}

#[tokio::test]
async fn s4_skill_tool_returns_body_files_and_a_file() {
    let env = Env::in_process();
    pdf(&env);
    let l = discovery::load(&env.opts());
    let spec = l.registry.spec("skill").unwrap();
    assert_eq!((spec.perm.as_str(), spec.source.kind.as_str()), ("read", "builtin"));
    let out = call(&l, &env, json!({"name": "pdf-forms"})).await.unwrap();
    assert!(out.starts_with("# PDF forms\n\n1. List the fields."), "{out}");
    assert!(!out.contains("description:"), "frontmatter is not part of the body");
    assert!(out.contains("- reference.md\n- scripts/fill.py\n"), "{out}");
    let f = call(&l, &env, json!({"name": "pdf-forms", "file": "reference.md"}))
        .await
        .unwrap();
    assert_eq!(f, "REFERENCE TEXT");
    let f = call(
        &l,
        &env,
        json!({"name": "pdf-forms", "file": "scripts/../reference.md"}),
    )
    .await
    .unwrap();
    assert_eq!(f, "REFERENCE TEXT", "`..` that stays inside is fine");
    let e = call(&l, &env, json!({"name": "nope"})).await.unwrap_err();
    assert!(e.to_string().contains("no skill named `nope`"), "{e}");
}

#[tokio::test]
async fn s4_files_outside_the_skill_folder_are_refused() {
    let env = Env::in_process();
    let dir = pdf(&env);
    let secret = env.ws.join("secret.txt");
    std::fs::write(&secret, "SECRET").unwrap();
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(&secret, dir.join("link.txt")).unwrap();
        std::os::unix::fs::symlink(&env.ws, dir.join("wsdir")).unwrap();
    }
    let l = discovery::load(&env.opts());
    let mut attempts = vec![
        "../../../secret.txt".to_string(),
        "../pdf-forms/../../../secret.txt".to_string(),
        secret.display().to_string(),
        "/etc/passwd".to_string(),
        "".to_string(),
    ];
    if cfg!(unix) {
        attempts.push("link.txt".into());
        attempts.push("wsdir/secret.txt".into());
    }
    for a in attempts {
        let e = call(&l, &env, json!({"name": "pdf-forms", "file": a}))
            .await
            .unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("outside the skill's folder") && !msg.contains("SECRET"),
            "{a}: {msg}"
        );
    }
}

#[test]
fn e3_t3_s5_sources_fallbacks_and_precedence() {
    let env = Env::in_process();
    // Workspace .agent, .claude, config dir and a plugin's skills folder; trust not needed (T3).
    let a = skill(
        &env.ws.join(".agent/skills"),
        "dup",
        "---\nname: dup\ndescription: from agent\n---\n",
    );
    let c = skill(
        &env.ws.join(".claude/skills"),
        "dup",
        "---\nname: dup\ndescription: from claude\n---\n",
    );
    skill(
        &env.ws.join(".claude/skills"),
        "claude-only",
        "# Heading\n\nClaude skill line.\n",
    );
    skill(
        &env.config().join("skills"),
        "cfg",
        "---\ndescription: config skill\n---\nbody\n",
    );
    let broken = skill(
        &env.config().join("skills"),
        "broken",
        "---\nname: [oops\n---\n## H\nFallback text.\n",
    );
    let p = plugin(
        &env.config().join("plugins"),
        "pl",
        json!({"name": "pl", "skills": "skills"}),
        &[],
    );
    skill(
        &p.join("skills"),
        "plugin-skill",
        "---\nname: plugin-skill\ndescription: From a plugin.\n---\n",
    );
    let l = discovery::load(&env.opts());
    let got: Vec<(String, String)> = l
        .skills
        .iter()
        .map(|s| (s.name.clone(), s.description.clone()))
        .collect();
    let want = [
        ("dup", "from agent"),
        ("claude-only", "Claude skill line."),
        ("broken", "Fallback text."),
        ("cfg", "config skill"),
        ("plugin-skill", "From a plugin."),
    ];
    assert_eq!(
        got,
        want.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect::<Vec<_>>()
    );
    let w = warnings_text(&l);
    assert!(
        w.contains(&broken.join("SKILL.md").display().to_string()) && w.contains("malformed frontmatter"),
        "{w}"
    );
    assert!(
        w.contains(&a.join("SKILL.md").display().to_string()) && w.contains(&c.join("SKILL.md").display().to_string()),
        "clash names both files: {w}"
    );
    assert_eq!(
        discovery::summary_line(&l),
        "5 skills · 1 plugin (0 tools) · 0 MCP servers"
    );
    assert!(l
        .skill_index
        .text
        .starts_with("- dup: from agent\n- claude-only: Claude skill line.\n"));
}

#[test]
fn s3_index_is_at_most_4096_bytes_and_names_the_left_out() {
    let env = Env::in_process();
    let root = env.ws.join(".agent/skills");
    for i in 0..40 {
        let desc = format!("Skill number {i:02} {}", "x".repeat(100));
        skill(
            &root,
            &format!("s{i:02}"),
            &format!("---\nname: s{i:02}\ndescription: {desc}\n---\n"),
        );
    }
    // One very long description is cut to 256 bytes in its line.
    skill(
        &root,
        "a-long",
        &format!("---\nname: a-long\ndescription: {}\n---\n", "é".repeat(400)),
    );
    let l = discovery::load(&env.opts());
    let idx = &l.skill_index;
    assert!(idx.text.len() <= 4096, "{}", idx.text.len());
    let first = idx.text.lines().next().unwrap();
    assert!(
        first.starts_with("- a-long: é") && first.ends_with('…') && first.len() <= 256 + 12,
        "{first}"
    );
    // Lines are "- s00: Skill number 00 xxx…" = 124 bytes; they fit in order until the budget ends.
    let kept = idx.text.lines().count();
    assert!(kept > 20 && kept < 41, "{kept}");
    assert_eq!(idx.left_out.len(), 41 - kept);
    // The rule: the index is a prefix of the discovery order; everything after the first miss is out.
    let expected_first_out = format!("s{:02}", kept - 1);
    assert_eq!(idx.left_out[0], expected_first_out);
    for name in &idx.left_out {
        assert!(!idx.text.contains(&format!("- {name}:")));
        assert!(
            l.warnings
                .iter()
                .map(ToString::to_string)
                .any(|w| w.contains(&format!("skill `{name}`")) && w.contains("4096")),
            "{name}"
        );
    }
    // A left-out skill can still be loaded.
    assert!(l.skills.iter().any(|s| s.name == *idx.left_out.last().unwrap()));
}

#[test]
fn s6_skill_command_expansion() {
    let env = Env::in_process();
    pdf(&env);
    let l = discovery::load(&env.opts());
    let msg = cst_agent::skills::expand_skill_command("/skill pdf-forms fill a.pdf please", &l.skills)
        .unwrap()
        .unwrap();
    assert!(msg.starts_with("<skill name=\"pdf-forms\""), "{msg}");
    assert!(
        msg.contains("# PDF forms\n\n1. List the fields.\n</skill>\n\nfill a.pdf please"),
        "{msg}"
    );
    assert!(!msg.contains("description:"));
    assert!(cst_agent::skills::expand_skill_command("/skill missing hi", &l.skills)
        .unwrap()
        .is_err());
    assert!(cst_agent::skills::expand_skill_command("just text", &l.skills).is_none());
}

#[tokio::test]
async fn e8_reload_skills_reports_and_updates_the_tool() {
    let env = Env::in_process();
    let root = env.ws.join(".agent/skills");
    skill(&root, "one", "---\nname: one\ndescription: first\n---\nONE\n");
    skill(&root, "two", "---\nname: two\ndescription: second\n---\nTWO\n");
    let opts = env.opts();
    let mut l = discovery::load(&opts);
    std::fs::remove_dir_all(root.join("one")).unwrap();
    skill(
        &root,
        "two",
        "---\nname: two\ndescription: second, edited\n---\nTWO v2\n",
    );
    skill(&root, "three", "---\nname: three\ndescription: third\n---\nTHREE\n");
    let r = reload_skills(&mut l, &opts);
    assert_eq!(r.describe(), "added three · removed one · changed two");
    let out = call(&l, &env, json!({"name": "three"})).await.unwrap();
    assert!(out.starts_with("THREE"));
    assert!(call(&l, &env, json!({"name": "one"})).await.is_err());
    assert!(l.skill_index.text.contains("- two: second, edited"));
    assert_eq!(reload_skills(&mut l, &opts).describe(), "no changes");
}

#[test]
fn e1_minimal_profile_has_no_skills_or_skill_tool() {
    let env = Env::in_process();
    pdf(&env);
    let mut opts = env.opts();
    opts.profile = discovery::ToolsProfile::Minimal;
    let l = discovery::load(&opts);
    assert!(l.skills.is_empty() && l.mcp_sources.is_empty() && l.warnings.is_empty());
    // Built-in tools stay; the `skill` tool and every extension tool are absent.
    assert!(!l.registry.contains("skill"));
    assert!(l
        .registry
        .specs()
        .iter()
        .all(|s| s.source.kind == cst_agent::tools::SourceKind::Builtin));
}

/// Issue 14 item 11, with skills in the public Agent Skills shape: `.agents/skills` (where Codex
/// and `npx skills` install) is read; a long description keeps its "use when…" clause; a skill
/// with `disable-model-invocation: true` is out of the index and refused by the `skill` tool but
/// still runs with `/skill`.
#[tokio::test]
async fn agents_skills_when_clauses_and_user_only_skills() {
    let env = Env::in_process();
    // Anthropic's public `pdf` skill describes itself like this (the "When Claude needs…" clause
    // is what an agent chooses by).
    let pdf = "Comprehensive PDF manipulation toolkit for extracting text and tables, creating new PDFs, \
               merging/splitting documents, handling forms, rotating pages, adding watermarks, encrypting and \
               decrypting files, and converting pages to images with full control over resolution. When Claude \
               needs to fill in a PDF form or programmatically process, generate, or analyze PDF documents at scale.";
    skill(
        &env.ws.join(".agents/skills"),
        "pdf",
        &format!("---\nname: pdf\ndescription: {pdf}\nlicense: Proprietary\n---\n# PDF\n"),
    );
    skill(
        &env.ws.join(".agents/skills"),
        "deploy",
        "---\nname: deploy\ndescription: Deploy to production.\ndisable-model-invocation: true\n---\nRun ./deploy.sh\n",
    );
    let l = discovery::load(&env.opts());
    assert!(l.skills.iter().any(|s| s.name == "pdf"), "{:?}", warnings_text(&l));
    let index = cst_agent::skills::render_index(&l.skills).text;
    let line = index
        .lines()
        .find(|l| l.starts_with("- pdf: "))
        .expect("pdf in the index");
    assert!(line.contains("When Claude needs to fill in a PDF form"), "{line}");
    assert!(line.starts_with("- pdf: Comprehensive PDF manipulation"), "{line}");
    assert!(line.len() < pdf.len(), "still shortened: {line}");
    assert!(!index.contains("deploy"), "{index}");
    let refused = call(&l, &env, json!({"name": "deploy"})).await.unwrap_err();
    assert!(refused.to_string().contains("/skill deploy"), "{refused}");
    let msg = cst_agent::skills::expand_skill_command("/skill deploy now", &l.skills)
        .unwrap()
        .unwrap();
    assert!(msg.contains("Run ./deploy.sh") && msg.ends_with("now"), "{msg}");
}
