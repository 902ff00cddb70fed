//! The terminal in raw mode on the alternate screen, with bracketed paste; put back as it was on
//! exit and on panic (ratatui's panic hook, and ours for paste mode).

use std::io::{stdout, Stdout};

use crossterm::event::{DisableBracketedPaste, EnableBracketedPaste};
use ratatui::prelude::CrosstermBackend;
use ratatui::Terminal;

pub type Term = Terminal<CrosstermBackend<Stdout>>;

pub fn enter() -> std::io::Result<Term> {
    let terminal = ratatui::try_init()?;
    crossterm::execute!(stdout(), EnableBracketedPaste)?;
    let hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = crossterm::execute!(stdout(), DisableBracketedPaste);
        hook(info);
    }));
    Ok(terminal)
}

pub fn leave() {
    let _ = crossterm::execute!(stdout(), DisableBracketedPaste);
    ratatui::restore();
}
