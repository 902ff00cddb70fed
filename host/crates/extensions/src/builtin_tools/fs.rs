//! read_file, write_file, edit_file, list, grep. Blocking code; run on the blocking pool.
//!
//! Every open goes through a folder handle ([`Scope::beneath`]): confined, the workspace's
//! handle, and cap-std keeps each open beneath it (`openat2(RESOLVE_BENEATH)` on Linux, a checked
//! walk of each component elsewhere), so a symlink swapped into the path after the check cannot
//! lead a tool outside. Reads follow symlinks only while they stay inside the workspace. Writes
//! never write through a symlink: the file's last component must not be one, parents are created
//! beneath the handle, and the content goes to a temp file in the same folder that is renamed
//! over the name (a rename replaces the name itself, never what it points to). Reads stream: at
//! most [`MAX_READ_BYTES`] of a file are kept, whatever its size.

use std::ffi::OsStr;
use std::io::{Read, Write};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use cap_std::fs::{Dir, OpenOptions};
use serde_json::Value;

use super::{fail, Scope};
use cst_registry::Failure;

/// Most entries `list` prints.
const MAX_LIST: usize = 2000;
/// Most matches `grep` prints.
const MAX_MATCHES: usize = 500;
/// Files larger than this are skipped by `grep`.
const MAX_GREP_FILE: u64 = 8 * 1024 * 1024;
/// Most bytes one `read_file` call returns (below the registry's output cap, so the note that
/// says where to go on survives).
pub const MAX_READ_BYTES: usize = cst_registry::output::MAX_OUTPUT_BYTES - 1024;
/// Largest file `edit_file` edits.
const MAX_EDIT_FILE: u64 = 16 * 1024 * 1024;
/// Chunk size of streamed reads.
const CHUNK: usize = 64 * 1024;

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn io_fail(what: &str, path: &str, e: std::io::Error) -> Failure {
    fail(&format!("cannot {what} `{path}`: {e}"))
}

pub fn read_file(scope: &Scope, args: &Value) -> Result<String, Failure> {
    let path = str_arg(args, "path").unwrap_or_default();
    let at = scope.beneath(path, false)?;
    // Opened through the handle; FIFOs and other special files still work (streamed, bounded).
    let file = at.dir.open(&at.rel).map_err(|e| io_fail("read", path, e))?;
    if file.metadata().map(|m| m.is_dir()).unwrap_or(false) {
        return Err(fail(&format!("`{path}` is a folder; use `list`")));
    }
    let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(1).max(1);
    let limit = args.get("limit").and_then(Value::as_u64);
    let window = read_lines(file, offset, limit, MAX_READ_BYTES).map_err(|e| io_fail("read", path, e))?;
    let mut text = window.text;
    if let Some(line) = window.cut_in_line {
        text.push_str(&format!(
            "\n[read_file stopped after {MAX_READ_BYTES} bytes, in line {line}; the file goes on: \
             read on with `offset` (1-based line) and `limit`, or search it with `grep`]"
        ));
    }
    Ok(text)
}

/// Lines `offset..offset+limit` (1-based) of a stream, at most `max_bytes` of them.
pub struct LineWindow {
    pub text: String,
    /// Set when `max_bytes` stopped the read: the line it stopped in.
    pub cut_in_line: Option<u64>,
}

/// Stream lines `offset..offset+limit` out of `r`, keeping at most `max_bytes`: memory stays
/// bounded whatever the size of the file or of one line (a sparse file of zeros is one line).
pub fn read_lines(mut r: impl Read, offset: u64, limit: Option<u64>, max_bytes: usize) -> std::io::Result<LineWindow> {
    let end = limit.map(|l| offset.saturating_add(l)); // first line not wanted
    let mut line = 1u64;
    let mut out: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; CHUNK];
    let mut cut_in_line = None;
    'read: loop {
        let n = match r.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut chunk = &buf[..n];
        while !chunk.is_empty() {
            if end.is_some_and(|e| line >= e) {
                break 'read;
            }
            let newline = chunk.iter().position(|b| *b == b'\n');
            let take = newline.map(|i| i + 1).unwrap_or(chunk.len());
            if line >= offset {
                let room = max_bytes - out.len();
                if take > room {
                    out.extend_from_slice(&chunk[..room]);
                    cut_in_line = Some(line);
                    break 'read;
                }
                out.extend_from_slice(&chunk[..take]);
            }
            if newline.is_some() {
                line += 1;
            }
            chunk = &chunk[take..];
        }
    }
    if cut_in_line.is_some() {
        // Do not end in the middle of a UTF-8 character.
        if let Err(e) = std::str::from_utf8(&out) {
            if e.error_len().is_none() {
                out.truncate(e.valid_up_to());
            }
        }
    }
    let text = match String::from_utf8(out) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(LineWindow { text, cut_in_line })
}

/// Read at most `cap` bytes of an open file; `Ok(None)` when it has more.
fn read_capped(f: impl Read, cap: u64) -> std::io::Result<Option<Vec<u8>>> {
    let mut bytes = Vec::new();
    f.take(cap + 1).read_to_end(&mut bytes)?;
    Ok((bytes.len() as u64 <= cap).then_some(bytes))
}

/// The folder handle and file name a write goes to: parents created beneath the handle, the
/// name checked not to be a symlink or a folder.
fn write_target(scope: &Scope, path: &str, create_parents: bool) -> Result<(Dir, std::ffi::OsString), Failure> {
    let at = scope.beneath(path, create_parents)?;
    let (Some(name), parent) = (at.rel.file_name(), at.rel.parent()) else {
        return Err(fail(&format!("`{path}` is a folder")));
    };
    let parent = match parent {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    if create_parents {
        at.dir
            .create_dir_all(parent)
            .map_err(|e| io_fail("create the folder of", path, e))?;
    }
    let dir = at
        .dir
        .open_dir(parent)
        .map_err(|e| io_fail("open the folder of", path, e))?;
    match dir.symlink_metadata(name) {
        Ok(m) if m.is_symlink() => Err(fail(&format!(
            "`{path}` is a symlink; file tools do not write through symlinks (write to the file it points to)"
        ))),
        Ok(m) if m.is_dir() => Err(fail(&format!("`{path}` is a folder"))),
        _ => Ok((dir, name.to_owned())),
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Write `content` to `name` in `dir` through a temp file in the same folder and a rename. An
/// existing file keeps its permissions.
fn replace_file(dir: &Dir, name: &OsStr, content: &[u8], path: &str) -> Result<(), Failure> {
    let perms = dir
        .symlink_metadata(name)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions());
    let temp = format!(
        ".{}.cst-tmp-{}-{}",
        name.to_string_lossy(),
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    let result = dir
        .open_with(&temp, &opts)
        .and_then(|mut f| {
            f.write_all(content)?;
            if let Some(p) = perms {
                f.set_permissions(p)?;
            }
            Ok(())
        })
        .and_then(|()| dir.rename(&temp, dir, name));
    if let Err(e) = result {
        let _ = dir.remove_file(&temp);
        return Err(io_fail("write", path, e));
    }
    Ok(())
}

pub fn write_file(scope: &Scope, args: &Value) -> Result<String, Failure> {
    let path = str_arg(args, "path").unwrap_or_default();
    let content = str_arg(args, "content").unwrap_or_default();
    let (dir, name) = write_target(scope, path, true)?;
    replace_file(&dir, &name, content.as_bytes(), path)?;
    let full = scope.resolve(path).unwrap_or_default();
    Ok(format!("wrote {} bytes to {}", content.len(), scope.show(&full)))
}

pub fn edit_file(scope: &Scope, args: &Value) -> Result<String, Failure> {
    let path = str_arg(args, "path").unwrap_or_default();
    let old = str_arg(args, "old_text").unwrap_or_default();
    let new = str_arg(args, "new_text").unwrap_or_default();
    if old.is_empty() {
        return Err(fail("`old_text` is empty"));
    }
    let (dir, name) = write_target(scope, path, false)?;
    let file = dir.open(&name).map_err(|e| io_fail("read", path, e))?;
    if !file.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Err(fail(&format!("`{path}` is not a regular file")));
    }
    let bytes = read_capped(file, MAX_EDIT_FILE)
        .map_err(|e| io_fail("read", path, e))?
        .ok_or_else(|| {
            fail(&format!(
                "`{path}` is larger than {MAX_EDIT_FILE} bytes; edit_file does not edit it"
            ))
        })?;
    let text = String::from_utf8(bytes).map_err(|_| fail(&format!("`{path}` is not UTF-8 text")))?;
    let count = text.matches(old).count();
    let full = scope.resolve(path).unwrap_or_default();
    match count {
        0 => Err(fail(&format!(
            "`old_text` was not found in `{path}`; read the file and copy the text exactly"
        ))),
        1 => {
            let updated = text.replacen(old, new, 1);
            replace_file(&dir, &name, updated.as_bytes(), path)?;
            Ok(format!("edited {}: replaced 1 occurrence", scope.show(&full)))
        }
        n => Err(fail(&format!(
            "`old_text` occurs {n} times in `{path}`; add surrounding lines so it occurs once"
        ))),
    }
}

/// One entry met by [`walk`].
struct Entry<'a> {
    /// The folder handle it is in.
    dir: &'a Dir,
    name: &'a OsStr,
    /// Relative to the walk's base.
    rel: &'a Path,
    is_dir: bool,
    is_file: bool,
}

/// What a walk leaves out besides `.git`: what the `.gitignore` files say (issue 14 item 13:
/// `target/`, `node_modules/`), and the session transcripts under `.agent/sessions`.
struct Ignores {
    /// One matcher per folder with a `.gitignore`, outermost first, rooted at its folder's full
    /// path.
    stack: Vec<ignore::gitignore::Gitignore>,
    /// `<workspace>/.agent/sessions`: our own transcripts are never search results.
    sessions: std::path::PathBuf,
}

/// Largest `.gitignore` read; a bigger one is left out.
const MAX_GITIGNORE: u64 = 256 * 1024;

impl Ignores {
    /// The rules of the folders from the workspace down to the walk's base (not the base
    /// itself: the walk reads that). Only when the base is reached through the workspace's
    /// handle (confined); in `full` mode the base's own `.gitignore` files still count.
    fn for_walk(scope: &Scope, at: &super::Beneath) -> Self {
        let mut me = Self {
            stack: Vec::new(),
            sessions: scope.workspace.join(".agent").join("sessions"),
        };
        if scope.confined && at.rel != Path::new(".") {
            let mut rel = std::path::PathBuf::new();
            me.push_from(&at.dir, &scope.workspace);
            let parents: Vec<_> = at.rel.components().collect();
            for c in &parents[..parents.len().saturating_sub(1)] {
                rel.push(c);
                if let Ok(d) = at.dir.open_dir(&rel) {
                    me.push_from(&d, &scope.workspace.join(&rel));
                }
            }
        }
        me
    }

    /// Add the `.gitignore` of `dir` (whose full path is `full`), if it has a readable one.
    /// Returns whether it did (the caller pops it when leaving the folder).
    fn push_from(&mut self, dir: &Dir, full: &Path) -> bool {
        let Some(file) = open_for_grep(dir, OsStr::new(".gitignore")) else {
            return false;
        };
        let Ok(Some(bytes)) = read_capped(file, MAX_GITIGNORE) else {
            return false;
        };
        let mut b = ignore::gitignore::GitignoreBuilder::new(full);
        for line in String::from_utf8_lossy(&bytes).lines() {
            // A bad line is skipped, as git does.
            let _ = b.add_line(None, line);
        }
        match b.build() {
            Ok(gi) => {
                self.stack.push(gi);
                true
            }
            Err(_) => false,
        }
    }

    fn ignored(&self, full: &Path, is_dir: bool) -> bool {
        if is_dir && full == self.sessions {
            return true;
        }
        for gi in self.stack.iter().rev() {
            match gi.matched(full, is_dir) {
                ignore::Match::Ignore(_) => return true,
                ignore::Match::Whitelist(_) => return false,
                ignore::Match::None => {}
            }
        }
        false
    }
}

/// Walk the tree under `base` (full path `full`) through handles, sorted by name, `.git` and
/// what [`Ignores`] says skipped, symlinks not followed (a folder swapped for a symlink while
/// walking cannot lead outside `base`). `visit` returns false to stop.
fn walk(base: &Dir, full: &Path, rel: &Path, ignores: &mut Ignores, visit: &mut dyn FnMut(Entry<'_>) -> bool) -> bool {
    let Ok(entries) = base.entries() else { return true };
    let pushed = ignores.push_from(base, full);
    let mut names: Vec<_> = entries
        .filter_map(Result::ok)
        .filter_map(|e| Some((e.file_name(), e.file_type().ok()?)))
        .collect();
    names.sort_by(|a, b| a.0.cmp(&b.0));
    let mut go_on = true;
    for (name, ty) in names {
        if name == ".git" {
            continue;
        }
        let child_full = full.join(&name);
        if ignores.ignored(&child_full, ty.is_dir()) {
            continue;
        }
        let child = rel.join(&name);
        let entry = Entry {
            dir: base,
            name: &name,
            rel: &child,
            is_dir: ty.is_dir(),
            is_file: ty.is_file(),
        };
        if !visit(entry) {
            go_on = false;
            break;
        }
        if ty.is_dir() {
            if let Ok(sub) = base.open_dir(&name) {
                if !walk(&sub, &child_full, &child, ignores, visit) {
                    go_on = false;
                    break;
                }
            }
        }
    }
    if pushed {
        ignores.stack.pop();
    }
    go_on
}

pub fn list(scope: &Scope, args: &Value) -> Result<String, Failure> {
    let pattern = str_arg(args, "pattern").unwrap_or("**/*");
    let base_arg = str_arg(args, "path").unwrap_or(".");
    let at = scope.beneath(base_arg, false)?;
    let glob = globset::GlobBuilder::new(pattern)
        .literal_separator(true)
        .build()
        .map_err(|e| fail(&format!("bad glob `{pattern}`: {e}")))?
        .compile_matcher();
    let base = at.dir.open_dir(&at.rel).map_err(|e| io_fail("list", base_arg, e))?;
    let mut ignores = Ignores::for_walk(scope, &at);
    let mut out = Vec::new();
    let mut more = 0usize;
    walk(&base, &at.full, Path::new(""), &mut ignores, &mut |e| {
        if !glob.is_match(e.rel) {
            return true;
        }
        if out.len() >= MAX_LIST {
            more += 1;
            return true;
        }
        let mut shown = scope.show(&at.full.join(e.rel));
        if e.is_dir {
            shown.push('/');
        }
        out.push(shown);
        true
    });
    let mut text = out.join("\n");
    if more > 0 {
        text.push_str(&format!("\n[{more} more entries not shown; narrow the pattern]"));
    }
    if text.is_empty() {
        text = format!("no entries match `{pattern}` under `{base_arg}`");
    }
    Ok(text)
}

/// Open a file of a walk for reading: not blocking on a FIFO swapped in, regular files only.
fn open_for_grep(dir: &Dir, name: &OsStr) -> Option<cap_std::fs::File> {
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    {
        use cap_std::fs::OpenOptionsExt;
        opts.custom_flags(libc::O_NONBLOCK);
    }
    let f = dir.open_with(name, &opts).ok()?;
    f.metadata().ok().filter(|m| m.is_file()).map(|_| f)
}

pub fn grep(scope: &Scope, args: &Value) -> Result<String, Failure> {
    let pattern = str_arg(args, "pattern").unwrap_or_default();
    let re = regex::Regex::new(pattern).map_err(|e| fail(&format!("bad regular expression: {e}")))?;
    let base_arg = str_arg(args, "path").unwrap_or(".");
    let at = scope.beneath(base_arg, false)?;
    let filter = match str_arg(args, "glob") {
        Some(g) => Some(
            globset::Glob::new(g)
                .map_err(|e| fail(&format!("bad glob `{g}`: {e}")))?
                .compile_matcher(),
        ),
        None => None,
    };
    let mut out = Vec::new();
    let mut truncated = false;
    let mut search = |dir: &Dir, name: &OsStr, full: &Path| -> bool {
        let shown = scope.show(full);
        if let Some(f) = &filter {
            if !f.is_match(&shown) && !f.is_match(name) {
                return true;
            }
        }
        let Some(file) = open_for_grep(dir, name) else {
            return true;
        };
        let Ok(Some(bytes)) = read_capped(file, MAX_GREP_FILE) else {
            return true;
        };
        if bytes.iter().take(8192).any(|b| *b == 0) {
            return true; // binary
        }
        let text = String::from_utf8_lossy(&bytes);
        for (n, line) in text.lines().enumerate() {
            if re.is_match(line) {
                if out.len() >= MAX_MATCHES {
                    truncated = true;
                    return false;
                }
                out.push(format!("{shown}:{}:{line}", n + 1));
            }
        }
        true
    };
    match at.dir.open_dir(&at.rel) {
        Ok(base) => {
            let mut ignores = Ignores::for_walk(scope, &at);
            walk(&base, &at.full, Path::new(""), &mut ignores, &mut |e| {
                !e.is_file || search(e.dir, e.name, &at.full.join(e.rel))
            });
        }
        Err(_) => {
            // A single file: search it through its folder's handle.
            let parent = match at.rel.parent() {
                Some(p) if !p.as_os_str().is_empty() => p,
                _ => Path::new("."),
            };
            let name = at.rel.file_name().unwrap_or_default();
            let dir = at.dir.open_dir(parent).map_err(|e| io_fail("search", base_arg, e))?;
            search(&dir, name, &at.full);
        }
    }
    let mut text = out.join("\n");
    if truncated {
        text.push_str(&format!("\n[stopped after {MAX_MATCHES} matches; narrow the search]"));
    }
    if text.is_empty() {
        text = format!("no matches for `{pattern}`");
    }
    Ok(text)
}
