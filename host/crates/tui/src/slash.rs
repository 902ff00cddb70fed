//! The slash commands of the input box: what each is, how it parses, and completion.

/// One command as `/help` and the completion list show it.
pub struct CommandInfo {
    pub usage: &'static str,
    pub about: &'static str,
}

/// Every command, in the order `/help` lists them.
pub const COMMANDS: &[CommandInfo] = &[
    CommandInfo {
        usage: "/help",
        about: "keys and commands",
    },
    CommandInfo {
        usage: "/mcp",
        about: "MCP servers: state, tools, last stderr line",
    },
    CommandInfo {
        usage: "/mcp reload",
        about: "read mcp.json again; or /mcp reload NAME restarts one server",
    },
    CommandInfo {
        usage: "/agents",
        about: "sub-agent transcripts of this session",
    },
    CommandInfo {
        usage: "/skill",
        about: "/skill NAME message: run a turn with a skill's instructions",
    },
    CommandInfo {
        usage: "/skills reload",
        about: "read the skill folders again",
    },
    CommandInfo {
        usage: "/plugins reload",
        about: "read the plugin folders again",
    },
    CommandInfo {
        usage: "/plugins trust",
        about: "trust this workspace: its plugins and mcp.json load",
    },
    CommandInfo {
        usage: "/plugins untrust",
        about: "revoke the trust of this workspace",
    },
    CommandInfo {
        usage: "/model",
        about: "/model NAME: use another model from the next turn",
    },
    CommandInfo {
        usage: "/approval",
        about: "/approval ask|auto|full: change the approval mode",
    },
    CommandInfo {
        usage: "/clear",
        about: "start the conversation again (the transcript keeps it)",
    },
    CommandInfo {
        usage: "/quit",
        about: "end the session",
    },
];

/// A parsed slash command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    Help,
    Mcp,
    McpReload(Option<String>),
    Agents,
    SkillsReload,
    PluginsReload,
    Trust,
    Untrust,
    Model(Option<String>),
    Approval(Option<String>),
    Clear,
    Quit,
    /// `/skill …` or a plugin command `/NAME …`: a user turn the session expands itself.
    Turn(String),
    /// Not a command we know, nor one the session might expand; the message says why.
    Unknown(String),
}

/// Parse a submitted line that starts with `/`.
pub fn parse(input: &str) -> Slash {
    let text = input.trim();
    let mut words = text.split_whitespace();
    let head = words.next().unwrap_or("");
    let rest: Vec<&str> = words.collect();
    let arg = || rest.first().map(|s| s.to_string());
    match (head, rest.as_slice()) {
        ("/help" | "/?", _) => Slash::Help,
        ("/mcp", []) => Slash::Mcp,
        ("/mcp", ["reload"]) => Slash::McpReload(None),
        ("/mcp", ["reload", name]) => Slash::McpReload(Some(name.to_string())),
        ("/agents", []) => Slash::Agents,
        ("/skills", ["reload"]) => Slash::SkillsReload,
        ("/plugins", ["reload"]) => Slash::PluginsReload,
        ("/plugins", ["trust"]) => Slash::Trust,
        ("/plugins", ["untrust"]) => Slash::Untrust,
        ("/model", [] | [_]) => Slash::Model(arg()),
        ("/approval", [] | [_]) => Slash::Approval(arg()),
        ("/clear", []) => Slash::Clear,
        ("/quit" | "/exit", []) => Slash::Quit,
        ("/mcp" | "/agents" | "/skills" | "/plugins" | "/model" | "/approval" | "/clear" | "/quit", _) => {
            Slash::Unknown(format!("{head}: unexpected arguments; /help lists the commands"))
        }
        // The session expands `/skill NAME …` and plugin commands; it says when a name is unknown.
        _ => Slash::Turn(text.to_string()),
    }
}

/// Completions of a partly typed command: the commands (and `extra` names, e.g. plugin commands
/// as `/name`) whose usage starts with `input`, best first.
pub fn complete<'a>(input: &str, extra: &'a [String]) -> Vec<(String, &'a str)> {
    let input = input.trim_start();
    if !input.starts_with('/') || input.contains('\n') {
        return Vec::new();
    }
    let mut out: Vec<(String, &str)> = COMMANDS
        .iter()
        .filter(|c| c.usage.starts_with(input) && c.usage != input)
        .map(|c| (c.usage.to_string(), c.about))
        .collect();
    // `/skill NAME`: the session's skills.
    if let Some(partial) = input.strip_prefix("/skill ") {
        if !partial.contains(' ') {
            out.extend(
                extra
                    .iter()
                    .filter_map(|e| e.strip_prefix("skill:"))
                    .filter(|name| name.starts_with(partial) && *name != partial)
                    .map(|name| (format!("/skill {name} "), "skill")),
            );
        }
    }
    out.extend(
        extra
            .iter()
            .filter_map(|e| e.strip_prefix("command:"))
            .map(|name| format!("/{name}"))
            .filter(|c| c.starts_with(input) && c != input)
            .map(|c| (c, "plugin command")),
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse() {
        assert_eq!(parse("/mcp"), Slash::Mcp);
        assert_eq!(parse(" /mcp reload gh "), Slash::McpReload(Some("gh".into())));
        assert_eq!(parse("/model gpt-5"), Slash::Model(Some("gpt-5".into())));
        assert_eq!(parse("/model"), Slash::Model(None));
        assert_eq!(parse("/plugins trust"), Slash::Trust);
        assert_eq!(
            parse("/skill review look at main.rs"),
            Slash::Turn("/skill review look at main.rs".into())
        );
        assert_eq!(parse("/deploy prod"), Slash::Turn("/deploy prod".into()));
        assert!(matches!(parse("/clear now"), Slash::Unknown(_)));
    }

    #[test]
    fn completion_offers_commands_skills_and_plugin_commands() {
        let extra = vec!["skill:review".to_string(), "command:deploy".to_string()];
        let names: Vec<String> = complete("/pl", &extra).into_iter().map(|c| c.0).collect();
        assert_eq!(names, ["/plugins reload", "/plugins trust", "/plugins untrust"]);
        let names: Vec<String> = complete("/skill r", &extra).into_iter().map(|c| c.0).collect();
        assert_eq!(names, ["/skill review "]);
        let names: Vec<String> = complete("/de", &extra).into_iter().map(|c| c.0).collect();
        assert_eq!(names, ["/deploy"]);
        assert!(complete("hello", &extra).is_empty());
    }
}
